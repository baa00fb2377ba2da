//! Bounded scrollback for the output pane: a ring buffer that drops the
//! oldest lines, so a flood of output never grows memory without bound.

use std::collections::VecDeque;

use crate::exec::Stream;

/// What a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Output of a host.
    Output { host: String, stream: Stream },
    /// `── $ command · N hosts ──`.
    Header,
    /// Per-host outcome: success or not.
    Outcome { ok: bool },
    /// A note from merlya itself.
    Note,
}

/// One line in the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    /// What the line is.
    pub kind: LineKind,
    /// Its text.
    pub text: String,
}

/// The ring buffer.
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    lines: VecDeque<OutputLine>,
    capacity: usize,
    dropped: u64,
}

impl OutputBuffer {
    /// Keeps at most `capacity` lines (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self { lines: VecDeque::with_capacity(capacity.min(4096)), capacity: capacity.max(1), dropped: 0 }
    }

    /// Appends, dropping the oldest line when full.
    pub fn push(&mut self, kind: LineKind, text: impl Into<String>) {
        if self.lines.len() == self.capacity {
            self.lines.pop_front();
            self.dropped += 1;
        }
        self.lines.push_back(OutputLine { kind, text: text.into() });
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Lines dropped because the buffer was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The `count` lines ending `from_bottom` lines above the newest.
    pub fn window(&self, count: usize, from_bottom: usize) -> impl Iterator<Item = &OutputLine> {
        let end = self.lines.len().saturating_sub(from_bottom);
        let start = end.saturating_sub(count);
        self.lines.range(start..end)
    }

    /// The scroll position (lines from the newest) of the next line matching
    /// `needle` (case-insensitive) beyond `from_bottom`: older when `older`, else newer.
    pub fn find(&self, needle: &str, from_bottom: usize, older: bool) -> Option<usize> {
        if needle.is_empty() || self.lines.is_empty() {
            return None;
        }
        let needle = needle.to_lowercase();
        let last = self.lines.len() - 1;
        let current = last.saturating_sub(from_bottom);
        let hit = |i: &usize| self.lines[*i].text.to_lowercase().contains(&needle);
        let found = if older { (0..current).rev().find(hit) } else { (current + 1..=last).find(hit) };
        found.map(|i| last - i)
    }

    /// Every line, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &OutputLine> {
        self.lines.iter()
    }

    /// Hosts that produced output, in order of first appearance.
    pub fn hosts(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for line in &self.lines {
            if let LineKind::Output { host, .. } = &line.kind
                && !out.contains(&host.as_str())
            {
                out.push(host);
            }
        }
        out
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        self.lines.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drops_oldest_when_full_and_windows_from_the_bottom() {
        let mut b = OutputBuffer::new(3);
        for i in 0..5 {
            b.push(LineKind::Note, i.to_string());
        }
        assert_eq!(b.len(), 3);
        assert_eq!(b.dropped(), 2);
        let all: Vec<&str> = b.window(10, 0).map(|l| l.text.as_str()).collect();
        assert_eq!(all, ["2", "3", "4"]);
        let scrolled: Vec<&str> = b.window(2, 1).map(|l| l.text.as_str()).collect();
        assert_eq!(scrolled, ["2", "3"]);
        assert_eq!(b.find("2", 0, true), Some(2));
        assert_eq!(b.find("4", 2, false), Some(0));
        assert_eq!(b.find("9", 0, true), None);
    }
}
