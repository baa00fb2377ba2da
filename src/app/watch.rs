//! A watch (`:watch N -- CMD`): a proven read-only command run again every N
//! seconds on the same hosts, each round a run of its own through the gate,
//! with what changed since the previous round marked (as `watch -d` does).
//! This module is the pure part: the state the model keeps and the marks; the
//! timer is a worker ([`super::run_worker::start_watch`]).

use std::collections::HashMap;
use std::ops::Range;

use crate::inventory::Host;

/// Lines of one host kept from a round to compare the next one with.
const KEPT_LINES: usize = 2000;
/// Bytes of one host's lines kept from a round (a host printing 64 KiB lines keeps fewer of them).
const KEPT_BYTES: usize = 256 * 1024;
/// Lines longer than this are compared whole (changed or not): a character diff of two long lines
/// runs on the loop thread, and a host chooses what it prints.
const COMPARED_LINE: usize = 1024;

/// The watch in progress (one at a time: a new one replaces it).
#[derive(Debug, Clone)]
pub struct Watch {
    /// Its number: ticks of an older watch are ignored.
    pub id: u64,
    /// Seconds between two rounds.
    pub every: u64,
    /// The command as typed.
    pub command: String,
    /// The hosts it runs on (fixed when it starts).
    pub hosts: Vec<Host>,
    /// Rounds started.
    pub rounds: u64,
    /// The run of the round in flight or last started.
    pub run: Option<u64>,
    /// Each host's lines in the last finished round.
    previous: HashMap<String, Vec<String>>,
    /// Each host's lines so far in the round in flight.
    current: HashMap<String, Vec<String>>,
    /// Bytes kept of each host's lines in the round in flight.
    current_bytes: HashMap<String, usize>,
}

impl Watch {
    /// A watch of `command` on `hosts` every `every` seconds, before its first round.
    pub fn new(id: u64, every: u64, command: String, hosts: Vec<Host>) -> Self {
        Self {
            id,
            every,
            command,
            hosts,
            rounds: 0,
            run: None,
            previous: HashMap::new(),
            current: HashMap::new(),
            current_bytes: HashMap::new(),
        }
    }

    /// Round `run` starts.
    pub fn start_round(&mut self, run: u64) {
        self.rounds += 1;
        self.run = Some(run);
        self.current.clear();
        self.current_bytes.clear();
    }

    /// A line of `host` in the round in flight, with what changed since the same line of the
    /// previous round (nothing in the first round; the whole line when it is new).
    pub fn line(&mut self, host: &str, text: &str) -> Option<Box<[Range<usize>]>> {
        let lines = self.current.entry(host.to_string()).or_default();
        let bytes = self.current_bytes.entry(host.to_string()).or_default();
        let at = lines.len();
        if at < KEPT_LINES && *bytes + text.len() <= KEPT_BYTES {
            lines.push(text.to_string());
            *bytes += text.len();
        }
        if self.rounds < 2 {
            return None;
        }
        let before = self.previous.get(host).and_then(|l| l.get(at));
        changed(before.map(String::as_str), text)
    }

    /// The round ended: its lines are what the next one is compared with.
    pub fn end_round(&mut self) {
        for (host, lines) in self.current.drain() {
            self.previous.insert(host, lines);
        }
    }
}

/// The byte ranges of `new` that differ from `old` (the whole line when there was none).
pub fn changed(old: Option<&str>, new: &str) -> Option<Box<[Range<usize>]>> {
    let Some(old) = old else {
        let whole = 0..new.len();
        return (!new.is_empty()).then(|| std::iter::once(whole).collect());
    };
    if old == new {
        return None;
    }
    if old.len() > COMPARED_LINE || new.len() > COMPARED_LINE {
        return (!new.is_empty()).then(|| std::iter::once(0..new.len()).collect());
    }
    let diff = similar::TextDiff::configure()
        .algorithm(similar::Algorithm::Myers)
        .timeout(std::time::Duration::from_millis(5))
        .diff_chars(old, new);
    let mut ranges: Vec<Range<usize>> = Vec::new();
    let mut at = 0;
    for change in diff.iter_all_changes() {
        let len = change.value().len();
        match change.tag() {
            similar::ChangeTag::Delete => continue,
            similar::ChangeTag::Insert => match ranges.last_mut() {
                Some(last) if last.end == at => last.end = at + len,
                _ => ranges.push(at..at + len),
            },
            similar::ChangeTag::Equal => {}
        }
        at += len;
    }
    // A line shorter than before changed too, though nothing in it is new: its end shows it.
    if ranges.is_empty() && !new.is_empty() {
        let end = new.char_indices().last().map_or(0, |(i, _)| i);
        ranges.push(end..new.len());
    }
    (!ranges.is_empty()).then(|| ranges.into_boxed_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(old: Option<&str>, new: &str) -> Vec<String> {
        changed(old, new).unwrap_or_default().iter().map(|r| new[r.clone()].to_string()).collect()
    }

    #[test]
    fn marks_what_changed_in_a_line() {
        assert_eq!(marked(Some("/ 41% used"), "/ 47% used"), ["7"]);
        assert_eq!(marked(Some("a b c"), "a b c"), Vec::<String>::new());
        assert_eq!(marked(None, "new line"), ["new line"]);
        assert_eq!(marked(Some("héllo wörld"), "héllo wärld"), ["ä"]);
        assert_eq!(marked(Some("abcdef"), "abc"), ["c"], "a shorter line shows its end");
        // A host's long lines are marked whole, never diffed character by character on the loop.
        let (old, new) = ("x".repeat(64 * 1024), format!("{}y", "x".repeat(64 * 1024 - 1)));
        assert_eq!(marked(Some(&old), &new), [new.as_str()], "the whole line");
    }

    #[test]
    fn rounds_compare_line_by_line_per_host() {
        let mut w = Watch::new(1, 5, "cat f".into(), Vec::new());
        w.start_round(10);
        assert_eq!(w.line("web01", "one"), None, "nothing is marked in the first round");
        assert_eq!(w.line("web02", "x"), None);
        w.end_round();
        w.start_round(11);
        assert_eq!(w.line("web01", "one"), None, "the same line is not marked");
        assert!(w.line("web01", "two").is_some(), "a line that was not there is marked");
        assert!(w.line("web02", "y").is_some());
        w.end_round();
        w.start_round(12);
        assert_eq!(w.line("web01", "one"), None);
        assert_eq!(w.line("web01", "two"), None, "compared with the previous round, not the first");
        assert_eq!((w.rounds, w.run), (3, Some(12)));
    }
}
