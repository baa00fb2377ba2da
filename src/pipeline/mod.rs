//! Change pipelines: the one path by which anything changes (ADR 0019).
//!
//! A [`Change`] of some [`Kind`] (Bash, Terraform, …) provides plan, dry run,
//! summary, apply, post-check and rollback; the [`runner`] drives them through
//! Plan → Diff → Summary → Approval → Apply → Post-check → Rollback, persists
//! each stage before it starts and when it ends, and reports the record over a
//! channel. The console's `!cmd`, `merlya exec`, `merlya pipeline` and the
//! agent's execution specialist all make their changes through it.

pub mod ansible;
pub mod bash;
pub mod capabilities;
pub mod fanout;
pub mod kubernetes;
pub mod pin;
pub mod runner;
pub mod terraform;
pub mod terraform_code;
pub mod terraform_copy;
pub mod terraform_plan;
pub mod tool;
pub mod vars;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalGate, ApprovalRequest, GateOutcome};
use crate::exec::{EventSender, Executor};
use crate::store::Store;
use crate::store::audit::AuditOutcome;
pub use crate::store::pipelines::{Kind, PipelineRun, PipelineStatus, Stage, StageName, StageStatus};

/// What every change needs to run: the services of whoever started it.
#[derive(Clone)]
pub struct Env {
    /// Where the record, the audit log and the history go.
    pub store: Store,
    /// Runs commands on hosts (Bash, post-checks, capability probes).
    pub executor: Arc<Executor>,
    /// The one approval gate.
    pub gate: ApprovalGate,
    /// The session the audit and history rows belong to.
    pub session_id: String,
    /// Who asked (`alice`, `agent@execution`), for the record and the audit log.
    pub requested_by: String,
    /// Days the command history keeps raw output.
    pub retention_days: u32,
    /// Hosts at once.
    pub parallel: usize,
    /// Bound of each stage that runs something.
    pub timeout: Duration,
    /// Cancels the run (Ctrl-C, `:cancel`, SIGINT).
    pub cancel: CancellationToken,
    /// Live output of what runs on hosts.
    pub events: EventSender,
    /// What the run does when it reaches its approval.
    pub at_approval: AtApproval,
    /// Ask before the dry run too: a change the agent proposes, since a dry run can run code.
    pub ask_before_dry_run: bool,
    /// Records a stage left to write beside the next one (the runner writes them).
    pub deferred: Deferred,
}

/// What a run does when it reaches the Approval stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AtApproval {
    /// Ask the gate (a person, `--yes`, a stored rule, two-person review).
    #[default]
    Ask,
    /// Stop after Summary: nobody can approve (no terminal, no `--yes`). Audited as denied.
    NobodyToAsk,
    /// Stop after Summary because only the plan was asked: nothing is asked or refused.
    PlanOnly,
}

/// Records of a stage that just ended which the next stage does not depend on (the audit entry
/// that finishes an apply): the runner writes them beside the next stage's work, and always before
/// it stores the run's end. A crash in between leaves the audit entry unfinished, never wrong.
#[derive(Clone, Default)]
pub struct Deferred(Arc<std::sync::Mutex<Vec<futures::future::BoxFuture<'static, ()>>>>);

impl Deferred {
    /// Leaves `write` to the runner.
    pub fn push(&self, write: impl std::future::Future<Output = ()> + Send + 'static) {
        if let Ok(mut writes) = self.0.lock() {
            writes.push(Box::pin(write));
        }
    }

    /// Leaves the entry that finishes `ticket`'s command to the runner (its duration is taken now).
    pub fn finish_audit(
        &self,
        ticket: crate::store::audit::AuditTicket,
        outcome: AuditOutcome,
        exit_code: Option<i32>,
        reason: Option<String>,
    ) {
        let finish = ticket.finish(outcome, exit_code, reason);
        self.push(async move {
            if let Err(e) = finish.await {
                tracing::warn!(error = %e, "cannot finish an audit entry");
            }
        });
    }

    /// Runs `work`, then writes what it left — also when it failed.
    pub async fn after<T>(&self, work: impl std::future::Future<Output = T>) -> T {
        let out = work.await;
        self.write().await;
        out
    }

    /// Writes what was left, in the order it was left.
    pub async fn write(&self) {
        let writes: Vec<_> = self.0.lock().map(|mut w| w.drain(..).collect()).unwrap_or_default();
        for write in writes {
            write.await;
        }
    }
}

impl Env {
    /// The environment of a change started from `ctx` (the console, the CLI): its store, session and
    /// policy (parallelism, command timeout, history retention).
    pub fn from_context(
        ctx: &crate::context::Context,
        executor: Arc<Executor>,
        gate: ApprovalGate,
        cancel: CancellationToken,
        events: EventSender,
    ) -> Self {
        Self {
            store: ctx.store.clone(),
            executor,
            gate,
            session_id: ctx.session_id.clone(),
            requested_by: crate::ssh::target::local_user(),
            retention_days: ctx.config.policy.raw_log_retention_days,
            parallel: ctx.config.policy.max_parallel.max(1),
            timeout: ctx.config.command_timeout(),
            cancel,
            events,
            at_approval: AtApproval::Ask,
            ask_before_dry_run: false,
            deferred: Deferred::default(),
        }
    }
}

/// A change's approval: the gate's outcome and the exact command lines the person was shown. A kind
/// clears only those: a command built differently from what was approved (another inventory, another
/// context) does not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    outcome: GateOutcome,
    covers: Vec<String>,
}

impl Approved {
    /// `outcome` of `request`.
    pub fn of(outcome: GateOutcome, request: &ApprovalRequest) -> Self {
        Self { covers: request.covered(), outcome }
    }

    /// The clearance to run `command`: only a command line the approval covers.
    pub fn clearance(&self, command: &str) -> Option<crate::safety::clearance::Clearance> {
        if !self.covers.iter().any(|c| c == command) {
            tracing::warn!(command, "not cleared: the approval did not show this command");
            return None;
        }
        self.outcome.clearance(command)
    }

    /// The gate's outcome.
    pub fn outcome(&self) -> &GateOutcome {
        &self.outcome
    }
}

/// What one stage produced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StageOutcome {
    /// Whether it went well.
    pub ok: bool,
    /// One line for the stage list.
    pub detail: String,
    /// What the tools printed.
    pub output: String,
}

impl StageOutcome {
    /// A stage that went well.
    pub fn ok(detail: impl Into<String>, output: impl Into<String>) -> Self {
        Self { ok: true, detail: detail.into(), output: output.into() }
    }

    /// A stage that failed.
    pub fn failed(detail: impl Into<String>, output: impl Into<String>) -> Self {
        Self { ok: false, detail: detail.into(), output: output.into() }
    }
}

/// The dry run's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// How it went (a failed dry run ends the pipeline before any approval).
    pub outcome: StageOutcome,
    /// The diff to show (unified, or the tool's own per-resource text).
    pub diff: String,
    /// `false` when the tool says there is nothing to change: the run ends as succeeded, nothing asked.
    pub changes: bool,
}

/// Why a pipeline could not even be planned.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The request is wrong (a missing folder, a post-check that is not read-only…): nothing ran.
    #[error("{0}")]
    Invalid(String),
    /// A tool the kind needs is missing.
    #[error("{tool} was not found on this machine ({hint})")]
    ToolMissing { tool: String, hint: String },
    /// The record cannot be stored, so nothing runs.
    #[error("cannot store the pipeline run: {0}")]
    Store(#[from] crate::store::StoreError),
}

/// One change of some kind, driven by the [`runner`].
#[async_trait]
pub trait Change: Send + Sync {
    /// The tool.
    fn kind(&self) -> Kind;
    /// What it changes (hosts, a folder), for lists.
    fn targets(&self) -> String;
    /// What was asked, enough to build the change again ([`rebuild`]).
    fn spec(&self) -> Spec;
    /// Checks the request and works out what will run; nothing changes.
    async fn plan(&mut self, env: &Env, run: &PipelineRun) -> Result<StageOutcome, PipelineError>;
    /// What the plan itself runs, when that can fetch or run code (`terraform init` downloads
    /// providers and modules, `kubectl kustomize` renders remote bases): for a change the agent
    /// proposes, the dry-run question is asked before the plan and names it too.
    fn plan_command(&self) -> Option<String> {
        None
    }
    /// Gets ready for an on-demand rollback of `run` (the generated inventory, the run's folder), so
    /// that its approval names exactly what will run.
    async fn prepare_rollback(&mut self, _env: &Env, _run: &PipelineRun) -> Result<(), PipelineError> {
        Ok(())
    }
    /// What the dry run runs, when it can run code (a Terraform data source, an Ansible task with
    /// `check_mode: false`, an admission webhook): asked about first when the agent proposes the change.
    fn dry_run_command(&self) -> Option<String> {
        None
    }
    /// What in this change runs for real during its dry run (an Ansible task with `check_mode:
    /// false`, a delegation to this machine, a lookup that runs a command): a dry run with any is
    /// asked about first, whoever proposed the change, naming each.
    fn dry_run_hazards(&self) -> Vec<String> {
        Vec::new()
    }
    /// The dry run; `None` when the kind has none (Bash without a preview).
    async fn dry_run(&mut self, env: &Env, run: &PipelineRun) -> Option<DryRun>;
    /// The approval request: summary first, every target host, the diff, the post-check and rollback.
    fn approval(&self, run: &PipelineRun) -> ApprovalRequest;
    /// Writes a refusal (`Refused` by policy, `Denied` by a person, `Cancelled`) to the audit log, one
    /// entry per target.
    async fn audit_refused(&self, env: &Env, outcome: AuditOutcome, decided_by: &str, why: &str);
    /// Makes the change under `decision`.
    async fn apply(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> StageOutcome;
    /// Checks it; `None` when there is no post-check.
    async fn post_check(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome>;
    /// Undoes it; `None` when there is no rollback (the approval said so).
    async fn rollback(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome>;
    /// The approval an on-demand rollback of `run` asks for; `None` when the change has none.
    fn rollback_approval(&self, run: &PipelineRun) -> Option<ApprovalRequest>;
    /// What a later rollback needs, kept with the run.
    fn rollback_data(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
}

/// What was asked, by kind: stored with the run so that `resume` and `rollback` can build it again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Spec {
    /// A shell command on hosts.
    Bash(bash::BashSpec),
    /// A Terraform folder.
    Terraform(terraform::TerraformSpec),
    /// An Ansible playbook on hosts.
    Ansible(ansible::AnsibleSpec),
    /// Kubernetes manifests or a kustomize folder.
    Kubernetes(kubernetes::KubernetesSpec),
    /// A resource of the MCP backend (its calls need the console's or the CLI's servers).
    Mcp(McpSpec),
}

/// What a change of an MCP-backend resource is asked for, kept with its pipeline run (the change
/// itself is `provision::mcp_backend::McpChange`: it needs the servers of whoever drives it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpSpec {
    /// The resource's folder (its rendered `request.json`).
    pub dir: std::path::PathBuf,
    /// Remove the resource (its server's delete tool) instead of making it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
}

impl Spec {
    /// The spec as stored.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Builds the change a stored spec describes (for `resume` and `rollback`).
pub fn rebuild(spec: &serde_json::Value, hosts: &[crate::inventory::Host]) -> Result<Box<dyn Change>, PipelineError> {
    let spec: Spec = serde_json::from_value(spec.clone())
        .map_err(|e| PipelineError::Invalid(format!("the stored run cannot be read back ({e})")))?;
    build(spec, hosts)
}

/// Builds the change `spec` asks for, its hosts looked up in `hosts`.
pub fn build(spec: Spec, hosts: &[crate::inventory::Host]) -> Result<Box<dyn Change>, PipelineError> {
    Ok(match spec {
        Spec::Bash(spec) => Box::new(bash::BashChange::from_spec(spec, hosts)?),
        Spec::Terraform(spec) => Box::new(terraform::TerraformChange::new(spec)),
        Spec::Ansible(spec) => Box::new(ansible::AnsibleChange::from_spec(spec, hosts)?),
        Spec::Kubernetes(spec) => Box::new(kubernetes::KubernetesChange::new(spec)),
        Spec::Mcp(_) => {
            return Err(PipelineError::Invalid(
                "an MCP resource's change is not resumed: run it again (`merlya state reconcile`)".into(),
            ));
        }
    })
}

/// The glyph of a stage's status, the same on every screen (console pane, CLI lines).
pub fn stage_mark(status: StageStatus) -> &'static str {
    match status {
        StageStatus::Done => "✓",
        StageStatus::Failed | StageStatus::Denied | StageStatus::Interrupted => "✗",
        StageStatus::Skipped | StageStatus::Cancelled => "–",
        StageStatus::Running => "…",
    }
}

/// Makes a folder only merlya's user can read (plan files and configuration copies may hold secrets).
pub(crate) fn private_dir(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

/// The run's ids as a short reference for audit rows (`pipeline ID (stage)`).
pub fn audit_ref(run: &PipelineRun, stage: StageName) -> Option<String> {
    Some(format!("pipeline {} ({})", run.id, stage.as_str()))
}

#[cfg(test)]
mod tests {
    use super::Deferred;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn deferred_writes_run_once_in_the_order_they_were_left() {
        let deferred = Deferred::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..3 {
            let seen = seen.clone();
            deferred.push(async move { seen.lock().unwrap().push(i) });
        }
        let clone = deferred.clone();
        assert!(seen.lock().unwrap().is_empty(), "nothing runs before the runner writes them");
        clone.write().await;
        deferred.write().await;
        assert_eq!(*seen.lock().unwrap(), [0, 1, 2]);
    }
}
