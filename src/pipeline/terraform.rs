//! The Terraform kind: `init`, `plan -out -detailed-exitcode` read through
//! `show -json` (see [`super::terraform_plan`]), approval of the summary and
//! per-resource diff, `apply` of exactly the approved saved plan (its hash is
//! checked), a post-check `plan -detailed-exitcode` expecting no change, and a
//! rollback that plans and applies the previous configuration (kept with the
//! run) through approval again.
//!
//! Variables travel as `TF_VAR_*` environment values, never on a command line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::terraform_copy::PlannedCopy;
use super::terraform_plan::{PlanSummary, parse};
use super::tool::{self, ToolCall, ToolEnv, ToolOutput, run_cleared};
use super::vars::Vars;
use super::{
    Approved, Change, DryRun, Env, Kind, PipelineError, PipelineRun, Spec, StageName, StageOutcome, private_dir,
};
use crate::approval::ApprovalRequest;
use crate::home::write_private;
use crate::safety::clearance::Clearance;
use crate::safety::{Analysis, Class};
use crate::store::audit::{AuditOutcome, AuditRequest};

/// Largest configuration kept with a run for its rollback.
const SNAPSHOT_LIMIT: usize = 2 * 1024 * 1024;

/// What was asked: a folder and its variables.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerraformSpec {
    /// The configuration folder (absolute).
    pub dir: PathBuf,
    /// Variables, in the order given (passed as `TF_VAR_name`; values kept out of the database).
    #[serde(default)]
    pub vars: Vars,
    /// Accept what is there: a refresh-only plan and apply, so the state records the real objects
    /// and nothing outside changes. Asked about even when nothing was refreshed, since whoever
    /// drives it records the result as expected (`merlya state accept`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub refresh_only: bool,
    /// Environment variables of Terraform itself (a provider's credentials, read by the
    /// provisioner's resolver): every value masked in its output, and never stored — not even
    /// by name with the run.
    #[serde(skip)]
    pub env: Vars,
}

/// A configuration's files (relative path → content): what rollback goes back to.
pub type Snapshot = BTreeMap<String, String>;

/// What a rollback of a Terraform run needs, kept with the run. Configurations are copied into the
/// run's private folder, not the database: a `.tf` or `.tfvars` file may hold a secret.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RollbackData {
    /// Where the configuration this run applies was copied.
    pub applied: Option<PathBuf>,
    /// Where the configuration before it (the last successful run's) was copied, if known.
    pub previous: Option<PathBuf>,
    /// The run `previous` comes from.
    pub previous_run: Option<String>,
    /// No previous configuration, but the state was empty before: rolling back destroys what the run made.
    pub destroy_on_rollback: bool,
    /// The folder was on this workspace (not `default`): no rollback is offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
}

/// A Terraform change.
pub struct TerraformChange {
    spec: TerraformSpec,
    work: PathBuf,
    plan_hash: Option<String>,
    plan: Option<PlanSummary>,
    rollback: RollbackData,
    started: Option<StartedInit>,
    /// What the plan runs on this machine (`external` data sources): asked about before it.
    hazards: Vec<String>,
    /// What the apply runs on this machine (`local-exec`): named in the approval.
    controller: Vec<String>,
    /// The folder as planned (scripts a `local-exec` runs among them), copied into the run's folder
    /// after `init`: the dry run, the apply and the post-check run there, so a file swapped in the
    /// original while the approval waits is never read. Its fingerprint is checked before the apply.
    planned: Option<PlannedCopy>,
    /// Further lines for the approval, from whoever drives the change (what an accept records).
    reasons: Vec<String>,
    /// An accept whose refresh found nothing: Terraform will not apply such a plan, so the apply
    /// stage has nothing to run (its driver still records the approved result).
    nothing_to_refresh: bool,
}

/// `terraform init`, started before merlya's own setup (logging, the store, the record) by
/// [`TerraformChange::start_init`], with what was read in the folder before it began.
struct StartedInit {
    config: Option<Snapshot>,
    folder: FolderState,
    init: tokio::task::JoinHandle<ToolOutput>,
    /// Stops that `init` alone (a child of the run's cancel): a plan that fails before taking it.
    stop: tokio_util::sync::CancellationToken,
}

impl TerraformChange {
    /// The change `spec` asks for.
    pub fn new(spec: TerraformSpec) -> Self {
        Self {
            spec,
            work: PathBuf::new(),
            plan_hash: None,
            plan: None,
            rollback: RollbackData::default(),
            started: None,
            hazards: Vec::new(),
            controller: Vec::new(),
            planned: None,
            reasons: Vec::new(),
            nothing_to_refresh: false,
        }
    }

    /// The same change, with `reasons` added to its approval (what the driver does with its result).
    pub fn with_reasons(mut self, reasons: Vec<String>) -> Self {
        self.reasons = reasons;
        self
    }

    /// `-refresh-only` for an accept, nothing otherwise.
    fn mode_args(&self) -> &'static [&'static str] {
        if self.spec.refresh_only { &["-refresh-only"] } else { &[] }
    }

    /// Copies the folder into the run's folder (what Terraform writes itself, state above all, is
    /// linked to the original: the apply updates the folder's own state, under its lock).
    fn pin_folder(&mut self, config: Option<&Snapshot>) -> Result<(), PipelineError> {
        let planned = PlannedCopy::make(&self.spec.dir, &self.work.join("planned"), config)
            .map_err(|e| PipelineError::Invalid(format!("cannot copy {} for the run: {e}", self.dir())))?;
        // What runs on this machine is read from the copy that runs.
        if let Some(config) = snapshot(&planned.dir()) {
            self.hazards = super::terraform_code::dry_run_hazards(&config);
            self.controller = super::terraform_code::controller_programs(&config);
        }
        self.planned = Some(planned);
        Ok(())
    }

    /// Runs `call` (cleared by `clearance` when it changes something); in the planned copy, with its
    /// links to the folder in place before and Terraform's empty leftovers removed after.
    async fn run(&self, env: &Env, call: &ToolCall, clearance: Option<&Clearance>) -> ToolOutput {
        let copy = self.planned.as_ref().filter(|p| call.cwd == p.dir());
        if let Some(Err(e)) = copy.map(PlannedCopy::relink) {
            return ToolOutput { error: Some(e), ..ToolOutput::default() };
        }
        let out = match clearance {
            Some(clearance) => run_cleared(env, call, clearance).await,
            None => tool::run(env, call).await,
        };
        if let Some(copy) = copy {
            copy.tidy();
        }
        out
    }

    /// Where the dry run, the apply and the post-check run: the planned copy.
    fn planned_dir(&self) -> PathBuf {
        self.planned.as_ref().map_or_else(|| self.spec.dir.clone(), PlannedCopy::dir)
    }

    /// Starts `terraform init` at once, for a change a person started (a change the agent proposes
    /// asks before its plan runs anything): it changes nothing but the folder's `.terraform*`, as the
    /// person typing it would, and it is most of a plan's time, so merlya's own setup runs beside it
    /// (ADR 0024). A folder the plan would refuse starts nothing; the plan then says why.
    /// `finished` is cancelled when that `init` has ended: a command that fails before its plan took it
    /// cancels `tools.cancel` and waits for `finished`; a plan that fails before taking it stops it.
    pub fn start_init(&mut self, tools: ToolEnv, finished: tokio_util::sync::CancellationToken) {
        let Ok(config) = self.checked_config() else {
            finished.cancel();
            return;
        };
        let folder = FolderState::read(&self.spec.dir);
        let stop = tools.cancel.child_token();
        let init = tool::start(ToolEnv { cancel: stop.clone(), ..tools }, self.init_call(), finished);
        self.started = Some(StartedInit { config, folder, init, stop });
    }

    /// The folder's configuration, after the checks a plan makes before it runs anything.
    fn checked_config(&self) -> Result<Option<Snapshot>, PipelineError> {
        tool::require("terraform", "install it and make sure it is on PATH")?;
        if !self.spec.dir.is_dir() {
            return Err(PipelineError::Invalid(format!("{} is not a folder", self.dir())));
        }
        for name in self.spec.vars.names() {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(PipelineError::Invalid(format!("`{name}` is not a Terraform variable name")));
            }
        }
        let config = snapshot(&self.spec.dir);
        if config.as_ref().is_some_and(|c| !c.keys().any(|f| f.ends_with(".tf") || f.ends_with(".tf.json"))) {
            return Err(PipelineError::Invalid(format!("{} holds no Terraform configuration (*.tf)", self.dir())));
        }
        Ok(config)
    }

    /// The run's private folder, with the variables it plans with (restored for a resumed run).
    fn make_work(&mut self, env: &Env, run: &PipelineRun) -> Result<(), PipelineError> {
        private_dir(&self.work)
            .map_err(|e| PipelineError::Invalid(format!("cannot make {}: {e}", self.work.display())))?;
        self.spec.vars.restore(env, run)?;
        self.spec
            .vars
            .save(&self.work)
            .map_err(|e| PipelineError::Invalid(format!("cannot keep the variables in {}: {e}", self.work.display())))
    }

    fn init_call(&self) -> ToolCall {
        self.call(&["init", "-input=false", "-no-color"], &self.spec.dir)
    }

    fn call(&self, args: &[&str], cwd: &Path) -> ToolCall {
        let mut call = ToolCall::new("terraform", args, cwd);
        call.label = "terraform".into();
        for (k, v) in [("TF_IN_AUTOMATION", "1"), ("TF_INPUT", "0"), ("CHECKPOINT_DISABLE", "1")] {
            call.env.insert(k.into(), v.into());
        }
        for (name, value) in self.spec.vars.iter() {
            call.env.insert(format!("TF_VAR_{name}"), value.to_string());
        }
        call.secrets = self.spec.vars.secret_values();
        for (name, value) in self.spec.env.iter() {
            call.env.insert(name.to_string(), value.to_string());
            call.secrets.push(value.to_string());
        }
        call
    }

    /// The plan as shown and kept: Terraform masks what the configuration declares sensitive, and
    /// merlya the values of secret-named `--var`s it may not have.
    fn shown(&self, plan: &PlanSummary) -> String {
        crate::secrets::reference::mask_values(&plan.render(), &self.spec.vars.secret_values())
    }

    fn plan_file(&self, name: &str) -> PathBuf {
        self.work.join(name)
    }

    fn apply_call(&self) -> ToolCall {
        let plan = self.plan_file("change.tfplan").display().to_string();
        self.call(&["apply", "-input=false", "-no-color", &plan], &self.planned_dir())
    }

    fn dir(&self) -> String {
        self.spec.dir.display().to_string()
    }

    /// An audit row for a terraform command run here (the folder named after it).
    fn audit(&self, env: &Env, command: &str, approved_by: &str, approval_ref: Option<String>) -> AuditRequest {
        tool::local_audit(env, &format!("{command}  # in {}", self.dir()), approved_by, approval_ref)
    }

    /// Runs a call that changes state, cleared by `decision`, with its audit row around it.
    async fn apply_audited(
        &self,
        env: &Env,
        call: &ToolCall,
        decision: &Approved,
        run: &PipelineRun,
        stage: StageName,
    ) -> ToolOutput {
        let Some(clearance) = decision.clearance(&call.display()) else {
            return ToolOutput { error: Some("not approved".into()), ..ToolOutput::default() };
        };
        let request = self.audit(env, &call.display(), clearance.approved_by(), super::audit_ref(run, stage));
        let ticket = match env.store.audit_start(request).await {
            Ok(ticket) => ticket,
            Err(e) => {
                return ToolOutput {
                    error: Some(format!("not run: the audit log cannot be written ({e})")),
                    ..ToolOutput::default()
                };
            }
        };
        let out = self.run(env, call, Some(&clearance)).await;
        let outcome = match (out.code, &out.error) {
            (Some(0), None) => AuditOutcome::Ok,
            (_, Some(e)) if e == "cancelled" => AuditOutcome::Cancelled,
            (_, Some(e)) if e.starts_with("timed out") => AuditOutcome::TimedOut,
            _ => AuditOutcome::Failed,
        };
        env.deferred.finish_audit(ticket, outcome, out.code, out.error.clone());
        out
    }

    /// `plan -out FILE -detailed-exitcode` then `show -json FILE`, in `cwd`.
    async fn plan_into(
        &self,
        env: &Env,
        cwd: &Path,
        file: &Path,
        extra: &[&str],
    ) -> Result<Option<PlanSummary>, StageOutcome> {
        let out_arg = format!("-out={}", file.display());
        let mut args = vec!["plan", "-input=false", "-no-color", "-detailed-exitcode", out_arg.as_str()];
        args.extend_from_slice(extra);
        let planned = self.run(env, &self.call(&args, cwd), None).await;
        match planned.code {
            Some(0) => return Ok(None),
            Some(2) => {}
            _ => return Err(failed("terraform plan failed", &planned)),
        }
        let file = file.display().to_string();
        let mut show = self.call(&["show", "-no-color", "-json", &file], cwd);
        show.live_stdout = false;
        let shown = self.run(env, &show, None).await;
        if shown.code != Some(0) {
            return Err(failed("terraform show -json failed", &shown));
        }
        // Only the parsed summary is kept: the JSON holds variable values, sensitive ones included.
        parse(&shown.stdout).map(Some).map_err(|e| StageOutcome::failed(e, planned.text()))
    }

    /// The last successful run's configuration on this folder: what a rollback goes back to. Without
    /// one, a rollback destroys what the change creates only when the state is known to be empty: kept
    /// in the folder (no other backend) and in the default workspace. A folder on another workspace
    /// gets no rollback: the copy a rollback plans in would select the default one.
    async fn previous_config(
        &mut self,
        env: &Env,
        run: &PipelineRun,
        config: Option<&Snapshot>,
        folder: FolderState,
    ) -> Result<(), PipelineError> {
        if let Some(workspace) = folder.workspace {
            self.rollback.workspace = Some(workspace);
            return Ok(());
        }
        let runs = env.store.succeeded_runs_in_folder(Kind::Terraform, &self.dir()).await?;
        let last = runs.iter().filter(|r| r.id != run.id).find(|r| r.stage(StageName::Apply).is_some());
        if let Some(last) = last
            && let Ok(data) = serde_json::from_value::<RollbackData>(last.rollback_data.clone())
            && data.applied.is_some()
        {
            self.rollback.previous = data.applied;
            self.rollback.previous_run = Some(last.id.clone());
        } else {
            self.rollback.destroy_on_rollback = config.is_some_and(local_state) && folder.state_is_empty;
        }
        Ok(())
    }

    /// What a rollback of `run` would do, in words; `None` when it has none.
    fn rollback_words(data: &RollbackData) -> Option<String> {
        match (&data.previous_run, data.destroy_on_rollback) {
            (Some(id), _) => Some(format!(
                "plan and apply the configuration of change {id} (shown and approved again before it applies)"
            )),
            (None, true) => {
                Some("destroy what this change creates (shown and approved again before it applies)".into())
            }
            (None, false) => None,
        }
    }

    /// The approval of a Terraform plan (change or rollback).
    fn request(&self, summary: String, command: String, plan: &PlanSummary, diff: String) -> ApprovalRequest {
        let destroys = plan.destroys();
        let mut reasons: Vec<String> = destroys.iter().map(|a| format!("destroys {a}")).collect();
        reasons.push("applies exactly the saved plan shown here".into());
        let class = if destroys.is_empty() { Class::Mutating } else { Class::Dangerous };
        let analysis = Analysis { class, reasons, commands: vec![command.clone()], rule_keys: None };
        let mut request = ApprovalRequest::new(summary, &command, vec![self.dir()], &analysis, Vec::new());
        request.diff = Some(diff);
        request
    }

    /// The approval of an accept: what the refresh records, what the driver records, no rollback.
    fn accept_request(&self, plan: &PlanSummary) -> ApprovalRequest {
        let refreshed = match plan.drift.len() {
            0 => "no object changed outside Terraform".to_string(),
            n => format!("{n} object(s) changed outside Terraform recorded in the state"),
        };
        let summary = format!("terraform {}: accept what is there ({refreshed})", self.dir());
        let mut request = self.request(summary, self.apply_call().display(), plan, self.shown(plan));
        request.reasons.push("refresh-only: the state records the real objects; nothing outside is changed".into());
        request.reasons.extend(self.reasons.iter().cloned());
        request.reasons.push(
            "no rollback: a refresh-only apply changes the state only (Terraform keeps the one before in terraform.tfstate.backup)".into(),
        );
        request.post_check = Some("terraform plan -refresh-only -detailed-exitcode (expects no change)".into());
        request
    }

    /// Plans the rollback of `run` in a workspace beside it, asks for it, and applies it.
    async fn roll_back(&self, env: &Env, run: &PipelineRun) -> StageOutcome {
        let data: RollbackData = serde_json::from_value(run.rollback_data.clone()).unwrap_or_default();
        let work = env.store.pipelines_dir().join(&run.id).join("rollback");
        let previous = data.previous.as_deref().and_then(snapshot);
        if data.previous.is_some() && previous.is_none() {
            return StageOutcome::failed("the previous configuration kept for this rollback cannot be read", "");
        }
        let (cwd, state_args): (PathBuf, Vec<String>) = match (&previous, data.destroy_on_rollback) {
            (Some(previous), _) => {
                let _ = std::fs::remove_dir_all(&work);
                if let Err(e) = private_dir(&work) {
                    return StageOutcome::failed(format!("cannot make {}: {e}", work.display()), "");
                }
                if let Err(e) = save_snapshot(previous, &work) {
                    return StageOutcome::failed(format!("cannot write the previous configuration: {e}"), "");
                }
                let local = local_state(previous);
                let state = self.spec.dir.join("terraform.tfstate").display().to_string();
                let init = tool::run(env, &self.call(&["init", "-input=false", "-no-color"], &work)).await;
                if init.code != Some(0) {
                    return failed("terraform init of the previous configuration failed", &init);
                }
                (work.clone(), if local { vec![format!("-state={state}")] } else { Vec::new() })
            }
            (None, true) => (self.spec.dir.clone(), vec!["-destroy".to_string()]),
            (None, false) => return StageOutcome::failed("no previous configuration is known for this folder", ""),
        };
        if let Err(e) = private_dir(&work) {
            return StageOutcome::failed(format!("cannot make {}: {e}", work.display()), "");
        }
        let file = work.join("rollback.tfplan");
        let extra: Vec<&str> = state_args.iter().map(String::as_str).collect();
        let plan = match self.plan_into(env, &cwd, &file, &extra).await {
            Ok(Some(plan)) => plan,
            Ok(None) => return StageOutcome::ok("nothing to roll back: the state already matches", ""),
            Err(failure) => return failure,
        };
        let mut args: Vec<String> = vec!["apply".into(), "-input=false".into(), "-no-color".into()];
        args.extend(state_args.iter().filter(|a| a.starts_with("-state=")).cloned());
        args.push(file.display().to_string());
        let arg_refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let call = self.call(&arg_refs, &cwd);
        let summary = format!("roll back terraform {} (change {}): {}", self.dir(), run.id, plan.line());
        let mut request = self.request(summary, call.display(), &plan, self.shown(&plan));
        request.kind = Some(crate::store::pipelines::Kind::Terraform);
        let decision = env.gate.check(&request).await;
        if decision.approved_by().is_none() {
            let by = decision.decided_by();
            self.audit_refused(env, AuditOutcome::Denied, &by, &format!("rollback denied by {by}")).await;
            return StageOutcome::failed(format!("the rollback plan ({}) was denied by {by}", plan.line()), "");
        }
        let out = self.apply_audited(env, &call, &Approved::of(decision, &request), run, StageName::Rollback).await;
        if out.code == Some(0) {
            StageOutcome::ok(format!("rolled back: {}", plan.line()), out.text())
        } else {
            failed("terraform apply of the rollback failed", &out)
        }
    }
}

fn failed(what: &str, out: &ToolOutput) -> StageOutcome {
    let code = out.code.map_or_else(|| out.error.clone().unwrap_or_default(), |c| format!("exit code {c}"));
    let last = out.stderr.lines().rev().find(|l| !l.trim().is_empty() && !l.starts_with('│') || l.contains("Error"));
    let detail = match last {
        Some(line) => format!("{what} ({code}): {}", line.trim_start_matches(['│', ' '])),
        None => format!("{what} ({code})"),
    };
    StageOutcome::failed(detail, out.text())
}

/// The folder's configuration files, recursively (not `.terraform`, state or hidden folders).
fn snapshot(dir: &Path) -> Option<Snapshot> {
    fn walk(root: &Path, dir: &Path, out: &mut Snapshot, size: &mut usize) -> Option<()> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            if path.is_dir() {
                walk(root, &path, out, size)?;
            } else if [".tf", ".tf.json", ".tfvars", ".tfvars.json"].iter().any(|s| name.ends_with(s)) {
                let text = std::fs::read_to_string(&path).ok()?;
                *size += text.len();
                if *size > SNAPSHOT_LIMIT {
                    return None;
                }
                out.insert(path.strip_prefix(root).ok()?.display().to_string(), text);
            }
        }
        Some(())
    }
    let mut out = Snapshot::new();
    walk(dir, dir, &mut out, &mut 0)?;
    Some(out)
}

/// Writes a configuration's files under `dir` (private: they may hold secrets).
fn save_snapshot(config: &Snapshot, dir: &Path) -> std::io::Result<()> {
    private_dir(dir)?;
    for (file, text) in config {
        let path = dir.join(file);
        if let Some(parent) = path.parent() {
            private_dir(parent)?;
        }
        write_private(&path, text.as_bytes())?;
    }
    Ok(())
}

/// The workspace the folder is on, when not `default`: `TF_WORKSPACE`, else what `terraform workspace
/// select` wrote in `.terraform/environment`.
fn current_workspace(dir: &Path) -> Option<String> {
    let chosen = std::env::var("TF_WORKSPACE")
        .ok()
        .or_else(|| std::fs::read_to_string(dir.join(".terraform").join("environment")).ok())?;
    let chosen = chosen.trim();
    (!chosen.is_empty() && chosen != "default").then(|| chosen.to_string())
}

/// What the rollback's choice depends on in the folder, read before `init` runs.
struct FolderState {
    /// The workspace, when not `default`.
    workspace: Option<String>,
    /// Whether the local state holds no resource.
    state_is_empty: bool,
}

impl FolderState {
    fn read(dir: &Path) -> Self {
        Self { workspace: current_workspace(dir), state_is_empty: state_is_empty(dir) }
    }
}

/// Whether the folder's state holds no resource (no state file counts as empty).
fn state_is_empty(dir: &Path) -> bool {
    match std::fs::read_to_string(dir.join("terraform.tfstate")) {
        Err(_) => true,
        // Terraform reads an empty file as no state (a plan that was stopped leaves one).
        Ok(text) if text.trim().is_empty() => true,
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("resources").and_then(|r| r.as_array()).map(Vec::is_empty))
            .unwrap_or(false),
    }
}

/// Whether the configuration keeps its state in the folder: no `backend` block other than `local`, no
/// `cloud` block.
fn local_state(config: &Snapshot) -> bool {
    !config.iter().any(|(file, text)| {
        let hcl = text.lines().map(str::trim).any(|line| {
            (line.starts_with("backend ") && !line.starts_with("backend \"local\""))
                || line.starts_with("cloud ")
                || line.starts_with("cloud{")
        });
        let json = file.ends_with(".json") && (text.contains("\"backend\"") || text.contains("\"cloud\""));
        hcl || json
    })
}

fn sha256_file(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|bytes| hex::encode(Sha256::digest(bytes)))
}

#[async_trait]
impl Change for TerraformChange {
    fn kind(&self) -> Kind {
        Kind::Terraform
    }

    fn targets(&self) -> String {
        self.dir()
    }

    fn spec(&self) -> Spec {
        Spec::Terraform(self.spec.clone())
    }

    async fn plan(&mut self, env: &Env, run: &PipelineRun) -> Result<StageOutcome, PipelineError> {
        // `init` runs while the rollback's needs are worked out (the last good run, a copy of the
        // configuration); what they read in the folder is read before it starts, since `init` writes
        // `.terraform*` (no copy holds those) and can select a workspace itself.
        let (config, folder, started) = match self.started.take() {
            Some(StartedInit { config, folder, init, stop }) => (config, folder, Some((init, stop))),
            None => {
                let config = self.checked_config()?;
                (config, FolderState::read(&self.spec.dir), None)
            }
        };
        if let Some(config) = &config {
            self.hazards = super::terraform_code::dry_run_hazards(config);
            self.controller = super::terraform_code::controller_programs(config);
        }
        self.work = env.store.pipelines_dir().join(&run.id);
        if let Err(e) = self.make_work(env, run) {
            // An `init` started early is not left running: stopped as Ctrl-C would (its whole process
            // group) and waited for, so nothing it started outlives merlya or is cut off mid-write.
            if let Some((init, stop)) = started {
                stop.cancel();
                let _ = init.await;
            }
            return Err(e);
        }
        let started = started.map(|(init, _)| init);
        let init_call = self.init_call();
        let init = async {
            match started {
                Some(init) => init.await.unwrap_or_else(|e| ToolOutput {
                    error: Some(format!("terraform init was lost: {e}")),
                    ..ToolOutput::default()
                }),
                None => tool::run(env, &init_call).await,
            }
        };
        let kept = self.work.join("config");
        let refresh_only = self.spec.refresh_only;
        let prepare = async {
            // An accept changes only the state: no configuration to go back to.
            if !refresh_only {
                self.previous_config(env, run, config.as_ref(), folder).await?;
            }
            if let Some(config) = &config {
                save_snapshot(config, &kept)
                    .map_err(|e| PipelineError::Invalid(format!("cannot keep a copy of the configuration: {e}")))?;
                self.rollback.applied = Some(kept.clone());
            }
            Ok::<(), PipelineError>(())
        };
        let (init, prepared) = tokio::join!(init, prepare);
        prepared?;
        if init.code != Some(0) {
            return Ok(failed("terraform init failed", &init));
        }
        self.pin_folder(config.as_ref())?;
        let files = config.as_ref().map_or(0, BTreeMap::len);
        Ok(StageOutcome::ok(format!("terraform in {} ({files} configuration file(s))", self.dir()), init.text()))
    }

    fn plan_command(&self) -> Option<String> {
        Some(format!("terraform init -input=false -no-color  # in {}", self.dir()))
    }

    fn dry_run_command(&self) -> Option<String> {
        Some(format!("terraform plan -detailed-exitcode -out=PLAN  # in {}", self.dir()))
    }

    fn dry_run_hazards(&self) -> Vec<String> {
        self.hazards.clone()
    }

    async fn dry_run(&mut self, env: &Env, _run: &PipelineRun) -> Option<DryRun> {
        let file = self.plan_file("change.tfplan");
        Some(match self.plan_into(env, &self.planned_dir(), &file, self.mode_args()).await {
            // An accept with nothing refreshed is still asked about: its driver records the result.
            Ok(None) if self.spec.refresh_only => {
                self.nothing_to_refresh = true;
                self.plan = Some(PlanSummary::default());
                DryRun {
                    outcome: StageOutcome::ok("no object changed outside Terraform: the state stays as it is", ""),
                    diff: String::new(),
                    changes: true,
                }
            }
            Ok(None) => DryRun {
                outcome: StageOutcome::ok("no changes: the infrastructure matches the configuration", ""),
                diff: String::new(),
                changes: false,
            },
            Ok(Some(plan)) => {
                self.plan_hash = sha256_file(&file);
                let diff = self.shown(&plan);
                crate::metrics::drift(plan.drift.len() as u64);
                let detail = if plan.drift.is_empty() {
                    plan.line()
                } else {
                    format!("{}; {} resource(s) drifted outside Terraform", plan.line(), plan.drift.len())
                };
                self.plan = Some(plan);
                DryRun { outcome: StageOutcome::ok(detail, ""), diff, changes: true }
            }
            Err(failure) => DryRun { outcome: failure, diff: String::new(), changes: false },
        })
    }

    fn approval(&self, _run: &PipelineRun) -> ApprovalRequest {
        let plan = self.plan.clone().unwrap_or_default();
        if self.spec.refresh_only {
            return self.accept_request(&plan);
        }
        let mut summary = format!("terraform {}: {}", self.dir(), plan.line());
        let destroys = plan.destroys();
        if !destroys.is_empty() {
            summary.push_str(&format!(" — DESTROYS {}", destroys.join(", ")));
        }
        let mut request = self.request(summary, self.apply_call().display(), &plan, self.shown(&plan));
        // What runs here, as the person running merlya, is said outright (issue 24 §4).
        request.reasons.extend(self.controller.iter().chain(&self.reasons).cloned());
        request.post_check = Some("terraform plan -detailed-exitcode (expects no change)".into());
        match Self::rollback_words(&self.rollback) {
            Some(words) => request.rollback = Some(words),
            None => request.reasons.push(match &self.rollback.workspace {
                Some(workspace) => format!(
                    "no rollback: the folder is on workspace `{workspace}`, and merlya rolls back only the default workspace"
                ),
                None => "no rollback: merlya knows no earlier configuration of this folder, and its state is not known to be empty (a backend other than local, or resources in it)".into(),
            }),
        }
        request
    }

    fn rollback_approval(&self, run: &PipelineRun) -> Option<ApprovalRequest> {
        let data: RollbackData = serde_json::from_value(run.rollback_data.clone()).ok()?;
        let words = Self::rollback_words(&data)?;
        let analysis = Analysis {
            class: Class::Mutating,
            reasons: vec!["terraform plan runs the configuration's code (data sources, provisioners)".into()],
            commands: vec![],
            rule_keys: None,
        };
        let summary = format!("roll back terraform {} (change {}): {words}", self.dir(), run.id);
        Some(ApprovalRequest::new(summary, "terraform plan (rollback)", vec![self.dir()], &analysis, Vec::new()))
    }

    async fn audit_refused(&self, env: &Env, outcome: AuditOutcome, decided_by: &str, why: &str) {
        let request = self.audit(env, &self.apply_call().display(), decided_by, None);
        if let Err(e) = env.store.audit_refused(&request, outcome, why).await {
            tracing::warn!(error = %e, "cannot record a refused terraform change");
        }
    }

    async fn apply(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> StageOutcome {
        if self.nothing_to_refresh {
            return StageOutcome::ok("nothing to refresh: the state is kept as it is", "");
        }
        let file = self.plan_file("change.tfplan");
        // Exactly the approved plan: a file changed since the dry run is not applied.
        if self.plan_hash.is_none() || sha256_file(&file) != self.plan_hash {
            return StageOutcome::failed(format!("{} changed after it was approved; not applied", file.display()), "");
        }
        // The plan file holds the configuration, not the scripts a provisioner runs: the apply runs in
        // the planned copy, which nothing may have changed either.
        if !self.planned.as_ref().is_some_and(PlannedCopy::unchanged) {
            return StageOutcome::failed(
                format!(
                    "the planned copy of {} changed after it was planned: nothing was applied; plan it again",
                    self.dir()
                ),
                "",
            );
        }
        let out = self.apply_audited(env, &self.apply_call(), decision, run, StageName::Apply).await;
        if out.code == Some(0) {
            let line = self.plan.as_ref().map(PlanSummary::line).unwrap_or_default();
            StageOutcome::ok(format!("applied: {line}"), out.text())
        } else {
            failed("terraform apply failed", &out)
        }
    }

    async fn post_check(&mut self, env: &Env, _run: &PipelineRun, _decision: &Approved) -> Option<StageOutcome> {
        let args = [&["plan", "-input=false", "-no-color", "-detailed-exitcode"][..], self.mode_args()].concat();
        let out = self.run(env, &self.call(&args, &self.planned_dir()), None).await;
        Some(match out.code {
            Some(0) if self.spec.refresh_only => {
                StageOutcome::ok("nothing left to refresh: the state matches the real objects", out.text())
            }
            Some(0) => StageOutcome::ok("no changes left: the infrastructure matches the configuration", out.text()),
            Some(2) => StageOutcome::failed("terraform still plans changes after apply", out.text()),
            _ => failed("terraform plan (post-check) failed", &out),
        })
    }

    async fn rollback(&mut self, env: &Env, run: &PipelineRun, _decision: &Approved) -> Option<StageOutcome> {
        Self::rollback_words(&serde_json::from_value(run.rollback_data.clone()).unwrap_or_default())?;
        if let Err(e) = self.spec.vars.restore(env, run) {
            return Some(StageOutcome::failed(e.to_string(), ""));
        }
        // A rollback is a new plan: it is shown and approved on its own before it applies.
        Some(self.roll_back(env, run).await)
    }

    fn rollback_data(&self) -> serde_json::Value {
        serde_json::to_value(&self.rollback).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(files: &[(&str, &str)]) -> Snapshot {
        files.iter().map(|(f, t)| ((*f).to_string(), (*t).to_string())).collect()
    }

    #[test]
    fn only_a_folder_without_another_backend_keeps_its_state_locally() {
        assert!(local_state(&config(&[("main.tf", "resource \"terraform_data\" \"a\" {}\n")])));
        assert!(local_state(&config(&[("main.tf", "terraform {\n  backend \"local\" {}\n}\n")])));
        assert!(!local_state(&config(&[("main.tf", "terraform {\n  backend \"s3\" {\n  }\n}\n")])));
        assert!(!local_state(&config(&[("main.tf", "terraform {\n  cloud {\n    organization = \"o\"\n  }\n}\n")])));
        assert!(!local_state(&config(&[("main.tf.json", "{\"terraform\": {\"backend\": {\"gcs\": {}}}}")])));
    }

    #[test]
    fn a_folder_on_another_workspace_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        if std::env::var_os("TF_WORKSPACE").is_some() {
            return;
        }
        assert_eq!(current_workspace(dir.path()), None);
        std::fs::create_dir(dir.path().join(".terraform")).unwrap();
        std::fs::write(dir.path().join(".terraform/environment"), "default").unwrap();
        assert_eq!(current_workspace(dir.path()), None);
        std::fs::write(dir.path().join(".terraform/environment"), "staging\n").unwrap();
        assert_eq!(current_workspace(dir.path()).as_deref(), Some("staging"));
        let data = RollbackData { workspace: Some("staging".into()), ..RollbackData::default() };
        assert_eq!(TerraformChange::rollback_words(&data), None, "no rollback offered on another workspace");
    }
}
