//! The specialists. Diagnostic and security run only commands the classifier
//! proves read-only; execution turns each mutation into a change pipeline
//! (preview with diff → approval → apply → post-check → rollback); query
//! answers from the inventory and the audit log.

use serde::Deserialize;
use serde_json::Value;

use super::tools::{args, inventory_call, inventory_specs, spec};
use super::{Agent, CommandRecord, ToolBox, prompts};
use crate::approval::{ApprovalRequest, Route};
use crate::context::{audit_refused_all, audit_request};
use crate::exec::HostResult;
use crate::inventory::{Host, resolve_inventory_targets};
use crate::llm::ToolSpec;
use crate::safety::analyze;
use crate::safety::clearance::Clearance;
use crate::store::audit::{AuditFilter, AuditOutcome};

/// Which specialist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Diagnostic,
    Security,
    Execution,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Diagnostic => "diagnostic",
            Kind::Security => "security",
            Kind::Execution => "execution",
        }
    }

    fn prompt(self) -> &'static str {
        match self {
            Kind::Diagnostic => prompts::DIAGNOSTIC,
            Kind::Security => prompts::SECURITY,
            Kind::Execution => prompts::EXECUTION,
        }
    }
}

/// How a result reads to the model (a long stream's tail, the whole kept in a raw log).
fn describe(agent: &Agent, result: &HostResult) -> String {
    match &result.error {
        Some(e) => format!("did not complete: {e}"),
        None => format!(
            "exit code {}\nstdout:\n{}\nstderr:\n{}",
            result.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "none".into()),
            super::raw_logs::for_model(&agent.store, &result.stdout),
            super::raw_logs::for_model(&agent.store, &result.stderr)
        ),
    }
}

/// What the model is told instead of the output of a command that used a secret.
pub const WITHHELD: &str = "output withheld: the command used a secret";

/// [`describe`], or only the exit status when the command used a secret.
fn describe_or_withhold(agent: &Agent, result: &HostResult, used_secret: bool) -> String {
    if !used_secret {
        return describe(agent, result);
    }
    match &result.error {
        Some(e) => format!("did not complete: {e}; {WITHHELD}"),
        None => format!(
            "exit code {}; {WITHHELD}",
            result.exit_code.map(|c| c.to_string()).unwrap_or_else(|| "none".into())
        ),
    }
}

/// Runs specialists on every target host in parallel (bounded) and joins their reports.
pub async fn delegate(agent: &Agent, kind: Kind, target: &str, task: &str) -> String {
    let hosts = match resolve_inventory_targets(target, &agent.inventory, agent.limits.allow_localhost) {
        Ok(h) => h,
        Err(e) => return format!("ERROR: {e}; use list_hosts to see the inventory"),
    };
    let permits = tokio::sync::Semaphore::new(agent.limits.max_parallel_subagents.max(1));
    let runs = hosts.iter().map(|host| async {
        let _permit = permits.acquire().await;
        let system = kind.prompt().replace("{host}", &host.name);
        let user = format!("Task: {task}\nHost: {} ({}), tags: {}", host.name, host.hostname, host.tags.join(","));
        let offer = if kind == Kind::Execution {
            super::pipeline_tools::offer(agent, host).await
        } else {
            super::pipeline_tools::Offer::default()
        };
        let mcp = super::mcp_tools::offer(agent, kind != Kind::Execution).await;
        let toolbox = HostTools { host: host.clone(), kind, offer, mcp };
        let agent_name = format!("{}@{}", kind.name(), host.name);
        match agent.react(&agent_name, system, user, &toolbox).await {
            Ok(answer) => format!("## {}\n{answer}", host.name),
            Err(e) => format!("## {}\nthe {} specialist stopped: {e}", host.name, kind.name()),
        }
    });
    futures::future::join_all(runs).await.join("\n\n")
}

/// Runs the query specialist.
pub async fn query(agent: &Agent, question: &str) -> String {
    match agent.react("query", prompts::QUERY.to_string(), question.to_string(), &QueryTools).await {
        Ok(answer) => answer,
        Err(e) => format!("the query specialist stopped: {e}"),
    }
}

/// Tools of a specialist bound to one host.
struct HostTools {
    host: Host,
    kind: Kind,
    /// The pipeline kinds this host can be changed with (execution only).
    offer: super::pipeline_tools::Offer,
    /// External MCP tools offered (read-only ones, except to the execution specialist).
    mcp: Vec<crate::mcp::ToolInfo>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RunArgs {
    command: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ChangeArgs {
    summary: String,
    command: String,
    post_check: Option<String>,
    rollback: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    content: String,
    summary: String,
    post_check: Option<String>,
}

#[async_trait::async_trait]
impl ToolBox for HostTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = vec![spec(
            "run_command",
            "Run a read-only shell command on this host and get its exit code and output.",
            &[("command", "the shell command")],
            &["command"],
        )];
        if self.kind == Kind::Execution {
            specs.push(spec(
                "propose_change",
                "Propose a change (a shell command). A person approves or denies it; if approved it runs, then the post_check; a failure runs the rollback.",
                &[("summary", "one line: what and why"), ("command", "the change"), ("post_check", "read-only check that the change worked"), ("rollback", "command undoing the change")],
                &["summary", "command"],
            ));
            specs.push(spec(
                "edit_file",
                "Replace a file's content; the person sees a unified diff before approving.",
                &[
                    ("path", "absolute path"),
                    ("content", "the complete new content"),
                    ("summary", "one line: what and why"),
                    ("post_check", "read-only check"),
                ],
                &["path", "content", "summary"],
            ));
            specs.extend(super::pipeline_tools::specs(&self.offer));
        }
        specs.extend(super::mcp_tools::specs(&self.mcp));
        specs.push(super::raw_logs::spec());
        specs
    }

    async fn call(&self, agent: &Agent, name: &str, value: Value) -> Result<String, String> {
        if name == "read_raw_log" {
            return super::raw_logs::read(&agent.store, value);
        }
        let asker = format!("agent@{}", self.kind.name());
        let read_only = self.kind != Kind::Execution;
        if let Some(result) = super::mcp_tools::call(agent, &self.mcp, name, value.clone(), &asker, read_only).await {
            return result;
        }
        match name {
            "run_command" => {
                let a: RunArgs = args(name, value)?;
                Ok(run_read_only(agent, self.kind, &self.host, &a.command).await)
            }
            "propose_change" if self.kind == Kind::Execution => {
                let a: ChangeArgs = args(name, value)?;
                let change = Change {
                    summary: a.summary,
                    command: a.command.clone(),
                    display: a.command,
                    diff: None,
                    post_check: a.post_check,
                    rollback: a.rollback,
                    rollback_display: None,
                    restore: None,
                    previous: None,
                };
                Ok(run_change(agent, &self.host, change).await)
            }
            "edit_file" if self.kind == Kind::Execution => {
                let a: EditArgs = args(name, value)?;
                Ok(edit_file(agent, &self.host, a).await)
            }
            other if self.kind == Kind::Execution => {
                match super::pipeline_tools::call(agent, &self.host, &self.offer, other, value).await {
                    Some(result) => result,
                    None => Err(format!("unknown tool `{other}`")),
                }
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
}

/// Runs `command` if the classifier proves it read-only; otherwise refuses with the reasons.
async fn run_read_only(agent: &Agent, kind: Kind, host: &Host, command: &str) -> String {
    let who = format!("{}@{}", kind.name(), host.name);
    let asker = format!("agent@{}", kind.name());
    // One routing decision; a read-only specialist runs a proven read and nothing else.
    let (analysis, to_run) = match agent.gate.route(command) {
        Route::Read(clearance) => {
            let (result, _) = execute(agent, &who, Run { asker: &asker, host, clearance, approval_ref: None }).await;
            return describe(agent, &result);
        }
        Route::Ask { analysis, proven: Some(rendering) } => (analysis, rendering),
        Route::Ask { analysis, proven: None } => {
            let reasons = analysis.reasons.join("; ");
            let request = audit_request(&agent.session_id, &agent.executor, &asker, host, command, "");
            let why = format!("refused by the safety policy ({} specialist): {reasons}", kind.name());
            audit_refused_all(&agent.store, &[request], AuditOutcome::Refused, &why).await;
            agent.record_command(CommandRecord {
                specialist: who,
                host: host.name.clone(),
                command: command.to_string(),
                exit_code: None,
                refused: Some(reasons.clone()),
                approved_by: None,
            });
            let hint = if kind == Kind::Execution { " Use propose_change for changes." } else { "" };
            return format!(
                "REFUSED by merlya's safety policy, not executed: {reasons}. Only read-only commands run here.{hint}"
            );
        }
    };
    // Proven read-only, asked first (paranoid mode or a blocked prefix): the rendering is what is approved.
    let command = to_run.as_str();
    let request =
        ApprovalRequest::new(format!("{} check", kind.name()), command, vec![host.name.clone()], &analysis, Vec::new());
    let outcome = agent.gate.check(&request).await;
    let Some(clearance) = outcome.clearance(command) else {
        let by = match &outcome {
            crate::approval::GateOutcome::Denied(who) => who.clone(),
            _ => "nobody".into(),
        };
        let request = audit_request(&agent.session_id, &agent.executor, &asker, host, command, &by);
        let why = format!("denied by {by} (paranoid mode asks for every command)");
        audit_refused_all(&agent.store, &[request], AuditOutcome::Denied, &why).await;
        agent.record_command(CommandRecord {
            specialist: who,
            host: host.name.clone(),
            command: command.into(),
            exit_code: None,
            refused: Some("denied".into()),
            approved_by: None,
        });
        return "DENIED by the operator (paranoid mode asks for every command); do not retry it.".into();
    };
    let (result, _) = execute(agent, &who, Run { asker: &asker, host, clearance, approval_ref: None }).await;
    describe(agent, &result)
}

/// One command an agent runs: who asked, where, what, approved by whom, and
/// (post-check, rollback) the approval it belongs to.
struct Run<'a> {
    asker: &'a str,
    host: &'a Host,
    /// The command and who allowed it: the executor runs nothing else.
    clearance: Clearance,
    approval_ref: Option<String>,
}

/// Runs a command with its audit entry written ahead, records it in the
/// history, and reports it with the start entry's id. Nothing runs when the
/// audit log cannot be written.
async fn execute(agent: &Agent, who: &str, run: Run<'_>) -> (HostResult, Option<i64>) {
    let Run { asker, host, clearance, approval_ref } = run;
    let (tx, forward) = agent.exec_forwarder();
    let door = crate::door::Door {
        store: &agent.store,
        executor: &agent.executor,
        session_id: &agent.session_id,
        requested_by: asker,
        retention_days: agent.retention_days,
        parallel: 1,
        timeout: agent.command_timeout,
        cancel: &agent.cancel,
    };
    let ran = door.run_one(host, &clearance, approval_ref, &tx).await;
    drop(tx);
    let _ = forward.await;
    agent.record_command(CommandRecord {
        specialist: who.to_string(),
        host: host.name.clone(),
        command: clearance.command().to_string(),
        exit_code: ran.result.exit_code,
        refused: ran.result.error.clone(),
        approved_by: Some(clearance.approved_by().to_string()),
    });
    (ran.result, ran.audit_id)
}

/// A change to make on one host.
struct Change {
    summary: String,
    /// What runs.
    command: String,
    /// What the person sees as the command.
    display: String,
    diff: Option<String>,
    post_check: Option<String>,
    rollback: Option<String>,
    /// What the person sees as the rollback (a file restored, not its encoding).
    rollback_display: Option<String>,
    /// The file the rollback puts back from its private copy.
    restore: Option<String>,
    /// The file as it was, kept in the run's private folder.
    previous: Option<crate::pipeline::bash::PreviousFile>,
}

/// The change, made through the one change path (a Bash pipeline on the host), and reported to the model.
async fn run_change(agent: &Agent, host: &Host, change: Change) -> String {
    use crate::pipeline::bash::{BashChange, BashSpec};
    use crate::pipeline::{PipelineStatus, StageName, StageStatus};
    let who = format!("execution@{}", host.name);
    let applied_with_secret = !crate::secrets::reference::references(&change.command).is_empty();
    let spec = BashSpec {
        hosts: vec![host.name.clone()],
        display: (change.display != change.command).then(|| change.display.clone()),
        command: change.command,
        summary: Some(change.summary),
        diff: change.diff,
        check: change.post_check.clone(),
        rollback: change.rollback.clone(),
        rollback_display: change.rollback_display.clone(),
        restore: change.restore.clone(),
        previous: change.previous.clone(),
    };
    let mut bash = BashChange::new(spec, vec![host.clone()]);
    let run = match super::pipeline_tools::run(agent, &mut bash, false).await {
        Ok(run) => run,
        Err(e) => return format!("NOT RUN: {e}"),
    };
    let stage_detail = |name| run.stage(name).map(|s| s.detail.clone()).unwrap_or_default();
    let record = |exit_code, refused: Option<String>, approved_by: Option<String>| {
        agent.record_command(CommandRecord {
            specialist: who.clone(),
            host: host.name.clone(),
            command: change.display.clone(),
            exit_code,
            refused,
            approved_by,
        })
    };
    match run.status {
        PipelineStatus::Failed if run.stage(StageName::Apply).is_none() => {
            let why = stage_detail(StageName::Plan);
            record(None, Some(why.clone()), None);
            return format!("REFUSED: {why}. Nothing was run.");
        }
        PipelineStatus::Denied | PipelineStatus::Stopped | PipelineStatus::Planned | PipelineStatus::Cancelled
            if run.stage(StageName::Apply).is_none() =>
        {
            let by = run.decision.strip_prefix("denied by ").unwrap_or("nobody (no terminal)").to_string();
            record(None, Some(format!("denied by {by}")), None);
            return format!(
                "DENIED by {by}: the change was not made. Do not propose it again; report to the operator."
            );
        }
        _ => {}
    }
    let approved_by = run.decision.strip_prefix("approved by ").unwrap_or_default().to_string();
    let exit_code = bash.applied.first().and_then(|r| r.exit_code);
    record(exit_code, None, Some(approved_by.clone()));
    // Output of a command that used a secret never reaches the model: masking cannot catch every
    // encoding a command can print (`rev`, `od`, a cipher), so the model gets the exit status only.
    let secret = |command: &str| !crate::secrets::reference::references(command).is_empty();
    let mut report = format!(
        "APPLIED (approved by {approved_by}): {}",
        bash.applied
            .first()
            .map(|r| describe_or_withhold(agent, r, applied_with_secret))
            .unwrap_or_else(|| stage_detail(StageName::Apply))
    );
    if let (Some(check), Some(result)) = (&change.post_check, bash.checked.first()) {
        report.push_str(&format!("\nPOST-CHECK `{check}`: {}", describe_or_withhold(agent, result, secret(check))));
    }
    let undo = change.rollback_display.as_deref().or(change.rollback.as_deref());
    if let (Some(shown), Some(stage)) = (undo, run.stage(StageName::Rollback))
        && stage.status != StageStatus::Skipped
    {
        let with_secret = change.rollback.as_deref().is_some_and(secret);
        let output = if with_secret { WITHHELD.to_string() } else { stage.output.trim_end().to_string() };
        report.push_str(&format!("\nROLLED BACK with `{shown}`: {}\n{output}", stage.detail));
    }
    report
}

/// Reads the file, shows a diff, writes the new content after approval.
async fn edit_file(agent: &Agent, host: &Host, a: EditArgs) -> String {
    if !a.path.starts_with('/') || a.path.contains('\'') || a.path.contains('\n') {
        return "ERROR: path must be absolute and contain no quote or newline".into();
    }
    let who = format!("execution@{}", host.name);
    // The file's bytes, whole (base64 survives the line splitter: no `\r`, invalid UTF-8 or long
    // line is changed on the way), or a word saying there is none. A file that exists but cannot be
    // read stops the edit: it must never be taken for a new one (its rollback would remove it).
    let read = format!("if test -e '{0}'; then base64 -w0 -- '{0}'; else echo absent; fi", a.path);
    // The pre-read passes the same gate as any command (paranoid mode asks for it too).
    let request = ApprovalRequest::new(
        "read the file before editing it".into(),
        &read,
        vec![host.name.clone()],
        &analyze(&read),
        Vec::new(),
    );
    let Some(clearance) = agent.gate.check(&request).await.clearance(&read) else {
        return "DENIED by the operator: the file was not read; do not retry it.".into();
    };
    let (current, _) =
        execute(agent, &who, Run { asker: "agent@execution", host, clearance, approval_ref: None }).await;
    let encoded = current.stdout.trim();
    let before: Option<Vec<u8>> = match (current.success(), encoded) {
        (true, "absent") => None,
        (true, _) if current.output_cut_bytes == 0 => {
            match base64::Engine::decode(&base64::engine::general_purpose::STANDARD, encoded) {
                Ok(bytes) => Some(bytes),
                Err(_) => return format!("ERROR: {} could not be read whole; it was not edited", a.path),
            }
        }
        _ => {
            let why = current.error.clone().unwrap_or_else(|| current.stderr.trim().to_string());
            return format!("ERROR: {} exists but could not be read ({why}); it was not edited", a.path);
        }
    };
    let old = before.as_deref().map(String::from_utf8_lossy).unwrap_or_default().into_owned();
    // The rollback puts the file back as it was read, byte for byte, from the run's private copy (or
    // removes a file the edit creates).
    let (rollback, rollback_display, restore) = match &before {
        Some(bytes) => {
            (None, Some(format!("restore {} as it was ({} bytes)", a.path, bytes.len())), Some(a.path.clone()))
        }
        None => (Some(format!("rm -f -- '{}'", a.path)), Some(format!("remove {} (it did not exist)", a.path)), None),
    };
    let previous = before.map(|content| crate::pipeline::bash::PreviousFile { path: a.path.clone(), content });
    let diff = similar::TextDiff::from_lines(&old, &a.content)
        .unified_diff()
        .header(&format!("a{}", a.path), &format!("b{}", a.path))
        .to_string();
    let change = Change {
        summary: a.summary,
        command: crate::exec::file_write::command(&a.path, a.content.as_bytes()),
        display: format!("write {} ({} bytes)", a.path, a.content.len()),
        diff: Some(diff),
        post_check: a.post_check,
        rollback,
        rollback_display,
        restore,
        previous,
    };
    run_change(agent, host, change).await
}

/// The query specialist's tools.
struct QueryTools;

#[async_trait::async_trait]
impl ToolBox for QueryTools {
    fn specs(&self) -> Vec<ToolSpec> {
        let mut specs = inventory_specs();
        specs.push(spec(
            "recent_commands",
            "Recent commands from the audit log (host, command, exit code, who approved).",
            &[("host", "only this host"), ("limit", "how many (default 20)")],
            &[],
        ));
        specs
    }

    async fn call(&self, agent: &Agent, name: &str, value: Value) -> Result<String, String> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Recent {
            host: Option<String>,
            limit: Option<String>,
        }
        if let Some(result) = inventory_call(agent, name, &value) {
            return result;
        }
        let a: Recent = args(name, value)?;
        let limit =
            a.limit.as_deref().map(str::parse::<i64>).transpose().map_err(|_| "limit must be a number".to_string())?;
        let entries = agent
            .store
            .list_audit(&AuditFilter { host: a.host, limit: Some(limit.unwrap_or(20)), ..Default::default() })
            .await
            .map_err(|e| e.to_string())?;
        let rows: Vec<Value> = entries
            .iter()
            .map(|e| serde_json::json!({"ts": e.ts, "host": e.host, "command": e.command, "exit_code": e.exit_code, "outcome": e.outcome, "approved_by": e.approved_by}))
            .collect();
        Ok(Value::Array(rows).to_string())
    }
}
