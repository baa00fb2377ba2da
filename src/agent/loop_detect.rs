//! Loop detection over the last 10 tool calls. Three shapes: the same call
//! three times or more, a run of three identical calls in a row, and an
//! A-B-A-B oscillation. The first detection warns the model; the second
//! stops the run.

use std::collections::VecDeque;

use crate::llm::ToolCall;

/// The shape of a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// The same call three or more times among the last ten.
    Repeated,
    /// The last three calls are identical.
    IdenticalRun,
    /// A, B, A, B.
    Oscillation,
}

impl LoopKind {
    /// For messages.
    pub fn describe(self) -> &'static str {
        match self {
            LoopKind::Repeated => "the same tool call three times",
            LoopKind::IdenticalRun => "three identical tool calls in a row",
            LoopKind::Oscillation => "alternating between the same two tool calls",
        }
    }
}

/// What to do after a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopVerdict {
    /// Nothing unusual.
    Fine,
    /// First detection: tell the model to change approach.
    Warn(LoopKind),
    /// Second detection: stop the run.
    Stop(LoopKind),
}

/// Remembers recent calls.
#[derive(Debug, Default)]
pub struct LoopDetector {
    recent: VecDeque<String>,
    warned: bool,
}

const WINDOW: usize = 10;

fn signature(call: &ToolCall) -> String {
    // Normalise JSON so whitespace and key order do not hide a repeat.
    let args = serde_json::from_str::<serde_json::Value>(&call.arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| call.arguments.trim().to_string());
    format!("{}:{args}", call.name)
}

impl LoopDetector {
    /// Records `call` and judges the recent history.
    pub fn observe(&mut self, call: &ToolCall) -> LoopVerdict {
        self.recent.push_back(signature(call));
        if self.recent.len() > WINDOW {
            self.recent.pop_front();
        }
        let Some(kind) = self.detect() else { return LoopVerdict::Fine };
        // Start afresh: the next detection needs new evidence.
        self.recent.clear();
        if self.warned {
            LoopVerdict::Stop(kind)
        } else {
            self.warned = true;
            LoopVerdict::Warn(kind)
        }
    }

    fn detect(&self) -> Option<LoopKind> {
        let n = self.recent.len();
        let last = self.recent.back()?;
        if n >= 3 && self.recent.iter().skip(n - 3).all(|s| s == last) {
            return Some(LoopKind::IdenticalRun);
        }
        if n >= 4 {
            let (a, b, c, d) = (&self.recent[n - 4], &self.recent[n - 3], &self.recent[n - 2], &self.recent[n - 1]);
            if a == c && b == d && a != b {
                return Some(LoopKind::Oscillation);
            }
        }
        if self.recent.iter().filter(|s| *s == last).count() >= 3 {
            return Some(LoopKind::Repeated);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall { id: "x".into(), name: name.into(), arguments: args.into() }
    }

    fn feed(d: &mut LoopDetector, calls: &[(&str, &str)]) -> Vec<LoopVerdict> {
        calls.iter().map(|(n, a)| d.observe(&call(n, a))).collect()
    }

    #[test]
    fn identical_run_warns_then_stops() {
        let mut d = LoopDetector::default();
        let v = feed(&mut d, &[("run", r#"{"c":"df"}"#), ("run", r#"{ "c" : "df" }"#), ("run", r#"{"c":"df"}"#)]);
        assert_eq!(v[2], LoopVerdict::Warn(LoopKind::IdenticalRun));
        let v = feed(&mut d, &[("run", "{}"), ("run", "{}"), ("run", "{}")]);
        assert_eq!(v[2], LoopVerdict::Stop(LoopKind::IdenticalRun));
    }

    #[test]
    fn oscillation_and_scattered_repeats() {
        let mut d = LoopDetector::default();
        let v = feed(&mut d, &[("a", "{}"), ("b", "{}"), ("a", "{}"), ("b", "{}")]);
        assert_eq!(v[3], LoopVerdict::Warn(LoopKind::Oscillation));
        let mut d = LoopDetector::default();
        let v = feed(&mut d, &[("a", "{}"), ("b", "{}"), ("a", "{}"), ("c", "{}"), ("a", "{}")]);
        assert_eq!(v[4], LoopVerdict::Warn(LoopKind::Repeated));
        assert!(v[..4].iter().all(|x| *x == LoopVerdict::Fine));
    }
}
