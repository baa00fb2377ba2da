//! The Bash kind: a shell command on hosts, with an explicit read-only
//! post-check and a rollback command approved together with the change.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::fanout::{audited_fan_out, combined_output, describe_results};
use super::{
    Approved, Change, DryRun, Env, Kind, PipelineError, PipelineRun, Spec, StageName, StageOutcome, audit_ref,
};
use crate::approval::ApprovalRequest;
use crate::context::{audit_refused_all, audit_request};
use crate::exec::HostResult;
use crate::inventory::Host;
use crate::safety::leaks::{Leak, find_leaks};
use crate::safety::{Analysis, analyze};
use crate::store::audit::AuditOutcome;

/// Bytes of each host's output kept in a stage's record.
const OUTPUT_PER_HOST: usize = 8 * 1024;

/// What was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BashSpec {
    /// Target host names, as resolved when the change was asked.
    pub hosts: Vec<String>,
    /// What runs on each host.
    pub command: String,
    /// What the person sees as the command when it is not the command itself (a file write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display: Option<String>,
    /// One line: why (the agent's words, or `run on N hosts`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// A preview diff (a file edit's old → new content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// A read-only command whose success says the change worked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// A command that undoes the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback: Option<String>,
    /// What the person sees as the rollback when it is not the command itself (a file restored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollback_display: Option<String>,
    /// A file the change writes, put back by the rollback from the run's private copy (the
    /// rollback command, which holds its content, is built when it is needed, never stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<String>,
    /// That file's content before the change, kept in the run's private folder when it is planned
    /// (never in the database), and read back from there for an on-demand rollback.
    #[serde(skip)]
    pub previous: Option<PreviousFile>,
}

/// A file as it was before a change wrote it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviousFile {
    /// Its path on the host.
    pub path: String,
    /// Its bytes then.
    pub content: Vec<u8>,
}

/// A Bash change on its hosts.
pub struct BashChange {
    spec: BashSpec,
    hosts: Vec<Host>,
    analysis: Analysis,
    leaks: Vec<Leak>,
    /// Each host's result of the apply, once it ran.
    pub applied: Vec<HostResult>,
    /// Each host's result of the post-check, once it ran.
    pub checked: Vec<HostResult>,
}

impl BashChange {
    /// What the rollback runs: the command given, or the file put back from its private copy.
    fn rollback_command(&self) -> Option<String> {
        if let Some(rollback) = &self.spec.rollback {
            return Some(rollback.clone());
        }
        let path = self.spec.restore.as_ref()?;
        let previous = self.spec.previous.as_ref().filter(|p| &p.path == path)?;
        Some(crate::exec::file_write::command(path, &previous.content))
    }

    /// The change `spec` on `hosts` (already resolved by the caller).
    pub fn new(spec: BashSpec, hosts: Vec<Host>) -> Self {
        Self { spec, hosts, analysis: analyze(""), leaks: Vec::new(), applied: Vec::new(), checked: Vec::new() }
    }

    /// Builds it again from a stored spec; a host no longer in the inventory is an error.
    pub fn from_spec(spec: BashSpec, inventory: &[Host]) -> Result<Self, PipelineError> {
        let hosts = crate::inventory::resolve_targets(&spec.hosts.join(","), inventory, &[])
            .map_err(|e| PipelineError::Invalid(format!("the run's hosts cannot be found again: {e}")))?;
        Ok(Self::new(spec, hosts))
    }

    fn shown_command(&self) -> &str {
        self.spec.display.as_deref().unwrap_or(&self.spec.command)
    }

    fn names(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.name.clone()).collect()
    }

    /// Every host's leaks, once each.
    fn leaks_of(command: &str, hosts: &[Host]) -> Vec<Leak> {
        let mut leaks: Vec<Leak> = Vec::new();
        for host in hosts {
            for leak in find_leaks(command, &host.name) {
                if !leaks.iter().any(|l| l.what == leak.what && l.rewrite == leak.rewrite) {
                    leaks.push(leak);
                }
            }
        }
        leaks
    }

    async fn run_on(
        &self,
        env: &Env,
        hosts: &[Host],
        command: &str,
        decision: &Approved,
        why: Option<String>,
    ) -> (StageOutcome, Vec<HostResult>) {
        let Some(clearance) = decision.clearance(command) else {
            return (StageOutcome::failed(format!("`{command}` was not cleared to run"), ""), Vec::new());
        };
        match audited_fan_out(env, hosts, clearance, why).await {
            Ok(results) => {
                let ok = !results.is_empty() && results.iter().all(HostResult::success);
                let outcome = StageOutcome {
                    ok,
                    detail: describe_results(&results),
                    output: combined_output(&results, OUTPUT_PER_HOST),
                };
                (outcome, results)
            }
            Err(e) => (StageOutcome::failed(format!("{e:#}"), ""), Vec::new()),
        }
    }
}

#[async_trait]
impl Change for BashChange {
    fn kind(&self) -> Kind {
        Kind::Bash
    }

    fn targets(&self) -> String {
        crate::exec::runs::compress_names(&self.names())
    }

    fn spec(&self) -> Spec {
        Spec::Bash(self.spec.clone())
    }

    async fn plan(&mut self, env: &Env, run: &PipelineRun) -> Result<StageOutcome, PipelineError> {
        if self.hosts.is_empty() {
            return Err(PipelineError::Invalid("no target host".into()));
        }
        if self.spec.command.trim().is_empty() {
            return Err(PipelineError::Invalid("no command".into()));
        }
        // The post-check runs without a further question, so it must be proven read-only.
        if let Some(check) = &self.spec.check {
            let checked = analyze(check);
            if !checked.is_read_only() {
                return Err(PipelineError::Invalid(format!(
                    "the post-check `{check}` is not read-only ({}); a post-check must only look",
                    checked.reasons.join("; ")
                )));
            }
        }
        let mut analysis = analyze(&self.spec.command);
        // The rollback is approved together with the change: its risk counts, and a stored rule
        // covers the pair only when it covers both.
        if let Some(rollback) = &self.rollback_command() {
            let undo = analyze(rollback);
            analysis.class = analysis.class.max(undo.class);
            for reason in undo.reasons {
                let reason = format!("rollback: {reason}");
                if !analysis.reasons.contains(&reason) {
                    analysis.reasons.push(reason);
                }
            }
            analysis.rule_keys = match (analysis.rule_keys.take(), undo.rule_keys) {
                (Some(mut keys), Some(more)) => {
                    keys.extend(more.into_iter().filter(|k| !keys.contains(k)).collect::<Vec<_>>());
                    Some(keys)
                }
                _ => None,
            };
        }
        // The leak check covers every target host, not only the first.
        self.leaks = Self::leaks_of(&self.spec.command, &self.hosts);
        if let Some(previous) = &self.spec.previous {
            keep_previous(&env.store.pipelines_dir().join(&run.id), previous)
                .map_err(|e| PipelineError::Invalid(format!("keeping {} before the change: {e}", previous.path)))?;
        }
        self.analysis = analysis;
        let detail =
            format!("$ {} on {} host(s): {}", self.shown_command(), self.hosts.len(), self.analysis.class.as_str());
        Ok(StageOutcome::ok(detail, self.analysis.reasons.join("\n")))
    }

    async fn dry_run(&mut self, _env: &Env, _run: &PipelineRun) -> Option<DryRun> {
        let diff = self.spec.diff.clone()?;
        Some(DryRun { outcome: StageOutcome::ok("preview of the change", ""), diff, changes: true })
    }

    fn approval(&self, _run: &PipelineRun) -> ApprovalRequest {
        let summary = self.spec.summary.clone().unwrap_or_else(|| format!("run on {} host(s)", self.hosts.len()));
        let mut request =
            ApprovalRequest::new(summary, &self.spec.command, self.names(), &self.analysis, self.leaks.clone());
        request.command = self.shown_command().to_string();
        if request.command != self.spec.command {
            // A summary stands for the script (a file edit): the script is what runs, its diff is shown.
            request.runs.push(self.spec.command.clone());
        }
        request.diff = self.spec.diff.clone();
        request.post_check = self.spec.check.clone();
        let rollback = self.rollback_command();
        request.rollback = self.spec.rollback_display.clone().or_else(|| rollback.clone());
        if let (Some(_), Some(rollback)) = (&self.spec.rollback_display, rollback) {
            request.runs.push(rollback);
        }
        request
    }

    fn rollback_approval(&self, run: &PipelineRun) -> Option<ApprovalRequest> {
        let rollback = &self.rollback_command()?;
        let leaks = Self::leaks_of(rollback, &self.hosts);
        let summary = match &self.spec.rollback_display {
            Some(shown) => format!("roll back change {} on {} host(s): {shown}", run.id, self.hosts.len()),
            None => format!("roll back change {} on {} host(s)", run.id, self.hosts.len()),
        };
        Some(ApprovalRequest::new(summary, rollback, self.names(), &analyze(rollback), leaks))
    }

    async fn audit_refused(&self, env: &Env, outcome: AuditOutcome, decided_by: &str, why: &str) {
        let requests: Vec<_> = self
            .hosts
            .iter()
            .map(|h| {
                audit_request(&env.session_id, &env.executor, &env.requested_by, h, self.shown_command(), decided_by)
            })
            .collect();
        audit_refused_all(&env.store, &requests, outcome, why).await;
    }

    async fn apply(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> StageOutcome {
        let why = audit_ref(run, StageName::Apply);
        let (outcome, results) = self.run_on(env, &self.hosts, &self.spec.command, decision, why).await;
        self.applied = results;
        outcome
    }

    async fn post_check(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome> {
        let check = self.spec.check.clone()?;
        let why = audit_ref(run, StageName::PostCheck);
        let (outcome, results) = self.run_on(env, &self.hosts, &check, decision, why).await;
        self.checked = results;
        Some(outcome)
    }

    async fn prepare_rollback(&mut self, env: &Env, run: &PipelineRun) -> Result<(), PipelineError> {
        // An on-demand rollback of a file edit: the file as it was, from the run's private copy.
        if let (Some(path), None) = (&self.spec.restore, &self.spec.previous) {
            let copy = previous_copy(&env.store.pipelines_dir().join(&run.id), path);
            let content = std::fs::read(&copy).map_err(|e| {
                PipelineError::Invalid(format!(
                    "the copy of {path} kept before change {} ({}): {e}",
                    run.id,
                    copy.display()
                ))
            })?;
            self.spec.previous = Some(PreviousFile { path: path.clone(), content });
        }
        Ok(())
    }

    async fn rollback(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome> {
        let rollback = self.rollback_command()?;
        // After a failed apply or check, the hosts it failed on; on demand (nothing in memory), every host.
        let failed: Vec<&str> = self
            .applied
            .iter()
            .chain(&self.checked)
            .filter(|r| !r.success() && r.exit_code.is_some())
            .map(|r| r.host.as_str())
            .collect();
        let hosts: Vec<Host> = if self.applied.is_empty() {
            self.hosts.clone()
        } else {
            self.hosts.iter().filter(|h| failed.contains(&h.name.as_str())).cloned().collect()
        };
        if hosts.is_empty() {
            return Some(StageOutcome::failed("no host ran the change far enough to roll it back", ""));
        }
        let why = audit_ref(run, StageName::Rollback);
        let (outcome, _) = self.run_on(env, &hosts, &rollback, decision, why).await;
        Some(outcome)
    }
}

/// Where the private copy of the file at `path` lives in the run's folder `dir`: named by a hash of
/// the path (a path is no file name: `/`, `..`, 4096 bytes).
fn previous_copy(dir: &std::path::Path, path: &str) -> std::path::PathBuf {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(path.as_bytes());
    let name: String = hash.iter().take(16).map(|b| format!("{b:02x}")).collect();
    dir.join("previous").join(name)
}

/// Writes `previous` under `dir/previous/` (the run's private folder, merlya's user only).
fn keep_previous(dir: &std::path::Path, previous: &PreviousFile) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let copy = previous_copy(dir, &previous.path);
    if let Some(folder) = copy.parent() {
        super::private_dir(folder)?;
    }
    let mut file = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(copy)?;
    file.write_all(&previous.content)
}
