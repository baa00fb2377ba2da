//! A run as typed state: one command on some hosts, with an id, a
//! [`RunState`], a [`HostState`] per host and what each host printed (a
//! bounded copy, for grouping identical outputs the way `dshbak -c` does,
//! for the failed-hosts view, for diffs between hosts and for export).
//! Pure data: the console's `update` and `merlya exec` feed it events.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{ExecEvent, HostFailure, HostResult};

/// Lines of one host's output a run keeps (the live pane and the raw log keep the rest).
pub const KEPT_LINES: usize = 2000;

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Asked for; not yet past the approval gate.
    Queued,
    /// A person is being asked to approve it.
    AwaitingApproval,
    /// Running on its hosts.
    Running,
    /// Every host ran it and exited 0.
    Done,
    /// At least one host failed.
    Failed,
    /// The operator cancelled it.
    Cancelled,
    /// At least one host was cut off by the timeout (and none failed otherwise).
    TimedOut,
    /// The approval was refused.
    Denied,
}

impl RunState {
    /// Whether it may still start or report (cancelling it means something).
    pub fn is_active(self) -> bool {
        matches!(self, Self::Queued | Self::AwaitingApproval | Self::Running)
    }

    /// The locale key of its word.
    pub fn key(self) -> &'static str {
        match self {
            Self::Queued => "run.queued",
            Self::AwaitingApproval => "run.awaiting_approval",
            Self::Running => "run.running",
            Self::Done => "run.done",
            Self::Failed => "run.failed",
            Self::Cancelled => "run.cancelled",
            Self::TimedOut => "run.timed_out",
            Self::Denied => "run.denied",
        }
    }
}

/// Where one host is in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "detail")]
pub enum HostState {
    /// Waiting for approval or a free slot.
    Pending,
    /// The command is running there.
    Running,
    /// It exited 0.
    Ok,
    /// It exited with this code.
    Exited(i32),
    /// It did not complete, for this reason.
    Failed(HostFailure),
}

impl HostState {
    /// The state a finished host's result means.
    pub fn of(result: &HostResult) -> Self {
        match (result.failure, result.exit_code) {
            (Some(failure), _) => Self::Failed(failure),
            (None, Some(0)) => Self::Ok,
            (None, Some(code)) => Self::Exited(code),
            (None, None) => Self::Failed(HostFailure::Lost),
        }
    }

    /// Whether the host has reported its end.
    pub fn is_finished(self) -> bool {
        !matches!(self, Self::Pending | Self::Running)
    }

    /// Whether it finished without success.
    pub fn is_failure(self) -> bool {
        matches!(self, Self::Exited(_) | Self::Failed(_))
    }

    /// A glyph that tells the state apart without colour.
    pub fn glyph(self) -> &'static str {
        match self {
            Self::Pending => "·",
            Self::Running => "▶",
            Self::Ok => "✓",
            Self::Exited(_) => "✗",
            Self::Failed(HostFailure::TimedOut) => "⏱",
            Self::Failed(HostFailure::Cancelled) => "⊘",
            Self::Failed(_) => "!",
        }
    }

    /// The locale key of its word.
    pub fn key(self) -> &'static str {
        match self {
            Self::Pending => "host_state.pending",
            Self::Running => "host_state.running",
            Self::Ok => "host_state.ok",
            Self::Exited(_) => "host_state.exited",
            Self::Failed(failure) => failure.key(),
        }
    }
}

/// One host's part of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HostRun {
    pub state: HostState,
    /// Exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Time on the host (not counting the approval wait).
    pub duration_ms: u64,
    /// Why it did not complete, in words.
    pub error: Option<String>,
    /// What it printed (stdout and stderr in arrival order), up to [`KEPT_LINES`].
    pub output: Vec<String>,
    /// Lines past [`KEPT_LINES`] that were not kept.
    pub cut: usize,
}

impl HostRun {
    fn new() -> Self {
        Self { state: HostState::Pending, exit_code: None, duration_ms: 0, error: None, output: Vec::new(), cut: 0 }
    }
}

/// Counts for a progress line ("37/50 done, 2 failed, 11 running").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub running: usize,
}

/// One run: a command on hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Run {
    pub id: u64,
    /// The command as shown (secrets redacted).
    pub command: String,
    pub state: RunState,
    /// Hosts in the order they were asked for.
    pub order: Vec<String>,
    pub hosts: BTreeMap<String, HostRun>,
    /// The operator asked to cancel it.
    pub cancel_requested: bool,
}

impl Run {
    /// A queued run of `command` on `hosts`.
    pub fn new(id: u64, command: impl Into<String>, hosts: &[String]) -> Self {
        Self {
            id,
            command: command.into(),
            state: RunState::Queued,
            order: hosts.to_vec(),
            hosts: hosts.iter().map(|h| (h.clone(), HostRun::new())).collect(),
            cancel_requested: false,
        }
    }

    /// The gate let it through: it runs now.
    pub fn start(&mut self) {
        if self.state.is_active() {
            self.state = RunState::Running;
        }
    }

    /// The approval was refused: nothing ran.
    pub fn deny(&mut self) {
        self.state = RunState::Denied;
    }

    /// Applies a live event.
    pub fn apply(&mut self, event: &ExecEvent) {
        match event {
            ExecEvent::Started { host } => {
                // An agent's turn learns its hosts as its commands start.
                if !self.hosts.contains_key(host) {
                    self.order.push(host.clone());
                }
                self.hosts.entry(host.clone()).or_insert_with(HostRun::new).state = HostState::Running;
            }
            ExecEvent::Line { host, line, .. } => {
                if let Some(h) = self.hosts.get_mut(host) {
                    if h.output.len() < KEPT_LINES {
                        h.output.push(line.clone());
                    } else {
                        h.cut += 1;
                    }
                }
            }
            ExecEvent::Finished(result) => self.finish_host(result),
        }
    }

    fn finish_host(&mut self, result: &HostResult) {
        if let Some(h) = self.hosts.get_mut(&result.host) {
            h.state = HostState::of(result);
            h.exit_code = result.exit_code;
            h.duration_ms = result.duration_ms;
            h.error = result.error.clone();
        }
    }

    /// Every host reported: the run's final state follows from theirs.
    pub fn finish(&mut self, results: &[HostResult]) {
        for result in results {
            self.finish_host(result);
        }
        if self.state == RunState::Denied {
            return;
        }
        let states: Vec<HostState> = self.hosts.values().map(|h| h.state).collect();
        self.state = if self.cancel_requested || states.contains(&HostState::Failed(HostFailure::Cancelled)) {
            RunState::Cancelled
        } else if states.iter().all(|s| *s == HostState::Ok) {
            RunState::Done
        } else if states.iter().all(|s| matches!(s, HostState::Ok | HostState::Failed(HostFailure::TimedOut))) {
            RunState::TimedOut
        } else {
            RunState::Failed
        };
    }

    /// How far it got.
    pub fn progress(&self) -> Progress {
        let mut p = Progress { total: self.hosts.len(), ..Progress::default() };
        for h in self.hosts.values() {
            match h.state {
                HostState::Running => p.running += 1,
                s if s.is_finished() => {
                    p.done += 1;
                    if s.is_failure() {
                        p.failed += 1;
                    }
                }
                _ => {}
            }
        }
        p
    }

    /// Hosts that did not succeed, in the order asked for.
    pub fn failed_hosts(&self) -> Vec<String> {
        self.order.iter().filter(|h| self.hosts.get(*h).is_some_and(|r| r.state.is_failure())).cloned().collect()
    }

    /// The longest time a host took: the run's wall time without the approval wait.
    pub fn duration_ms(&self) -> u64 {
        self.hosts.values().map(|h| h.duration_ms).max().unwrap_or(0)
    }

    /// Hosts with identical results (same output and same end) folded into one
    /// group each, biggest group first; `only_failed` keeps failed hosts only.
    pub fn groups(&self, only_failed: bool) -> Vec<Group<'_>> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        for name in &self.order {
            let Some(host) = self.hosts.get(name) else { continue };
            if only_failed && !host.state.is_failure() {
                continue;
            }
            match groups.iter_mut().find(|g| g.host.output == host.output && g.host.state == host.state) {
                Some(group) => group.names.push(name.clone()),
                None => groups.push(Group { names: vec![name.clone()], host }),
            }
        }
        groups.sort_by_key(|g| std::cmp::Reverse(g.names.len()));
        groups
    }
}

impl Run {
    /// The run as Markdown: command, per-host exit codes and durations, then
    /// the output, identical hosts folded.
    pub fn to_markdown(&self) -> String {
        let mut md = format!(
            "# Run {} — `{}`\n\nState: {:?} · {} hosts · {:.2}s\n\n",
            self.id,
            self.command,
            self.state,
            self.hosts.len(),
            self.duration_ms() as f64 / 1000.0
        );
        md.push_str("| host | state | exit | duration | error |\n|---|---|---|---|---|\n");
        for name in &self.order {
            let Some(h) = self.hosts.get(name) else { continue };
            let exit = h.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
            let error = h.error.as_deref().unwrap_or("").replace('|', "\\|");
            md.push_str(&format!(
                "| {name} | {:?} | {exit} | {:.2}s | {error} |\n",
                h.state,
                h.duration_ms as f64 / 1000.0
            ));
        }
        for group in self.groups(false) {
            md.push_str(&format!("\n## {}\n\n```\n", compress_names(&group.names)));
            for line in &group.host.output {
                md.push_str(line);
                md.push('\n');
            }
            md.push_str("```\n");
            if group.host.cut > 0 {
                md.push_str(&format!("\n({} more lines not kept)\n", group.host.cut));
            }
        }
        md
    }
}

/// Hosts that printed the same and ended the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group<'a> {
    pub names: Vec<String>,
    /// The first host of the group (its output stands for all).
    pub host: &'a HostRun,
}

/// Host names written short: runs of numbered names with one prefix and
/// width become `web01–web48`; the rest are listed.
pub fn compress_names(names: &[String]) -> String {
    let split = |name: &str| -> Option<(String, String)> {
        let digits = name.chars().rev().take_while(char::is_ascii_digit).count();
        (digits > 0).then(|| (name[..name.len() - digits].to_string(), name[name.len() - digits..].to_string()))
    };
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < names.len() {
        let mut j = i;
        if let Some((prefix, digits)) = split(&names[i]) {
            let mut last: u64 = digits.parse().unwrap_or(0);
            while let Some((p, d)) = names.get(j + 1).and_then(|n| split(n)) {
                let n: u64 = d.parse().unwrap_or(0);
                if p != prefix || d.len() != digits.len() || n != last + 1 {
                    break;
                }
                last = n;
                j += 1;
            }
        }
        parts.push(match j - i {
            0 => names[i].clone(),
            1 => format!("{}, {}", names[i], names[j]),
            _ => format!("{}–{}", names[i], names[j]),
        });
        i = j + 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::Stream;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn line(host: &str, text: &str) -> ExecEvent {
        ExecEvent::Line { host: host.into(), stream: Stream::Stdout, line: text.into() }
    }

    fn exited(host: &str, code: i32) -> HostResult {
        HostResult { host: host.into(), exit_code: Some(code), ..HostResult::default() }
    }

    fn failed(host: &str, failure: HostFailure) -> HostResult {
        HostResult { host: host.into(), failure: Some(failure), error: Some("x".into()), ..HostResult::default() }
    }

    #[test]
    fn names_compress_into_ranges_like_dshbak() {
        let fleet: Vec<String> = (1..=48).map(|i| format!("web{i:02}")).collect();
        assert_eq!(compress_names(&fleet), "web01–web48");
        assert_eq!(compress_names(&names(&["web01", "web02", "db01", "web04"])), "web01, web02, db01, web04");
        assert_eq!(compress_names(&names(&["a1", "a2", "a3", "a10", "x"])), "a1–a3, a10, x");
        assert_eq!(compress_names(&names(&["web9", "web10"])), "web9, web10", "widths differ: not one range");
        assert_eq!(compress_names(&[]), "");
    }

    #[test]
    fn identical_outputs_fold_and_the_odd_host_stands_alone() {
        let hosts: Vec<String> = (1..=5).map(|i| format!("web{i:02}")).collect();
        let mut run = Run::new(1, "uptime", &hosts);
        run.start();
        for h in &hosts {
            run.apply(&ExecEvent::Started { host: h.clone() });
            run.apply(&line(h, if h == "web03" { "load 9.0" } else { "load 0.1" }));
        }
        assert_eq!(run.progress(), Progress { total: 5, done: 0, failed: 0, running: 5 });
        let results: Vec<HostResult> = hosts.iter().map(|h| exited(h, i32::from(h == "web03"))).collect();
        for r in &results[..2] {
            run.apply(&ExecEvent::Finished(r.clone()));
        }
        assert_eq!(run.progress(), Progress { total: 5, done: 2, failed: 0, running: 3 });
        run.finish(&results);
        assert_eq!(run.state, RunState::Failed);
        let groups = run.groups(false);
        assert_eq!(groups.len(), 2);
        assert_eq!(compress_names(&groups[0].names), "web01, web02, web04, web05");
        assert_eq!(groups[1].names, names(&["web03"]));
        assert_eq!(groups[1].host.state, HostState::Exited(1));
        let failed = run.groups(true);
        assert_eq!(failed.len(), 1);
        assert_eq!(run.failed_hosts(), names(&["web03"]));
    }

    #[test]
    fn same_output_but_a_different_end_is_a_different_group() {
        let hosts = names(&["a", "b"]);
        let mut run = Run::new(1, "true", &hosts);
        run.finish(&[exited("a", 0), failed("b", HostFailure::Unreachable)]);
        assert_eq!(run.groups(false).len(), 2);
        assert_eq!(run.hosts["b"].state.glyph(), "!");
    }

    #[test]
    fn the_final_state_says_why_it_ended() {
        let hosts = names(&["a", "b"]);
        let mut run = Run::new(1, "x", &hosts);
        run.finish(&[exited("a", 0), exited("b", 0)]);
        assert_eq!(run.state, RunState::Done);
        let mut run = Run::new(1, "x", &hosts);
        run.finish(&[exited("a", 0), failed("b", HostFailure::TimedOut)]);
        assert_eq!(run.state, RunState::TimedOut);
        let mut run = Run::new(1, "x", &hosts);
        run.cancel_requested = true;
        run.finish(&[exited("a", 0), failed("b", HostFailure::Cancelled)]);
        assert_eq!(run.state, RunState::Cancelled);
        let mut run = Run::new(1, "x", &hosts);
        run.deny();
        run.finish(&[]);
        assert_eq!(run.state, RunState::Denied);
        assert!(!run.state.is_active());
    }

    #[test]
    fn a_flood_is_kept_bounded_and_counted() {
        let mut run = Run::new(1, "yes", &names(&["a"]));
        for i in 0..KEPT_LINES + 10 {
            run.apply(&line("a", &i.to_string()));
        }
        assert_eq!(run.hosts["a"].output.len(), KEPT_LINES);
        assert_eq!(run.hosts["a"].cut, 10);
    }
}
