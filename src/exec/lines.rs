//! Splitting byte chunks into lines for live display, and capping what is kept.

use super::{ExecEvent, OUTPUT_CAP, Stream};
use tokio::sync::mpsc::UnboundedSender;

/// Accumulates one stream: emits complete lines as events, keeps up to the cap.
pub struct LineSplitter {
    host: String,
    stream: Stream,
    partial: Vec<u8>,
    /// Everything kept for the final result.
    pub collected: String,
}

impl LineSplitter {
    /// A splitter for `stream` of `host`.
    pub fn new(host: &str, stream: Stream) -> Self {
        Self { host: host.to_string(), stream, partial: Vec::new(), collected: String::new() }
    }

    /// Feeds a chunk; complete lines go to `events`.
    pub fn push(&mut self, chunk: &[u8], events: &UnboundedSender<ExecEvent>) {
        self.partial.extend_from_slice(chunk);
        while let Some(pos) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=pos).collect();
            self.emit(&line[..line.len() - 1], events);
        }
    }

    /// Emits a final line without newline, if any.
    pub fn finish(&mut self, events: &UnboundedSender<ExecEvent>) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.emit(&rest, events);
        }
    }

    fn emit(&mut self, raw: &[u8], events: &UnboundedSender<ExecEvent>) {
        let line = String::from_utf8_lossy(raw).trim_end_matches('\r').to_string();
        if self.collected.len() < OUTPUT_CAP {
            self.collected.push_str(&line);
            self.collected.push('\n');
        }
        let _ = events.send(ExecEvent::Line { host: self.host.clone(), stream: self.stream, line });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_flushes_tail() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut s = LineSplitter::new("h", Stream::Stdout);
        s.push(b"one\ntw", &tx);
        s.push(b"o\r\nthree", &tx);
        s.finish(&tx);
        let mut lines = Vec::new();
        while let Ok(ExecEvent::Line { line, .. }) = rx.try_recv() {
            lines.push(line);
        }
        assert_eq!(lines, ["one", "two", "three"]);
        assert_eq!(s.collected, "one\ntwo\nthree\n");
    }
}
