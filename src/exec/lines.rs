//! Splitting byte chunks into lines for live display, and capping what is kept.

use super::{ExecEvent, OUTPUT_CAP, Stream};
use crate::secrets::reference::mask_values;
use tokio::sync::mpsc::UnboundedSender;

/// Forwards events with secret values replaced by `***`.
pub struct MaskingSender {
    inner: UnboundedSender<ExecEvent>,
    mask: Vec<String>,
}

impl MaskingSender {
    /// Wraps `inner`, masking `mask`.
    pub fn new(inner: UnboundedSender<ExecEvent>, mask: Vec<String>) -> Self {
        Self { inner, mask }
    }

    /// Sends, masking output lines (a closed receiver is ignored).
    pub fn send(&self, event: ExecEvent) {
        let event = match event {
            ExecEvent::Line { host, stream, line } if !self.mask.is_empty() => {
                ExecEvent::Line { host, stream, line: mask_values(&line, &self.mask) }
            }
            other => other,
        };
        let _ = self.inner.send(event);
    }
}

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
    pub fn push(&mut self, chunk: &[u8], events: &MaskingSender) {
        self.partial.extend_from_slice(chunk);
        while let Some(pos) = self.partial.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=pos).collect();
            self.emit(&line[..line.len() - 1], events);
        }
    }

    /// Emits a final line without newline, if any.
    pub fn finish(&mut self, events: &MaskingSender) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.emit(&rest, events);
        }
    }

    fn emit(&mut self, raw: &[u8], events: &MaskingSender) {
        let line = String::from_utf8_lossy(raw).trim_end_matches('\r').to_string();
        if self.collected.len() < OUTPUT_CAP {
            self.collected.push_str(&line);
            self.collected.push('\n');
        }
        events.send(ExecEvent::Line { host: self.host.clone(), stream: self.stream, line });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_flushes_tail() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let tx = MaskingSender::new(tx, vec!["secret".into()]);
        let mut s = LineSplitter::new("h", Stream::Stdout);
        s.push(b"one secret\ntw", &tx);
        s.push(b"o\r\nthree", &tx);
        s.finish(&tx);
        let mut lines = Vec::new();
        while let Ok(ExecEvent::Line { line, .. }) = rx.try_recv() {
            lines.push(line);
        }
        assert_eq!(lines, ["one ***", "two", "three"]);
        assert_eq!(s.collected, "one secret\ntwo\nthree\n", "the result is masked once, by the executor");
    }
}
