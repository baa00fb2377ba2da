//! The Ansible kind (ansible-core only): an inventory generated from
//! merlya's, `--check --diff` as the dry run read through merlya's callback
//! plugin (per host and task, diffs as data), apply, a post-check `--check`
//! expecting no change, and the rollback playbook given with the change.
//! Exit codes 2 (a host failed) and 4 (unreachable) are reported per host.

pub mod hazards;
mod inventory;
pub mod report;

use std::path::PathBuf;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::pin::{self, Pinned};
use super::tool::{self, ToolCall, ToolOutput, run_cleared};
use super::vars::Vars;
use super::{
    Approved, Change, DryRun, Env, Kind, PipelineError, PipelineRun, Spec, StageName, StageOutcome, private_dir,
};
use crate::approval::ApprovalRequest;
use crate::context::{audit_refused_all, audit_request, audit_start_all};
use crate::home::write_private;
use crate::inventory::Host;
use crate::safety::{Analysis, Class};
use crate::store::audit::AuditOutcome;

/// Variables a model (or a person) may not set from the outside: Ansible's own (`ansible_host`,
/// `ansible_connection`, `ansible_ssh_common_args` would move the play elsewhere or run code here)
/// and the magic ones.
const RESERVED: [&str; 14] = [
    "hostvars",
    "groups",
    "group_names",
    "inventory_hostname",
    "inventory_hostname_short",
    "inventory_dir",
    "inventory_file",
    "playbook_dir",
    "role_path",
    "omit",
    "environment",
    "vars",
    "play_hosts",
    "ansible",
];

/// Refuses extra variables that could redirect the play or be templated into code.
fn check_extra_vars(vars: &Vars) -> Result<(), PipelineError> {
    for (name, value) in vars.iter() {
        let plain = !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !plain || name.starts_with("ansible_") || RESERVED.contains(&name) {
            return Err(PipelineError::Invalid(format!(
                "extra variable {name:?} is not allowed: expected a plain name that is not Ansible's own (ansible_*, hostvars, …)"
            )));
        }
        if ["{{", "{%", "{#"].iter().any(|t| value.contains(t)) {
            return Err(PipelineError::Invalid(format!(
                "extra variable {name}: a value may not hold a template ({{{{ … }}}}, {{% … %}}): Ansible would run it here"
            )));
        }
    }
    Ok(())
}

/// The callback plugin merlya points `ANSIBLE_CALLBACK_PLUGINS` at.
const CALLBACK: &str = include_str!("merlya_json.py");

/// What was asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnsibleSpec {
    /// The playbook (absolute).
    pub playbook: PathBuf,
    /// Target host names, as resolved when asked.
    pub hosts: Vec<String>,
    /// The playbook that undoes it, if any (absolute).
    #[serde(default)]
    pub rollback: Option<PathBuf>,
    /// Extra variables (passed in a private file, never on the command line; values kept out of the
    /// database).
    #[serde(default)]
    pub extra_vars: Vars,
}

/// An Ansible change.
pub struct AnsibleChange {
    spec: AnsibleSpec,
    hosts: Vec<Host>,
    work: PathBuf,
    inventory: Option<inventory::Inventory>,
    dry: Option<report::Report>,
    /// The playbook's folders as planned, copied into the run's folder: what the dry run, the apply
    /// and the rollback run (its fingerprint is checked again before the apply).
    pinned: Option<Pinned>,
    /// What its check run would run for real, and what the pin does not cover.
    hazards: hazards::Found,
    /// Folders left out of the pin (merlya's home).
    unpinned: Vec<PathBuf>,
}

impl AnsibleChange {
    /// The change `spec` on `hosts` (resolved by the caller).
    pub fn new(spec: AnsibleSpec, hosts: Vec<Host>) -> Self {
        Self {
            spec,
            hosts,
            work: PathBuf::new(),
            inventory: None,
            dry: None,
            pinned: None,
            hazards: hazards::Found::default(),
            unpinned: Vec::new(),
        }
    }

    /// Builds it again from a stored spec.
    pub fn from_spec(spec: AnsibleSpec, inventory: &[Host]) -> Result<Self, PipelineError> {
        let hosts = crate::inventory::resolve_targets(&spec.hosts.join(","), inventory, &[])
            .map_err(|e| PipelineError::Invalid(format!("the run's hosts cannot be found again: {e}")))?;
        Ok(Self::new(spec, hosts))
    }

    fn call(&self, playbook: &std::path::Path, check: bool) -> ToolCall {
        let inventory = self.inventory.as_ref().map(|i| i.file.display().to_string()).unwrap_or_default();
        let playbook = playbook.display().to_string();
        let mut args = vec!["-i", inventory.as_str(), playbook.as_str()];
        let vars = format!("@{}", self.work.join("extra-vars.json").display());
        if !self.spec.extra_vars.is_empty() {
            args.extend(["--extra-vars", vars.as_str()]);
        }
        // Only the approved hosts, whatever the play's `hosts:` says.
        let limit = self.names().join(",");
        args.extend(["--limit", limit.as_str()]);
        if check {
            args.extend(["--check", "--diff"]);
        }
        let cwd = self.spec.playbook.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
        let mut call = ToolCall::new("ansible-playbook", &args, cwd);
        call.label = "ansible".into();
        call.stdout_view = Some(report::live_line);
        let callback = self.work.join("callback").display().to_string();
        for (k, v) in [
            ("ANSIBLE_CALLBACK_PLUGINS", callback.as_str()),
            ("ANSIBLE_STDOUT_CALLBACK", "merlya_json"),
            ("ANSIBLE_NOCOLOR", "1"),
            ("ANSIBLE_FORCE_COLOR", "0"),
            ("ANSIBLE_RETRY_FILES_ENABLED", "0"),
            ("ANSIBLE_HOST_KEY_CHECKING", "True"),
        ] {
            call.env.insert(k.into(), v.into());
        }
        call.env.insert("ANSIBLE_LOCAL_TEMP".into(), self.work.join("tmp").display().to_string());
        // Values of secret-named variables and become passwords never reach the screen or the record.
        call.secrets = self.spec.extra_vars.secret_values();
        if let Some(inventory) = &self.inventory {
            call.secrets.extend(inventory.secrets().iter().filter(|s| !s.is_empty()).cloned());
        }
        call
    }

    /// Hosts the report names that were not approved (a `delegate_to`, an `add_host`).
    fn strangers(&self, played: &report::Report) -> Vec<String> {
        let approved = self.names();
        played.stats.keys().filter(|h| !approved.contains(h)).cloned().collect()
    }

    /// Where `playbook` was copied when the change was planned (itself before that).
    fn planned(&self, playbook: &std::path::Path) -> PathBuf {
        let folder = playbook.parent().map(PathBuf::from);
        let index = self.folders().iter().position(|f| Some(f) == folder.as_ref());
        match (&self.pinned, index, playbook.file_name()) {
            (Some(pinned), Some(index), Some(name)) if index < pinned.copies.len() => pinned.copies[index].join(name),
            _ => playbook.to_path_buf(),
        }
    }

    /// The folders of the playbook and of the rollback playbook (what `pin` covers).
    fn folders(&self) -> Vec<PathBuf> {
        let mut folders: Vec<PathBuf> = std::iter::once(&self.spec.playbook)
            .chain(&self.spec.rollback)
            .filter_map(|p| p.parent().map(PathBuf::from))
            .collect();
        folders.dedup();
        folders
    }

    fn names(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.name.clone()).collect()
    }

    /// Runs a playbook with the become passwords in place; output with those passwords masked.
    async fn play(
        &self,
        env: &Env,
        call: &ToolCall,
        clearance: Option<&crate::safety::clearance::Clearance>,
    ) -> ToolOutput {
        let Some(inventory) = &self.inventory else {
            return ToolOutput { error: Some("no inventory".into()), ..ToolOutput::default() };
        };
        let ran = inventory
            .with_passwords(async {
                match clearance {
                    Some(clearance) => run_cleared(env, call, clearance).await,
                    None => tool::run(env, call).await,
                }
            })
            .await;
        let mut out = ran.unwrap_or_else(|e| ToolOutput { error: Some(e), ..ToolOutput::default() });
        for secret in inventory.secrets().iter().filter(|s| !s.is_empty()) {
            out.stdout = out.stdout.replace(secret.as_str(), "***");
            out.stderr = out.stderr.replace(secret.as_str(), "***");
        }
        out
    }

    /// A changing run, cleared by `decision`, audited per host.
    async fn apply_playbook(
        &self,
        env: &Env,
        playbook: &std::path::Path,
        decision: &Approved,
        run: &PipelineRun,
        stage: StageName,
    ) -> StageOutcome {
        let call = self.call(&self.planned(playbook), false);
        let Some(clearance) = decision.clearance(&call.display()) else {
            return StageOutcome::failed(format!("`{}` was not cleared to run", call.display()), "");
        };
        // What was approved is what runs: the planned copy of the playbook, its roles, templates and
        // vars, unchanged since. (A rollback is not held back: the apply may have written into it.)
        let copies = self.pinned.as_ref().map(|p| p.copies.clone()).unwrap_or_default();
        let now = pin::fingerprint(&copies, &pin::Leave::folders(&self.unpinned)).ok();
        if stage == StageName::Apply && (now.is_none() || now != self.pinned.as_ref().map(|p| p.fingerprint.clone())) {
            return StageOutcome::failed(
                "the playbook's planned copy changed after it was planned: nothing was run (plan it again)",
                "",
            );
        }
        let requests = self
            .hosts
            .iter()
            .map(|h| {
                let mut r = audit_request(
                    &env.session_id,
                    &env.executor,
                    &env.requested_by,
                    h,
                    &call.display(),
                    clearance.approved_by(),
                );
                r.approval_ref = super::audit_ref(run, stage);
                r
            })
            .collect();
        let mut tickets = match audit_start_all(&env.store, requests).await {
            Ok(tickets) => tickets,
            Err(e) => return StageOutcome::failed(format!("{e:#}"), ""),
        };
        let out = self.play(env, &call, Some(&clearance)).await;
        let played = report::parse(&out.stdout);
        for host in &self.hosts {
            let Some(ticket) = tickets.take(&host.name) else { continue };
            let stats = played.stats.get(&host.name);
            let (outcome, reason) = match stats {
                Some(s) if s.unreachable > 0 => (AuditOutcome::Failed, Some("unreachable".to_string())),
                Some(s) if s.failures > 0 => (AuditOutcome::Failed, Some("a task failed".to_string())),
                Some(_) => (AuditOutcome::Ok, None),
                None => (AuditOutcome::Failed, out.error.clone().or(Some("no result for this host".into()))),
            };
            if let Err(e) = ticket.finish(outcome, out.code, reason).await {
                tracing::warn!(error = %e, "cannot finish an ansible audit entry");
            }
        }
        tickets.finish_rest(AuditOutcome::Cancelled, "the playbook stopped before this host reported").await;
        let strangers = self.strangers(&played);
        if !strangers.is_empty() {
            let output = outcome_of("ansible-playbook", &out, &played).output;
            return StageOutcome::failed(
                format!("the playbook reached hosts that were not approved: {}", strangers.join(", ")),
                output,
            );
        }
        outcome_of("ansible-playbook", &out, &played)
    }
}

/// How a playbook run went: exit 0, else 2 (a host failed) or 4 (unreachable) with the hosts named.
fn outcome_of(what: &str, out: &ToolOutput, played: &report::Report) -> StageOutcome {
    let text = format!("{}{}", out.stderr, played.other.join("\n"));
    match out.code {
        Some(0) => StageOutcome::ok(played.line(), text),
        Some(2) | Some(4) if !played.stats.is_empty() => StageOutcome::failed(played.line(), text),
        code => {
            let why = out.error.clone().unwrap_or_else(|| format!("exit code {}", code.unwrap_or(-1)));
            let last = out.stderr.lines().rev().find(|l| l.contains("ERROR")).unwrap_or("").trim().to_string();
            StageOutcome::failed(format!("{what} failed ({why}) {last}").trim_end().to_string(), text)
        }
    }
}

#[async_trait]
impl Change for AnsibleChange {
    fn kind(&self) -> Kind {
        Kind::Ansible
    }

    fn targets(&self) -> String {
        crate::exec::runs::compress_names(&self.names())
    }

    fn spec(&self) -> Spec {
        Spec::Ansible(self.spec.clone())
    }

    async fn plan(&mut self, env: &Env, run: &PipelineRun) -> Result<StageOutcome, PipelineError> {
        tool::require("ansible-playbook", "install ansible-core (pip install ansible-core) and put it on PATH")?;
        for playbook in std::iter::once(&self.spec.playbook).chain(&self.spec.rollback) {
            if !playbook.is_file() {
                return Err(PipelineError::Invalid(format!("{} is not a file", playbook.display())));
            }
        }
        if self.hosts.is_empty() {
            return Err(PipelineError::Invalid("no target host".into()));
        }
        self.work = env.store.pipelines_dir().join(&run.id);
        let io = |e: std::io::Error| PipelineError::Invalid(format!("cannot prepare {}: {e}", self.work.display()));
        private_dir(&self.work.join("callback")).map_err(io)?;
        private_dir(&self.work.join("tmp")).map_err(io)?;
        std::fs::write(self.work.join("callback").join("merlya_json.py"), CALLBACK).map_err(io)?;
        self.spec.extra_vars.restore(env, run)?;
        check_extra_vars(&self.spec.extra_vars)?;
        self.spec.extra_vars.save(&self.work).map_err(io)?;
        let vars: serde_json::Map<String, serde_json::Value> =
            self.spec.extra_vars.iter().map(|(k, v)| (k.into(), serde_json::Value::String(v.into()))).collect();
        write_private(&self.work.join("extra-vars.json"), serde_json::Value::Object(vars).to_string().as_bytes())
            .map_err(io)?;
        let context = env.executor.pool().context();
        let built = inventory::build(
            &self.work,
            &self.hosts,
            &env.executor,
            &context.known_hosts_files,
            context.secrets.as_ref(),
        )
        .map_err(PipelineError::Invalid)?;
        self.inventory = Some(built);
        // merlya's own home is left out of the pin: it writes there while the run goes on.
        self.unpinned = env.store.path().parent().map(PathBuf::from).into_iter().collect();
        // The dry run, the apply and the rollback run this copy: a file swapped in the original while
        // the approval waits is never read (a re-plan makes a fresh one).
        let dest = self.work.join("planned");
        if dest.exists() {
            std::fs::remove_dir_all(&dest).map_err(io)?;
        }
        self.pinned = None;
        let pinned =
            pin::copy(&self.folders(), &pin::Leave::folders(&self.unpinned), &dest).map_err(PipelineError::Invalid)?;
        self.pinned = Some(pinned);
        let playbook = self.planned(&self.spec.playbook);
        let folder = playbook.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/"));
        self.hazards = hazards::scan(&folder, &playbook, &self.unpinned);
        // No separate --syntax-check (a second Python start-up): the dry run reports a broken playbook.
        let detail = format!("{} on {} host(s)", self.spec.playbook.display(), self.hosts.len());
        Ok(StageOutcome::ok(detail, String::new()))
    }

    fn dry_run_command(&self) -> Option<String> {
        Some(self.call(&self.planned(&self.spec.playbook), true).display())
    }

    fn dry_run_hazards(&self) -> Vec<String> {
        self.hazards.runs.clone()
    }

    async fn dry_run(&mut self, env: &Env, _run: &PipelineRun) -> Option<DryRun> {
        let out = self.play(env, &self.call(&self.planned(&self.spec.playbook), true), None).await;
        let played = report::parse(&out.stdout);
        let mut outcome = outcome_of("ansible-playbook --check", &out, &played);
        let strangers = self.strangers(&played);
        if !strangers.is_empty() {
            outcome = StageOutcome::failed(
                format!("the playbook reaches hosts that were not asked for: {}", strangers.join(", ")),
                outcome.output,
            );
        }
        let diff = if played.stats.is_empty() { String::new() } else { played.render() };
        let dry = DryRun { changes: played.changed() > 0, diff, outcome };
        self.dry = Some(played);
        Some(dry)
    }

    fn approval(&self, _run: &PipelineRun) -> ApprovalRequest {
        let line = self.dry.as_ref().map(report::Report::line).unwrap_or_default();
        let summary = format!("ansible {}: {line}", self.spec.playbook.display());
        let mut reasons = vec![
            "runs the playbook's tasks on every host listed (--limit: no other host)".to_string(),
            "the diff is Ansible's check mode: tasks that skip in check mode are not in it".to_string(),
        ];
        if !self.spec.extra_vars.is_empty() {
            let shown: Vec<String> = self
                .spec
                .extra_vars
                .iter()
                .map(|(k, v)| if crate::redact::is_secret_name(k) { format!("{k}=***") } else { format!("{k}={v}") })
                .collect();
            reasons.push(format!("extra vars: {}", shown.join(", ")));
        }
        if self.spec.rollback.is_none() {
            reasons.push("no rollback: no rollback playbook was given with the change".into());
        }
        // What runs on this machine, and what the pin does not cover, is said again where it is approved.
        reasons.extend(self.hazards.runs.iter().chain(&self.hazards.unpinned).cloned());
        let command = self.call(&self.planned(&self.spec.playbook), false).display();
        let analysis = Analysis { class: Class::Mutating, reasons, commands: vec![command.clone()], rule_keys: None };
        let mut request = ApprovalRequest::new(summary, &command, self.names(), &analysis, Vec::new());
        request.diff = self.dry.as_ref().map(report::Report::render);
        request.post_check = Some("ansible-playbook --check (expects no change on any host)".into());
        request.rollback = self.spec.rollback.as_ref().map(|p| self.call(&self.planned(p), false).display());
        request
    }

    fn rollback_approval(&self, run: &PipelineRun) -> Option<ApprovalRequest> {
        let playbook = self.spec.rollback.as_ref()?;
        let command = self.call(&self.planned(playbook), false).display();
        let analysis = Analysis {
            class: Class::Mutating,
            reasons: vec!["runs the rollback playbook on every host of the change".into()],
            commands: vec![command.clone()],
            rule_keys: None,
        };
        let summary = format!("roll back change {} with {}", run.id, playbook.display());
        Some(ApprovalRequest::new(summary, &command, self.names(), &analysis, Vec::new()))
    }

    async fn audit_refused(&self, env: &Env, outcome: AuditOutcome, decided_by: &str, why: &str) {
        let command = format!("ansible-playbook {}", self.spec.playbook.display());
        let requests: Vec<_> = self
            .hosts
            .iter()
            .map(|h| audit_request(&env.session_id, &env.executor, &env.requested_by, h, &command, decided_by))
            .collect();
        audit_refused_all(&env.store, &requests, outcome, why).await;
    }

    async fn apply(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> StageOutcome {
        self.apply_playbook(env, &self.spec.playbook.clone(), decision, run, StageName::Apply).await
    }

    async fn post_check(&mut self, env: &Env, _run: &PipelineRun, _decision: &Approved) -> Option<StageOutcome> {
        let out = self.play(env, &self.call(&self.planned(&self.spec.playbook), true), None).await;
        let played = report::parse(&out.stdout);
        let checked = outcome_of("ansible-playbook --check (post-check)", &out, &played);
        Some(if checked.ok && played.changed() > 0 {
            StageOutcome::failed(
                format!("the playbook would still change something: {}", played.line()),
                checked.output,
            )
        } else {
            checked
        })
    }

    async fn prepare_rollback(&mut self, env: &Env, run: &PipelineRun) -> Result<(), PipelineError> {
        if self.inventory.is_none() {
            // On demand (`pipeline rollback ID`): the run's folder and inventory are made again before
            // the approval, which then names the inventory file that runs.
            self.plan(env, run).await?;
        }
        Ok(())
    }

    async fn rollback(&mut self, env: &Env, run: &PipelineRun, decision: &Approved) -> Option<StageOutcome> {
        let playbook = self.spec.rollback.clone()?;
        if self.inventory.is_none() {
            return Some(StageOutcome::failed("the run's inventory was not prepared", ""));
        }
        Some(self.apply_playbook(env, &playbook, decision, run, StageName::Rollback).await)
    }
}
