//! Bounded scrollback for the output pane: one ring buffer per host (and one
//! for headers and notes), each dropping its oldest lines when full, so a
//! flood from one host neither grows memory without bound nor pushes the
//! other hosts' lines out. Every line carries a sequence number; the
//! interleaved view merges the rings by it, and a window is found by binary
//! search, so drawing costs the same with ten lines held or a million pushed.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::exec::Stream;

/// What a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineKind {
    /// Output of a host (the name is shared by every line of that host).
    Output { host: Arc<str>, stream: Stream },
    /// `── $ command · N hosts ──`.
    Header,
    /// A host's outcome: success or not.
    Outcome { host: Arc<str>, ok: bool },
    /// A note from merlya itself.
    Note,
}

impl LineKind {
    /// The host a line belongs to, if any.
    pub fn host(&self) -> Option<&str> {
        match self {
            LineKind::Output { host, .. } | LineKind::Outcome { host, .. } => Some(host.as_ref()),
            _ => None,
        }
    }
}

/// One line in the pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputLine {
    /// What the line is.
    pub kind: LineKind,
    /// Its text.
    pub text: String,
    /// Order of arrival across all hosts.
    pub seq: u64,
    /// Byte ranges of `text` that changed since the previous round of a watch (drawn highlighted).
    pub changed: Option<Box<[std::ops::Range<usize>]>>,
}

#[derive(Debug, Clone, Default)]
struct Ring {
    lines: VecDeque<OutputLine>,
    /// A folded host's lines leave the interleaved view (one line says how many wait there).
    folded: bool,
}

impl Ring {
    /// Lines with a sequence number below `seq`.
    fn below(&self, seq: u64) -> usize {
        self.lines.partition_point(|l| l.seq < seq)
    }
}

/// The scrollback: rings by host plus the shared one (index 0).
#[derive(Debug, Clone)]
pub struct OutputBuffer {
    rings: Vec<Ring>,
    /// Host names in order of first output (the ring of `hosts[i]` is `rings[i + 1]`).
    hosts: Vec<Arc<str>>,
    index: HashMap<Arc<str>, usize>,
    capacity: usize,
    next_seq: u64,
    dropped: u64,
}

impl OutputBuffer {
    /// Keeps at most `capacity` lines (at least 1) per host.
    pub fn new(capacity: usize) -> Self {
        Self {
            rings: vec![Ring::default()],
            hosts: Vec::new(),
            index: HashMap::new(),
            capacity: capacity.max(1),
            next_seq: 0,
            dropped: 0,
        }
    }

    /// Appends to the line's host ring, dropping that host's oldest line when full.
    pub fn push(&mut self, kind: LineKind, text: impl Into<String>) {
        self.push_changed(kind, text, None);
    }

    /// Appends a line with the ranges that changed since a watch's previous round.
    pub fn push_changed(
        &mut self,
        mut kind: LineKind,
        text: impl Into<String>,
        changed: Option<Box<[std::ops::Range<usize>]>>,
    ) {
        let ring = match &mut kind {
            LineKind::Header | LineKind::Note => 0,
            LineKind::Output { host, .. } | LineKind::Outcome { host, .. } => {
                let ring = match self.index.get(host.as_ref()) {
                    Some(i) => *i,
                    None => {
                        self.rings.push(Ring::default());
                        self.hosts.push(host.clone());
                        self.index.insert(host.clone(), self.rings.len() - 1);
                        self.rings.len() - 1
                    }
                };
                // Every line of a host points at one copy of its name.
                *host = self.hosts[ring - 1].clone();
                ring
            }
        };
        let lines = &mut self.rings[ring].lines;
        if lines.len() == self.capacity {
            lines.pop_front();
            self.dropped += 1;
        } else if lines.len() == lines.capacity() {
            // Grow by doubling but never past the limit, so a full ring wastes no slots.
            lines.reserve_exact(lines.len().max(64).min(self.capacity - lines.len()));
        }
        lines.push_back(OutputLine { kind, text: text.into(), seq: self.next_seq, changed });
        self.next_seq += 1;
    }

    /// The rings in a view: all but the folded hosts', or the shared one and one host's.
    fn rings(&self, only: Option<&str>) -> Vec<&Ring> {
        match only {
            None => self.rings.iter().filter(|r| !r.folded).collect(),
            Some(host) => {
                let mut picked = vec![&self.rings[0]];
                picked.extend(self.index.get(host).map(|i| &self.rings[*i]));
                picked
            }
        }
    }

    /// Lines held in a view.
    pub fn count(&self, only: Option<&str>) -> usize {
        self.rings(only).iter().map(|r| r.lines.len()).sum()
    }

    /// Lines held.
    pub fn len(&self) -> usize {
        self.count(None)
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Lines dropped because a ring was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The sequence number of the line at `rank` (0 = oldest) of a view.
    fn seq_at(rings: &[&Ring], rank: usize, next_seq: u64) -> u64 {
        let oldest = rings.iter().filter_map(|r| r.lines.front()).map(|l| l.seq).min().unwrap_or(0);
        let (mut low, mut high) = (oldest, next_seq);
        // The smallest seq with more than `rank` lines at or below it.
        while low < high {
            let mid = low + (high - low) / 2;
            let upto: usize = rings.iter().map(|r| r.below(mid + 1)).sum();
            if upto > rank { high = mid } else { low = mid + 1 }
        }
        low
    }

    /// Up to `count` lines of a view starting at sequence number `from`, in
    /// order: a k-way merge of the rings with a heap keyed by sequence number.
    fn merge_from<'a>(rings: &[&'a Ring], from: u64, count: usize) -> Vec<&'a OutputLine> {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let held: usize = rings.iter().map(|r| r.lines.len()).sum();
        let mut heap: BinaryHeap<Reverse<(u64, usize, usize)>> = rings
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let at = r.below(from);
                r.lines.get(at).map(|l| Reverse((l.seq, i, at)))
            })
            .collect();
        let mut out = Vec::with_capacity(count.min(held));
        while out.len() < count {
            let Some(Reverse((_, ring, at))) = heap.pop() else { break };
            out.push(&rings[ring].lines[at]);
            if let Some(next) = rings[ring].lines.get(at + 1) {
                heap.push(Reverse((next.seq, ring, at + 1)));
            }
        }
        out
    }

    /// The `count` lines of a view ending `from_bottom` lines above its newest.
    pub fn window(&self, count: usize, from_bottom: usize, only: Option<&str>) -> Vec<&OutputLine> {
        let rings = self.rings(only);
        let total: usize = rings.iter().map(|r| r.lines.len()).sum();
        let end = total.saturating_sub(from_bottom);
        let start = end.saturating_sub(count);
        if start == end {
            return Vec::new();
        }
        let from = Self::seq_at(&rings, start, self.next_seq);
        Self::merge_from(&rings, from, end - start)
    }

    /// Every line of a view, oldest first.
    pub fn lines(&self, only: Option<&str>) -> Vec<&OutputLine> {
        Self::merge_from(&self.rings(only), 0, usize::MAX)
    }

    /// The scroll position (lines from the newest) of the next line matching
    /// `needle` (case-insensitive) beyond `from_bottom`: older when `older`, else newer.
    pub fn find(&self, needle: &str, from_bottom: usize, older: bool, only: Option<&str>) -> Option<usize> {
        let lines = self.lines(only);
        if needle.is_empty() || lines.is_empty() {
            return None;
        }
        let needle = needle.to_lowercase();
        let last = lines.len() - 1;
        let current = last.saturating_sub(from_bottom);
        let hit = |i: &usize| lines[*i].text.to_lowercase().contains(&needle);
        let found = if older { (0..current).rev().find(hit) } else { (current + 1..=last).find(hit) };
        found.map(|i| last - i)
    }

    /// Folds or unfolds `host`'s lines in the interleaved view; false when it has no output.
    pub fn set_folded(&mut self, host: &str, folded: bool) -> bool {
        let Some(i) = self.index.get(host) else { return false };
        self.rings[*i].folded = folded;
        true
    }

    /// Folds or unfolds every host.
    pub fn set_all_folded(&mut self, folded: bool) {
        for ring in self.rings.iter_mut().skip(1) {
            ring.folded = folded;
        }
    }

    /// Whether `host`'s lines are folded.
    pub fn is_folded(&self, host: &str) -> bool {
        self.index.get(host).is_some_and(|i| self.rings[*i].folded)
    }

    /// The folded hosts with the lines each holds, in order of first output.
    pub fn folded(&self) -> Vec<(&str, usize)> {
        self.hosts
            .iter()
            .zip(self.rings.iter().skip(1))
            .filter(|(_, r)| r.folded)
            .map(|(h, r)| (h.as_ref(), r.lines.len()))
            .collect()
    }

    /// Hosts that produced output, in order of first appearance.
    pub fn hosts(&self) -> Vec<&str> {
        self.hosts.iter().map(|h| h.as_ref()).collect()
    }

    /// Removes everything.
    pub fn clear(&mut self) {
        let capacity = self.capacity;
        let dropped = self.dropped;
        *self = Self::new(capacity);
        self.dropped = dropped;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(host: &str) -> LineKind {
        LineKind::Output { host: host.into(), stream: Stream::Stdout }
    }

    fn texts(lines: Vec<&OutputLine>) -> Vec<&str> {
        lines.into_iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn each_host_keeps_its_own_bounded_ring() {
        let mut b = OutputBuffer::new(3);
        b.push(LineKind::Header, "h");
        b.push(out("a"), "a0");
        for i in 0..10 {
            b.push(out("b"), format!("b{i}"));
        }
        b.push(out("a"), "a1");
        assert_eq!(b.len(), 1 + 2 + 3, "the flood of b did not push out a's lines");
        assert_eq!(b.dropped(), 7);
        assert_eq!(texts(b.window(10, 0, None)), ["h", "a0", "b7", "b8", "b9", "a1"]);
        assert_eq!(texts(b.window(2, 1, None)), ["b8", "b9"]);
        assert_eq!(texts(b.window(10, 0, Some("a"))), ["h", "a0", "a1"]);
        assert_eq!(b.hosts(), ["a", "b"]);
        assert_eq!(b.find("b8", 0, true, None), Some(2));
        assert_eq!(b.find("a0", 3, false, None), None, "nothing newer matches");
        assert_eq!(b.find("a1", 4, false, None), Some(0));
        assert_eq!(b.find("zz", 0, true, None), None);
    }

    #[test]
    fn windows_are_exact_across_many_interleaved_hosts() {
        let mut b = OutputBuffer::new(1000);
        let mut expected = Vec::new();
        for i in 0..600 {
            let host = format!("h{}", i % 7);
            b.push(out(&host), i.to_string());
            expected.push(i.to_string());
        }
        for (count, from_bottom) in [(10, 0), (25, 17), (600, 0), (5, 598), (3, 700)] {
            let end = 600usize.saturating_sub(from_bottom);
            let start = end.saturating_sub(count);
            assert_eq!(
                texts(b.window(count, from_bottom, None)),
                expected[start..end].to_vec(),
                "{count} {from_bottom}"
            );
        }
        b.clear();
        assert!(b.is_empty());
        assert!(b.window(5, 0, None).is_empty());
    }

    #[test]
    fn folded_hosts_leave_the_interleaved_view() {
        let mut b = OutputBuffer::new(10);
        b.push(LineKind::Header, "h");
        b.push(out("a"), "a0");
        b.push(out("b"), "b0");
        b.push(out("a"), "a1");
        assert!(b.set_folded("a", true));
        assert!(!b.set_folded("nobody", true), "a host without output cannot be folded");
        assert_eq!(texts(b.window(10, 0, None)), ["h", "b0"]);
        assert_eq!(b.count(None), 2);
        assert_eq!(b.folded(), [("a", 2)]);
        assert_eq!(texts(b.window(10, 0, Some("a"))), ["h", "a0", "a1"], "picking the host shows it anyway");
        assert_eq!(b.find("a1", 0, true, None), None, "a folded line is not a match");
        b.set_all_folded(true);
        assert_eq!(texts(b.window(10, 0, None)), ["h"]);
        b.set_all_folded(false);
        assert!(!b.is_folded("a"));
        assert_eq!(b.count(None), 4);
        b.clear();
        assert!(b.window(5, 0, None).is_empty());
    }
}
