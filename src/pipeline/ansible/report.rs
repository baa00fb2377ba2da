//! Reading what merlya's callback plugin prints: one JSON object per task
//! result, then the recap. Per host and per task, with before/after diffs
//! turned into unified diffs for the diff viewer.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// One task's result on one host.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct TaskResult {
    /// Inventory name.
    pub host: String,
    /// The task's name.
    pub task: String,
    /// `ok`, `changed`, `failed`, `unreachable`, `skipped`, `ignored`.
    pub status: String,
    /// The module's message, if any.
    #[serde(default)]
    pub msg: String,
    /// The module's before/after pairs (`--diff`).
    #[serde(default)]
    pub diff: Vec<Value>,
}

/// A host's recap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct HostStats {
    #[serde(default)]
    pub ok: u32,
    #[serde(default)]
    pub changed: u32,
    #[serde(default)]
    pub failures: u32,
    #[serde(default)]
    pub unreachable: u32,
    #[serde(default)]
    pub skipped: u32,
}

/// A whole `ansible-playbook` run, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// Task results in the order they came.
    pub tasks: Vec<TaskResult>,
    /// The recap per host (empty when the run died before it).
    pub stats: BTreeMap<String, HostStats>,
    /// Lines that were not the plugin's (warnings Ansible printed on stdout).
    pub other: Vec<String>,
}

#[derive(Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Event {
    Task(TaskResult),
    Stats { hosts: BTreeMap<String, HostStats> },
}

/// Reads the plugin's output.
pub fn parse(stdout: &str) -> Report {
    let mut report = Report::default();
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<Event>(line) {
            Ok(Event::Task(task)) => report.tasks.push(task),
            Ok(Event::Stats { hosts }) => report.stats = hosts,
            Err(_) => report.other.push(line.to_string()),
        }
    }
    report
}

/// A live line for the Output pane from one line of the plugin: (host, `changed: task`).
pub fn live_line(line: &str) -> Option<(String, String)> {
    match serde_json::from_str::<Event>(line).ok()? {
        Event::Task(t) if t.msg.is_empty() => Some((t.host, format!("{}: {}", t.status, t.task))),
        Event::Task(t) => Some((t.host, format!("{}: {} — {}", t.status, t.task, t.msg))),
        Event::Stats { .. } => None,
    }
}

impl Report {
    /// Hosts with a failed task, and with the host unreachable.
    pub fn failed_hosts(&self) -> (Vec<&str>, Vec<&str>) {
        let pick =
            |f: fn(&HostStats) -> bool| self.stats.iter().filter(|(_, s)| f(s)).map(|(h, _)| h.as_str()).collect();
        (pick(|s| s.failures > 0 && s.unreachable == 0), pick(|s| s.unreachable > 0))
    }

    /// Tasks that changed (or would change, in check mode), over all hosts.
    pub fn changed(&self) -> u32 {
        self.stats.values().map(|s| s.changed).sum()
    }

    /// "3 change(s) on 2 of 3 host(s)"; failures and unreachable hosts named with the first reason.
    pub fn line(&self) -> String {
        let touched = self.stats.values().filter(|s| s.changed > 0).count();
        let mut line = format!("{} change(s) on {touched} of {} host(s)", self.changed(), self.stats.len());
        let (failed, unreachable) = self.failed_hosts();
        for host in failed {
            let why = self.tasks.iter().find(|t| t.host == host && t.status == "failed");
            let why = why.map(|t| format!(" (task '{}': {})", t.task, t.msg)).unwrap_or_default();
            line.push_str(&format!("; {host}: failed{why}"));
        }
        for host in unreachable {
            line.push_str(&format!("; {host}: unreachable"));
        }
        crate::term_safe::visible_line(&line).into_owned()
    }

    /// Unified diffs per host and task (only tasks that change something).
    pub fn render(&self) -> String {
        let mut out = format!("# Ansible: {}\n", self.line());
        for task in self.tasks.iter().filter(|t| t.status == "changed") {
            if task.diff.is_empty() {
                out.push_str(&format!("# {}: {} (changes; the module shows no diff)\n", task.host, task.task));
            }
            for diff in &task.diff {
                out.push_str(&render_diff(task, diff));
            }
        }
        out
    }
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => serde_json::to_string_pretty(other).map(|s| s + "\n").unwrap_or_default(),
    }
}

fn render_diff(task: &TaskResult, diff: &Value) -> String {
    let header = |key: &str| diff.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = format!("# {}: {}\n", task.host, task.task);
    if let Some(prepared) = diff.get("prepared").and_then(Value::as_str) {
        out.push_str(prepared);
        if !prepared.ends_with('\n') {
            out.push('\n');
        }
        return out;
    }
    let (before, after) = (text_of(diff.get("before")), text_of(diff.get("after")));
    let (old, new) = (header("before_header"), header("after_header"));
    let name = if new.is_empty() { old.clone() } else { new.clone() };
    let unified = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .header(
            &format!("a/{}:{}", task.host, if old.is_empty() { &name } else { &old }),
            &format!("b/{}:{name}", task.host),
        )
        .to_string();
    out.push_str(&unified);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = r#"[WARNING]: something on stdout
{"event": "task", "host": "web01", "task": "write a file", "status": "changed", "changed": true, "msg": "", "rc": null, "diff": [{"before": "old\n", "after_header": "/etc/motd", "before_header": "/etc/motd", "after": "new\n"}]}
{"event": "task", "host": "web02", "task": "write a file", "status": "failed", "changed": false, "msg": "Permission denied", "diff": []}
{"event": "task", "host": "web03", "task": "write a file", "status": "unreachable", "changed": false, "msg": "ssh: connect refused", "diff": []}
{"event": "stats", "hosts": {"web01": {"ok": 1, "changed": 1, "failures": 0, "unreachable": 0, "skipped": 0}, "web02": {"ok": 0, "changed": 0, "failures": 1, "unreachable": 0, "skipped": 0}, "web03": {"ok": 0, "changed": 0, "failures": 0, "unreachable": 1, "skipped": 0}}}
"#;

    #[test]
    fn per_host_results_and_diffs() {
        let report = parse(OUT);
        assert_eq!(report.tasks.len(), 3);
        assert_eq!(report.other, ["[WARNING]: something on stdout"]);
        assert_eq!(report.failed_hosts(), (vec!["web02"], vec!["web03"]));
        assert_eq!(
            report.line(),
            "1 change(s) on 1 of 3 host(s); web02: failed (task 'write a file': Permission denied); web03: unreachable"
        );
        let text = report.render();
        assert!(text.contains("--- a/web01:/etc/motd\n+++ b/web01:/etc/motd\n"), "{text}");
        assert!(text.contains("-old\n+new\n"), "{text}");
        assert_eq!(
            live_line(OUT.lines().nth(2).unwrap()).unwrap(),
            ("web02".into(), "failed: write a file — Permission denied".into())
        );
    }
}
