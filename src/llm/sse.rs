//! Server-sent events: splitting a byte stream into `event:`/`data:` records.

/// Reads `response` as an event stream, handing each event to `handle`
/// until it returns `false` or the stream ends. A stream that sends nothing
/// for `idle` has stalled: that is said, with how long and after how many
/// events (an answer that keeps streaming is never cut, however long).
pub async fn for_each_event(
    provider: &str,
    response: reqwest::Response,
    idle: std::time::Duration,
    mut handle: impl FnMut(SseEvent) -> Result<bool, super::LlmError>,
) -> Result<(), super::LlmError> {
    use futures::StreamExt;
    let mut parser = SseParser::default();
    let mut stream = response.bytes_stream();
    let mut events = 0usize;
    let stalled = |events| super::LlmError::Stalled { provider: provider.to_string(), seconds: idle.as_secs(), events };
    loop {
        let chunk = match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => return Err(stalled(events)),
            Ok(None) => return Ok(()),
            Ok(Some(Err(e))) if e.is_timeout() => return Err(stalled(events)),
            Ok(Some(chunk)) => chunk.map_err(|e| super::client::transport(provider, e))?,
        };
        for event in parser.push(&chunk) {
            events += 1;
            if !handle(event)? {
                return Ok(());
            }
        }
    }
}

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
}

/// Incremental parser: feed chunks, take complete events.
#[derive(Default)]
pub struct SseParser {
    buffer: String,
}

impl SseParser {
    /// Adds bytes; returns the events completed by them.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.push_str(&String::from_utf8_lossy(chunk));
        let mut events = Vec::new();
        loop {
            let normalized = self.buffer.replace("\r\n", "\n");
            let Some(end) = normalized.find("\n\n") else {
                self.buffer = normalized;
                break;
            };
            let block = normalized[..end].to_string();
            self.buffer = normalized[end + 2..].to_string();
            let mut event = SseEvent::default();
            let mut data_lines = Vec::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("data:") {
                    data_lines.push(v.strip_prefix(' ').unwrap_or(v).to_string());
                } else if let Some(v) = line.strip_prefix("event:") {
                    event.event = Some(v.trim().to_string());
                }
            }
            if data_lines.is_empty() && event.event.is_none() {
                continue;
            }
            event.data = data_lines.join("\n");
            events.push(event);
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"event: ping\ndata: {\"a\"").is_empty());
        let events = p.push(b":1}\n\ndata: [DONE]\r\n\r\n: comment\n\n");
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].event.as_deref(), Some("ping"));
        assert_eq!(events[0].data, "{\"a\":1}");
        assert_eq!(events[1].data, "[DONE]");
    }
}
