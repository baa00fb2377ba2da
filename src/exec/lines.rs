//! Splitting byte chunks into lines for live display, capping what is kept,
//! and the bounded channel that carries them: when the reader of events is
//! slower than a host prints, sending waits, the SSH read loop stops reading,
//! and the channel window makes the host wait — memory stays bounded.

use super::{ExecEvent, OUTPUT_CAP, Stream};
use crate::secrets::reference::mask_values;
use tokio::sync::mpsc;

/// Where live events go; bounded, so a slow reader slows the hosts instead of growing memory.
pub type EventSender = mpsc::Sender<ExecEvent>;

/// Events waiting for their reader before senders wait.
pub const EVENT_BUFFER: usize = 1024;

/// Longest line kept whole; a longer run of bytes without a newline is split.
pub const MAX_LINE: usize = 64 * 1024;

/// A bounded channel for live events.
pub fn event_channel() -> (EventSender, mpsc::Receiver<ExecEvent>) {
    mpsc::channel(EVENT_BUFFER)
}

/// A sender whose events nobody reads (they are drained and dropped), for
/// callers that only want the final result.
pub fn no_events() -> EventSender {
    let (tx, mut rx) = event_channel();
    tokio::spawn(async move { while rx.recv().await.is_some() {} });
    tx
}

/// Forwards events with secret values replaced by `***`.
pub struct MaskingSender {
    inner: EventSender,
    mask: Vec<String>,
}

impl MaskingSender {
    /// Wraps `inner`, masking `mask`.
    pub fn new(inner: EventSender, mask: Vec<String>) -> Self {
        Self { inner, mask }
    }

    /// Sends, masking output lines; waits while the reader is behind (a closed receiver is ignored).
    pub async fn send(&self, event: ExecEvent) {
        let event = match event {
            ExecEvent::Line { host, stream, line } if !self.mask.is_empty() => {
                ExecEvent::Line { host, stream, line: mask_values(&line, &self.mask) }
            }
            other => other,
        };
        let _ = self.inner.send(event).await;
    }
}

/// Accumulates one stream: emits complete lines as events, keeps up to the cap.
pub struct LineSplitter {
    host: String,
    stream: Stream,
    partial: Vec<u8>,
    /// Everything kept for the final result.
    pub collected: String,
    /// Bytes past the cap that the result does not keep (the live events carried them).
    pub cut: u64,
    /// Where those bytes are written, if anywhere.
    spill: Option<super::spill::Spill>,
}

impl LineSplitter {
    /// A splitter for `stream` of `host`.
    pub fn new(host: &str, stream: Stream) -> Self {
        Self { host: host.to_string(), stream, partial: Vec::new(), collected: String::new(), cut: 0, spill: None }
    }

    /// The same splitter, writing what the result does not keep to `spill`.
    pub fn spilling(mut self, spill: Option<super::spill::Spill>) -> Self {
        self.spill = spill;
        self
    }

    /// Bytes that were kept nowhere (past the spill's limits).
    pub fn dropped(&self) -> u64 {
        self.spill.as_ref().map_or(0, super::spill::Spill::dropped)
    }

    /// The spill file, when output went past the cap.
    pub fn spilled(&self) -> Option<String> {
        self.spill.as_ref().and_then(|s| s.written()).map(|p| p.display().to_string())
    }

    /// Feeds a chunk; complete lines go to `events` (in linear time, whatever the chunk).
    pub async fn push(&mut self, chunk: &[u8], events: &MaskingSender) {
        let mut start = 0;
        for (i, byte) in chunk.iter().enumerate() {
            if *byte != b'\n' {
                continue;
            }
            if self.partial.is_empty() {
                self.emit(&chunk[start..i], events).await;
            } else {
                self.partial.extend_from_slice(&chunk[start..i]);
                let line = std::mem::take(&mut self.partial);
                self.emit(&line, events).await;
            }
            start = i + 1;
        }
        self.partial.extend_from_slice(&chunk[start..]);
        while self.partial.len() >= MAX_LINE {
            let rest = self.partial.split_off(MAX_LINE);
            let line = std::mem::replace(&mut self.partial, rest);
            self.emit(&line, events).await;
        }
    }

    /// Emits a final line without newline, if any, and flushes the spill file.
    pub async fn finish(&mut self, events: &MaskingSender) {
        if !self.partial.is_empty() {
            let rest = std::mem::take(&mut self.partial);
            self.emit(&rest, events).await;
        }
        if let Some(spill) = self.spill.as_mut() {
            spill.flush().await;
        }
    }

    async fn emit(&mut self, raw: &[u8], events: &MaskingSender) {
        let line = String::from_utf8_lossy(raw).trim_end_matches('\r').to_string();
        if self.collected.len() < OUTPUT_CAP {
            self.collected.push_str(&line);
            self.collected.push('\n');
        } else {
            self.cut += line.len() as u64 + 1;
            if let Some(spill) = self.spill.as_mut() {
                spill.line(&line).await;
            }
        }
        events.send(ExecEvent::Line { host: self.host.clone(), stream: self.stream, line }).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn splits_across_chunks_and_flushes_tail() {
        let (tx, mut rx) = event_channel();
        let tx = MaskingSender::new(tx, vec!["secret".into()]);
        let mut s = LineSplitter::new("h", Stream::Stdout);
        s.push(b"one secret\ntw", &tx).await;
        s.push(b"o\r\nthree", &tx).await;
        s.finish(&tx).await;
        let mut lines = Vec::new();
        while let Ok(ExecEvent::Line { line, .. }) = rx.try_recv() {
            lines.push(line);
        }
        assert_eq!(lines, ["one ***", "two", "three"]);
        assert_eq!(s.collected, "one secret\ntwo\nthree\n", "the result is masked once, by the executor");
    }

    #[tokio::test]
    async fn a_slow_reader_makes_the_writer_wait_and_the_cut_is_counted() {
        let (tx, mut rx) = event_channel();
        let tx = MaskingSender::new(tx, Vec::new());
        let mut s = LineSplitter::new("h", Stream::Stdout);
        let line = vec![b'x'; 1023];
        let chunk: Vec<u8> = line.iter().copied().chain([b'\n']).cycle().take(1024 * (EVENT_BUFFER + 2)).collect();
        // Nobody reads: the writer stops once the channel is full.
        let blocked = tokio::time::timeout(std::time::Duration::from_millis(200), s.push(&chunk, &tx)).await;
        assert!(blocked.is_err(), "the sender waits for the reader");
        let mut s = LineSplitter::new("h", Stream::Stdout);
        let reader = tokio::spawn(async move {
            let mut n = 0;
            while rx.recv().await.is_some() {
                n += 1;
            }
            n
        });
        let big: Vec<u8> = line.iter().copied().chain([b'\n']).cycle().take(2 * OUTPUT_CAP).collect();
        s.push(&big, &tx).await;
        // One long run without a newline is split, never held whole.
        s.push(&vec![b'y'; 3 * MAX_LINE], &tx).await;
        assert!(s.partial.len() < MAX_LINE);
        drop(tx);
        assert!(reader.await.unwrap() >= 2 * OUTPUT_CAP / 1024, "every line was delivered live");
        assert!(s.collected.len() <= OUTPUT_CAP + 1024);
        assert!(s.cut >= (OUTPUT_CAP - 1024) as u64, "what the result does not keep is counted: {}", s.cut);
    }
}
