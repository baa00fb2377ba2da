//! The incident report: what happened in a session (or since a time), as
//! Markdown an operator pastes into a postmortem, or as JSON.
//!
//! Built only from what the store recorded — the operator's questions and the
//! agent's answers, every audited command per host with its outcome and who
//! approved or refused it, and the change pipelines with their stages and
//! diffs. Everything in it was masked before it was stored; it is masked again
//! here, and control characters are made visible.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::redact::redact_command;
use crate::store::audit::{AuditFilter, AuditOutcome, AuditRecord};
use crate::store::pipelines::PipelineRun;
use crate::store::{Store, StoreError};
use crate::term_safe::visible;

/// What the report covers.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// One session (a `merlya exec` run, a console session).
    pub session: Option<String>,
    /// Everything at or after this RFC 3339 time.
    pub since: Option<String>,
}

/// One line of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Event {
    /// When (RFC 3339).
    pub at: String,
    /// `question`, `answer`, `command`, `refused`, `denied`, `change`.
    pub kind: &'static str,
    /// Who asked or answered.
    pub who: String,
    /// The host (commands), empty otherwise.
    pub host: String,
    /// The text: a question, a command, a change's summary.
    pub text: String,
    /// How it ended: `exit 0`, `failed: …`, `approved by alice`, `denied by nobody`.
    pub outcome: String,
    /// A command's output, trimmed to its last lines (empty when none was kept).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub output: String,
}

/// A change pipeline as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    pub id: String,
    pub kind: String,
    pub status: String,
    pub targets: String,
    pub summary: String,
    pub decision: String,
    pub diff: String,
    /// Resources changed outside the tool (Terraform drift), as its dry run said.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub drift: String,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// What it covers, in words.
    pub scope: String,
    /// Every event, oldest first.
    pub timeline: Vec<Event>,
    /// Commands per host: (total, failed, refused or denied).
    pub hosts: BTreeMap<String, (usize, usize, usize)>,
    /// The changes.
    pub changes: Vec<Change>,
    /// Drift found by checks in the report's time (resources and hosts against their baseline).
    pub drift: Vec<DriftFound>,
    /// Skill runs (triage) in the report's time: each with its culprits and why.
    pub skills: Vec<SkillFindings>,
}

/// A skill run's culprits, as the report shows them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillFindings {
    /// When it ended.
    pub at: String,
    /// `name version`.
    pub skill: String,
    /// Hosts it ran on.
    pub hosts: i64,
    /// `host (VERDICT): why`, worst first.
    pub culprits: Vec<String>,
}

/// A drift a check found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftFound {
    /// When it was checked.
    pub at: String,
    /// `resource` or `host`.
    pub source: &'static str,
    /// The resource or host.
    pub name: String,
    /// What was found (`missing`, `packages nginx: 1.22 → 1.24`).
    pub what: String,
}

fn clean(text: &str) -> String {
    visible(&redact_command(text)).into_owned()
}

/// Builds the report of `scope` from the store.
pub async fn build(store: &Store, scope: &Scope) -> Result<Report, StoreError> {
    let scope_since = scope.since.clone();
    let session_filter = scope.session.clone();
    let filter = AuditFilter { session: scope.session.clone(), since: scope.since.clone(), ..AuditFilter::default() };
    let records = store.list_audit(&filter).await?;
    let messages = store.session_messages(scope.session.as_deref(), scope.since.as_deref()).await?;
    let runs: Vec<PipelineRun> = store
        .list_pipeline_runs()
        .await?
        .into_iter()
        .filter(|r| scope.since.as_deref().is_none_or(|since| r.created_at.as_str() >= since))
        .filter(|r| {
            scope.session.is_none()
                || records.iter().any(|a| a.approval_ref.as_deref().is_some_and(|x| x.contains(&r.id)))
        })
        .collect();
    let mut timeline: Vec<Event> = messages
        .into_iter()
        // Tool rows repeat what the audit log says, with more detail there.
        .filter(|(_, role, _)| role != "tool")
        .map(|(at, role, content)| Event {
            at,
            kind: if role == "user" { "question" } else { "answer" },
            who: if role == "user" { "operator".into() } else { "agent".into() },
            host: String::new(),
            text: clean(&content),
            outcome: String::new(),
            output: String::new(),
        })
        .collect();
    let mut hosts: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    for record in &records {
        let mut event = command_event(record);
        if let Some((stdout, stderr)) = store.command_output(&record.host, &record.command, &record.ts).await? {
            event.output = trimmed(&crate::skills::batch::without_markers(&format!("{stdout}{stderr}")));
        }
        timeline.push(event);
        let counts = hosts.entry(record.host.clone()).or_default();
        counts.0 += 1;
        match record.outcome {
            AuditOutcome::Ok => {}
            AuditOutcome::Refused | AuditOutcome::Denied => counts.2 += 1,
            _ => counts.1 += 1,
        }
    }
    let changes: Vec<Change> = runs
        .iter()
        .map(|r| Change {
            id: r.id.clone(),
            kind: r.kind.as_str().into(),
            status: r.status.as_str().into(),
            targets: clean(&r.targets),
            summary: clean(&r.summary),
            decision: clean(&r.decision),
            diff: clean(&r.diff),
            drift: r
                .stages
                .iter()
                .map(|s| s.detail.as_str())
                .find(|d| d.contains("drifted outside"))
                .map(clean)
                .unwrap_or_default(),
        })
        .collect();
    for run in &runs {
        timeline.push(Event {
            at: run.created_at.clone(),
            kind: "change",
            who: run.requested_by.clone(),
            host: String::new(),
            text: format!("{} change {} on {}", run.kind.as_str(), run.id, clean(&run.targets)),
            outcome: run.status.as_str().into(),
            output: String::new(),
        });
    }
    // At the same instant a change comes first: it was created before anything its stages did.
    timeline.sort_by(|a, b| a.at.cmp(&b.at).then_with(|| (b.kind == "change").cmp(&(a.kind == "change"))));
    let scope = match (&scope.session, &scope.since) {
        (Some(session), _) => format!("session {session}"),
        (None, Some(since)) => format!("since {since}"),
        (None, None) => "everything recorded".into(),
    };
    // Checks from the report's start on (its `since`, else its first event).
    let start = scope_start(&timeline, &scope_since);
    let drift = drift_found(store, start.as_deref()).await?;
    let skills = store
        .skill_runs(start.as_deref(), session_filter.as_deref())
        .await?
        .into_iter()
        .map(|run| SkillFindings {
            at: run.ts,
            skill: format!("{} {}", run.skill, run.version),
            hosts: run.hosts,
            culprits: run
                .culprits
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    let verdict =
                        if c["unreachable"] == true { "UNREACHABLE" } else { c["verdict"].as_str().unwrap_or("?") };
                    let why: Vec<&str> = c["why"].as_array().into_iter().flatten().filter_map(|w| w.as_str()).collect();
                    clean(&format!(
                        "{} ({}): {}",
                        c["host"].as_str().unwrap_or("?"),
                        verdict.to_uppercase(),
                        why.join("; ")
                    ))
                })
                .collect(),
        })
        .collect();
    Ok(Report { scope, timeline, hosts, changes, drift, skills })
}

fn scope_start(timeline: &[Event], since: &Option<String>) -> Option<String> {
    since.clone().or_else(|| timeline.first().map(|e| e.at.clone()))
}

async fn drift_found(store: &Store, since: Option<&str>) -> Result<Vec<DriftFound>, StoreError> {
    use crate::store::resources::Drift;
    let after = |at: &str| since.is_none_or(|s| at >= s);
    let mut found = Vec::new();
    for r in store.list_resources().await? {
        let Some(at) = r.last_checked_at.clone().filter(|at| after(at)) else { continue };
        if matches!(r.drift, Drift::Drifted | Drift::Missing) {
            let detail = r.drift_detail.lines().next().unwrap_or_default();
            found.push(DriftFound {
                at,
                source: "resource",
                name: clean(&r.name),
                what: clean(&format!("{}: {detail}", r.drift.as_str())),
            });
        }
    }
    for (host, at, findings) in store.host_drift().await? {
        if !after(&at) {
            continue;
        }
        let rows: Vec<crate::baseline::compare::Row> = serde_json::from_str(&findings).unwrap_or_default();
        for row in rows {
            let value = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            let what = format!(
                "{} {} {}: {} → {}",
                row.kind.glyph(),
                row.section,
                row.key,
                value(&row.expected),
                value(&row.found)
            );
            found.push(DriftFound { at: at.clone(), source: "host", name: clean(&host), what: clean(&what) });
        }
    }
    found.sort_by(|a, b| a.at.cmp(&b.at));
    Ok(found)
}

fn command_event(record: &AuditRecord) -> Event {
    let (kind, outcome) = match record.outcome {
        AuditOutcome::Refused => ("refused", format!("refused: {}", record.reason.clone().unwrap_or_default())),
        AuditOutcome::Denied => ("denied", format!("denied by {}", record.approved_by)),
        AuditOutcome::Ok => {
            ("command", format!("exit {} · approved: {}", record.exit_code.unwrap_or(0), record.approved_by))
        }
        other => (
            "command",
            format!(
                "{}{} · approved: {}",
                other.as_str(),
                record.exit_code.map(|c| format!(" (exit {c})")).unwrap_or_default(),
                record.approved_by
            ),
        ),
    };
    Event {
        at: record.ts.clone(),
        kind,
        who: record.requested_by.clone(),
        host: record.host.clone(),
        text: clean(&readable(&record.command)),
        outcome: clean(&outcome),
        output: String::new(),
    }
}

/// A command as a person reads it in a postmortem: a skill's batch as its steps (not the script that
/// frames them), a file written by the agent as the file and its size (not its base64).
fn readable(command: &str) -> String {
    if let Some(steps) = crate::skills::batch::steps_in(command) {
        return format!("skill steps: {}", steps.join(" · "));
    }
    if let Some((path, bytes)) = crate::exec::file_write::read_back(command) {
        return format!("writes {path} ({bytes} bytes; the diff is in the change's record)");
    }
    command.to_string()
}

/// The last lines of an output (at most 6 lines, 600 characters), masked and made visible.
fn trimmed(output: &str) -> String {
    let lines: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(6)..].join("\n");
    let cut: String = tail.chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect();
    let more = if lines.len() > 6 || cut.len() < tail.len() { "…\n" } else { "" };
    clean(&format!("{more}{cut}"))
}

/// The report as Markdown.
pub fn markdown(report: &Report) -> String {
    let cell = |text: &str| text.replace('|', "\\|").replace('\n', " ");
    let mut out = format!("# Incident report — {}\n\n", report.scope);
    let commands: usize = report.hosts.values().map(|c| c.0).sum();
    let failed: usize = report.hosts.values().map(|c| c.1).sum();
    let refused: usize = report.hosts.values().map(|c| c.2).sum();
    out.push_str(&format!(
        "{commands} command(s) on {} host(s): {failed} failed, {refused} refused or denied; {} change(s).\n\n",
        report.hosts.len(),
        report.changes.len()
    ));
    out.push_str("## Timeline\n\n| time | what | who | host | detail | outcome |\n|---|---|---|---|---|---|\n");
    for e in &report.timeline {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            e.at,
            e.kind,
            cell(&e.who),
            cell(&e.host),
            cell(&e.text),
            cell(&e.outcome)
        ));
    }
    let outputs: Vec<&Event> = report.timeline.iter().filter(|e| !e.output.is_empty()).collect();
    if !outputs.is_empty() {
        out.push_str("\n## Command output (last lines)\n");
        for e in outputs {
            out.push_str(&format!("\n`{}` on {} ({}):\n\n```\n{}\n```\n", e.text, e.host, e.outcome, e.output));
        }
    }
    out.push_str("\n## Hosts involved\n\n| host | commands | failed | refused or denied |\n|---|---:|---:|---:|\n");
    for (host, (total, failed, refused)) in &report.hosts {
        out.push_str(&format!("| {} | {total} | {failed} | {refused} |\n", cell(host)));
    }
    if !report.drift.is_empty() {
        out.push_str("\n## Drift found\n\n| checked | source | name | what |\n|---|---|---|---|\n");
        for d in &report.drift {
            out.push_str(&format!("| {} | {} | {} | {} |\n", d.at, d.source, cell(&d.name), cell(&d.what)));
        }
    }
    if !report.skills.is_empty() {
        out.push_str("\n## Skill findings\n");
        for s in &report.skills {
            out.push_str(&format!("\n- {} — {} on {} host(s)", s.at, cell(&s.skill), s.hosts));
            if s.culprits.is_empty() {
                out.push_str(": no host past a threshold\n");
            } else {
                out.push('\n');
                for c in &s.culprits {
                    out.push_str(&format!("  - {}\n", cell(c)));
                }
            }
        }
    }
    if !report.changes.is_empty() {
        out.push_str("\n## Changes\n");
        for c in &report.changes {
            out.push_str(&format!(
                "\n### {} change {} — {}\n\n- targets: {}\n- summary: {}\n- decision: {}\n",
                c.kind, c.id, c.status, c.targets, c.summary, c.decision
            ));
            if !c.drift.is_empty() {
                out.push_str(&format!("- drift: {}\n", c.drift));
            }
            if !c.diff.is_empty() {
                out.push_str(&format!("\n```diff\n{}\n```\n", c.diff.trim_end()));
            }
        }
    }
    out
}
