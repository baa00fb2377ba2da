//! Change pipeline runs, persisted before each stage starts and when it ends,
//! so that a crash or `kill -9` never leaves a run that looks unapplied.
//!
//! The record types (kinds, stages, statuses) live here, below the
//! `pipeline` module that drives them, because the store reads them back.

use super::Backend;
use super::db::{Row, query, recorded_order};
use serde::{Deserialize, Serialize};

use super::{SqlContext, Store, StoreError, now_rfc3339};

/// The tool a change is made with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A shell command on hosts over SSH.
    Bash,
    /// An Ansible playbook on hosts from the inventory.
    Ansible,
    /// A Terraform configuration folder.
    Terraform,
    /// Kubernetes manifests or a kustomize folder.
    Kubernetes,
    /// A provisioned resource made through an MCP server's tools.
    Mcp,
}

impl Kind {
    /// The lower-case name, as stored and typed.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Bash => "bash",
            Kind::Ansible => "ansible",
            Kind::Terraform => "terraform",
            Kind::Kubernetes => "kubernetes",
            Kind::Mcp => "mcp",
        }
    }

    /// The kind spelled `text` (as [`Kind::as_str`] writes it).
    pub fn parse(text: &str) -> Option<Self> {
        [Kind::Bash, Kind::Ansible, Kind::Terraform, Kind::Kubernetes, Kind::Mcp]
            .into_iter()
            .find(|k| k.as_str() == text)
    }
}

/// The stages, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum StageName {
    /// What will run, on what.
    Plan,
    /// The dry run (or the preview when the tool has none).
    Diff,
    /// The one screen the approval shows first.
    Summary,
    /// The person's (or rule's) decision.
    #[serde(alias = "HITL")]
    Approval,
    /// The change itself.
    Apply,
    /// A read-only check that the change did what it should.
    #[serde(rename = "Post-check")]
    PostCheck,
    /// Undoing the change.
    Rollback,
}

impl StageName {
    /// The stage's name as shown and as a locale key suffix.
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Plan => "Plan",
            StageName::Diff => "Diff",
            StageName::Summary => "Summary",
            StageName::Approval => "Approval",
            StageName::Apply => "Apply",
            StageName::PostCheck => "Post-check",
            StageName::Rollback => "Rollback",
        }
    }
}

/// Where one stage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageStatus {
    /// Started, not ended (persisted before the stage's work begins).
    #[serde(alias = "pending")]
    Running,
    /// Ended well.
    Done,
    /// Not needed or nothing to do.
    Skipped,
    /// The approval said no.
    Denied,
    /// Ended badly.
    Failed,
    /// Stopped by the operator.
    Cancelled,
    /// merlya stopped (crash, `kill -9`) while it ran: found so at the next start.
    Interrupted,
}

impl StageStatus {
    /// The snake-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StageStatus::Running => "running",
            StageStatus::Done => "done",
            StageStatus::Skipped => "skipped",
            StageStatus::Denied => "denied",
            StageStatus::Failed => "failed",
            StageStatus::Cancelled => "cancelled",
            StageStatus::Interrupted => "interrupted",
        }
    }
}

/// Where a whole run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PipelineStatus {
    /// Plan, Diff or Summary running.
    Planning,
    /// Waiting for a decision.
    AwaitingApproval,
    /// Apply running.
    Applying,
    /// Post-check running.
    Checking,
    /// Rollback running.
    RollingBack,
    /// Applied and checked (or nothing to change).
    Succeeded,
    /// Apply or post-check failed, and no rollback ran.
    Failed,
    /// Refused at the approval.
    Denied,
    /// Stopped after Summary: nobody could approve (no terminal, no `--yes`).
    Stopped,
    /// Stopped after Summary because only a plan was asked (`pipeline plan`, `:plan`): nothing was
    /// asked, refused or applied.
    Planned,
    /// Apply or post-check failed and the rollback ran.
    RolledBack,
    /// Stopped by the operator.
    Cancelled,
    /// merlya stopped while the run was in flight; inspect, resume or roll back.
    Interrupted,
    /// Resumed once, by the run named in `resumed_by`: never resumed again.
    Resumed,
}

impl PipelineStatus {
    /// Every status.
    pub const ALL: [PipelineStatus; 14] = [
        PipelineStatus::Planning,
        PipelineStatus::AwaitingApproval,
        PipelineStatus::Applying,
        PipelineStatus::Checking,
        PipelineStatus::RollingBack,
        PipelineStatus::Succeeded,
        PipelineStatus::Failed,
        PipelineStatus::Denied,
        PipelineStatus::Stopped,
        PipelineStatus::Planned,
        PipelineStatus::RolledBack,
        PipelineStatus::Cancelled,
        PipelineStatus::Interrupted,
        PipelineStatus::Resumed,
    ];

    /// The snake-case name, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            PipelineStatus::Planning => "planning",
            PipelineStatus::AwaitingApproval => "awaiting_approval",
            PipelineStatus::Applying => "applying",
            PipelineStatus::Checking => "checking",
            PipelineStatus::RollingBack => "rolling_back",
            PipelineStatus::Succeeded => "succeeded",
            PipelineStatus::Failed => "failed",
            PipelineStatus::Denied => "denied",
            PipelineStatus::Stopped => "stopped",
            PipelineStatus::Planned => "planned",
            PipelineStatus::RolledBack => "rolled_back",
            PipelineStatus::Cancelled => "cancelled",
            PipelineStatus::Interrupted => "interrupted",
            PipelineStatus::Resumed => "resumed",
        }
    }

    /// Whether the run is still going (a process owns it).
    pub fn in_flight(self) -> bool {
        matches!(
            self,
            PipelineStatus::Planning
                | PipelineStatus::AwaitingApproval
                | PipelineStatus::Applying
                | PipelineStatus::Checking
                | PipelineStatus::RollingBack
        )
    }

    fn parse(text: &str) -> Self {
        serde_json::from_value(serde_json::Value::String(text.to_string())).unwrap_or(PipelineStatus::Failed)
    }
}

/// One stage of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    /// Which stage.
    pub name: StageName,
    /// Where it is.
    pub status: StageStatus,
    /// One line: what happened.
    pub detail: String,
    /// When it started (RFC 3339).
    #[serde(default)]
    pub started_at: String,
    /// Wall time in milliseconds (0 while running).
    pub duration_ms: u64,
    /// What the tool printed (bounded by the runner).
    #[serde(default)]
    pub output: String,
}

impl Stage {
    /// A stage that has ended (`duration_ms` long), for records built outside the runner (imports, tests).
    pub fn ended(name: StageName, status: StageStatus, detail: &str, duration_ms: u64) -> Self {
        Self { name, status, detail: detail.to_string(), started_at: String::new(), duration_ms, output: String::new() }
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PipelineRun {
    /// Short id (`YYYYMMDD-HHMMSS-xxxxx`), unique; commands accept any unambiguous prefix.
    pub id: String,
    /// The tool.
    pub kind: Kind,
    /// Where the run is.
    pub status: PipelineStatus,
    /// Target hosts (or the folder for Terraform and Kubernetes), comma-separated.
    pub targets: String,
    /// Every stage started so far, in order.
    pub stages: Vec<Stage>,
    /// When it was created.
    pub created_at: String,
    /// When it last changed.
    pub updated_at: String,
    /// What was asked, enough to build the change again (for resume and rollback).
    pub spec: serde_json::Value,
    /// The summary the approval showed first.
    pub summary: String,
    /// The dry run's diff, as shown.
    pub diff: String,
    /// Who approved or denied, empty before the decision.
    pub decision: String,
    /// What a rollback needs (the previous configuration, the rollback playbook…).
    pub rollback_data: serde_json::Value,
    /// Who asked for the change.
    pub requested_by: String,
    /// The interrupted run this one resumes, if any.
    pub resumed_from: String,
    /// The run that resumed this one (then `Resumed`), if any.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resumed_by: String,
    /// The process driving the run (0 once it ended), so a start can tell a crashed run from a live one.
    pub owner_pid: u32,
}

impl PipelineRun {
    /// A new run of `kind` created now with a fresh id.
    pub fn new(kind: Kind, targets: &str, spec: serde_json::Value, requested_by: &str) -> Self {
        let now = now_rfc3339();
        let at = chrono::Utc::now();
        // Sub-second time mixed with the pid: two processes starting a run in the same second differ.
        let mix = (at.timestamp_subsec_nanos() / 1000) ^ std::process::id().wrapping_mul(2_654_435_761);
        let id = format!("{}-{:05x}", at.format("%Y%m%d-%H%M%S"), mix & 0xf_ffff);
        Self {
            id,
            kind,
            status: PipelineStatus::Planning,
            targets: targets.to_string(),
            stages: Vec::new(),
            created_at: now.clone(),
            updated_at: now,
            spec,
            summary: String::new(),
            diff: String::new(),
            decision: String::new(),
            rollback_data: serde_json::Value::Null,
            requested_by: requested_by.to_string(),
            resumed_from: String::new(),
            resumed_by: String::new(),
            owner_pid: std::process::id(),
        }
    }

    /// The stage named `name`, the last one if it ran twice.
    pub fn stage(&self, name: StageName) -> Option<&Stage> {
        self.stages.iter().rev().find(|s| s.name == name)
    }
}

/// Succeeded runs of a kind (bound first) in a folder (bound second), newest first: the expression
/// is the one `pipeline_runs_folder` indexes, so the lookup uses it.
/// Succeeded runs of kind `$1` in folder `$2`, newest first.
fn in_folder(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "kind = $1 AND json_extract(spec, '$.dir') = $2 AND status = 'succeeded' ORDER BY rowid DESC"
        }
        Backend::Postgres => "kind = $1 AND spec::json->>'dir' = $2 AND status = 'succeeded' ORDER BY seq DESC",
    }
}

const COLUMNS: &str = "id, kind, status, targets, stages, created_at, updated_at, spec, summary, diff, decision, rollback_data, requested_by, resumed_from, owner_pid, resumed_by";

fn from_row(r: &Row) -> Result<PipelineRun, StoreError> {
    let text = |i: usize| r.try_get::<String>(i).ctx("cannot read a pipeline run");
    let json = |i: usize| text(i).map(|t| serde_json::from_str(&t).unwrap_or_default());
    Ok(PipelineRun {
        id: text(0)?,
        kind: serde_json::from_value(serde_json::Value::String(text(1)?)).unwrap_or(Kind::Bash),
        status: PipelineStatus::parse(&text(2)?),
        targets: text(3)?,
        stages: serde_json::from_str(&text(4)?).unwrap_or_default(),
        created_at: text(5)?,
        updated_at: text(6)?,
        spec: json(7)?,
        summary: text(8)?,
        diff: text(9)?,
        decision: text(10)?,
        rollback_data: json(11)?,
        requested_by: text(12)?,
        resumed_from: text(13)?,
        owner_pid: u32::try_from(r.try_get::<i64>(14).ctx("cannot read a pipeline run")?).unwrap_or(0),
        resumed_by: text(15)?,
    })
}

fn to_json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

impl Store {
    /// Saves (inserts or replaces) a run's whole record; `updated_at` is set to now.
    pub async fn save_pipeline_run(&self, run: &PipelineRun) -> Result<(), StoreError> {
        let now = now_rfc3339();
        query(
            "INSERT INTO pipeline_runs (id, kind, status, targets, stages, created_at, updated_at, spec, summary, diff, decision, rollback_data, requested_by, resumed_from, owner_pid)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
             ON CONFLICT(id) DO UPDATE SET status = excluded.status, stages = excluded.stages, updated_at = excluded.updated_at,
               summary = excluded.summary, diff = excluded.diff, decision = excluded.decision, rollback_data = excluded.rollback_data,
               spec = excluded.spec, owner_pid = excluded.owner_pid",
        )
        .bind(&run.id)
        .bind(run.kind.as_str())
        .bind(run.status.as_str())
        .bind(&run.targets)
        .bind(to_json(&run.stages))
        .bind(&run.created_at)
        .bind(&now)
        .bind(to_json(&run.spec))
        .bind(&run.summary)
        .bind(&run.diff)
        .bind(&run.decision)
        .bind(to_json(&run.rollback_data))
        .bind(&run.requested_by)
        .bind(&run.resumed_from)
        .bind(i64::from(run.owner_pid))
        .execute(self.pool())
        .await
        .map_err(self.write_error("save the pipeline run"))?;
        Ok(())
    }

    /// Marks `original` resumed by `by`, once: `Err` names the run that resumed it already, or its
    /// status when it cannot be resumed. One statement, so two resumes cannot both win.
    pub async fn mark_resumed(&self, original: &str, by: &str) -> Result<Result<(), String>, StoreError> {
        let done = query(
            "UPDATE pipeline_runs SET status = 'resumed', resumed_by = $1, updated_at = $2
             WHERE id = $3 AND status IN ('interrupted', 'stopped', 'planned', 'cancelled')",
        )
        .bind(by)
        .bind(now_rfc3339())
        .bind(original)
        .execute(self.pool())
        .await
        .map_err(self.write_error("mark the change resumed"))?;
        if done == 1 {
            return Ok(Ok(()));
        }
        let now = self.find_pipeline_run(original).await?;
        Ok(Err(match now {
            Some(run) if !run.resumed_by.is_empty() => {
                format!("change {original} was already resumed by change {}", run.resumed_by)
            }
            Some(run) => format!(
                "change {original} is {}: only an interrupted, stopped or cancelled change can be resumed",
                run.status.as_str()
            ),
            None => format!("no change {original}"),
        }))
    }

    /// Every run, newest first.
    pub async fn list_pipeline_runs(&self) -> Result<Vec<PipelineRun>, StoreError> {
        let order = recorded_order(self.backend());
        self.query_runs(&format!("SELECT {COLUMNS} FROM pipeline_runs ORDER BY {order} DESC"), &[]).await
    }

    /// Succeeded runs of `kind` in the folder `dir` (the spec's `dir`), newest first: a rollback looks
    /// for the last good configuration of the same folder. The `pipeline_runs_folder` index answers
    /// it, so its cost does not grow with the history of other folders.
    pub async fn succeeded_runs_in_folder(&self, kind: Kind, dir: &str) -> Result<Vec<PipelineRun>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM pipeline_runs WHERE {}", in_folder(self.backend()));
        self.query_runs(&sql, &[kind.as_str(), dir]).await
    }

    /// The run whose id is `id` or starts with it (an unambiguous prefix), else `None`.
    pub async fn find_pipeline_run(&self, id: &str) -> Result<Option<PipelineRun>, StoreError> {
        let pattern = format!("{}%", id.replace(['%', '_'], ""));
        let mut runs = self
            .query_runs(&format!("SELECT {COLUMNS} FROM pipeline_runs WHERE id LIKE $1 ORDER BY id"), &[&pattern])
            .await?;
        if let Some(exact) = runs.iter().position(|r| r.id == id) {
            return Ok(Some(runs.swap_remove(exact)));
        }
        Ok(if runs.len() == 1 { runs.pop() } else { None })
    }

    /// Marks every run still in flight whose owning process is gone (`alive` says which pids still run
    /// merlya) as interrupted, with its running stage; called when merlya starts. Returns the runs marked.
    pub async fn mark_interrupted_pipelines(
        &self,
        alive: impl Fn(u32) -> bool,
    ) -> Result<Vec<PipelineRun>, StoreError> {
        let mut marked = Vec::new();
        let in_flight: Vec<String> =
            PipelineStatus::ALL.iter().filter(|s| s.in_flight()).map(|s| format!("'{}'", s.as_str())).collect();
        let sql = format!(
            "SELECT {COLUMNS} FROM pipeline_runs WHERE status IN ({}) ORDER BY {}",
            in_flight.join(", "),
            recorded_order(self.backend())
        );
        for mut run in self.query_runs(&sql, &[]).await? {
            if !run.status.in_flight() || (run.owner_pid != 0 && alive(run.owner_pid)) {
                continue;
            }
            run.status = PipelineStatus::Interrupted;
            for stage in run.stages.iter_mut().filter(|s| s.status == StageStatus::Running) {
                stage.status = StageStatus::Interrupted;
                stage.detail = format!("merlya stopped during this stage; {}", stage.detail);
            }
            self.save_pipeline_run(&run).await?;
            marked.push(run);
        }
        Ok(marked)
    }

    /// The runs `sql` selects (its columns [`COLUMNS`]), its `$N` bound to `binds` in order.
    async fn query_runs(&self, sql: &str, binds: &[&str]) -> Result<Vec<PipelineRun>, StoreError> {
        let mut query = query(sql.to_string());
        for bind in binds {
            query = query.bind(bind.to_string());
        }
        let rows = query.fetch_all(self.pool()).await.ctx("cannot read pipeline runs")?;
        rows.iter().map(from_row).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn succeeded(dir: &str) -> PipelineRun {
        let mut run =
            PipelineRun::new(Kind::Terraform, dir, serde_json::json!({ "kind": "terraform", "dir": dir }), "t");
        run.status = PipelineStatus::Succeeded;
        run.id = format!("run-{dir}");
        run
    }

    #[tokio::test]
    async fn the_last_good_run_of_a_folder_is_found_through_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("merlya.db")).await.unwrap();
        for folder in ["/srv/a", "/srv/b", "/srv/a/b"] {
            store.save_pipeline_run(&succeeded(folder)).await.unwrap();
        }
        let mut failed = succeeded("/srv/a");
        failed.id = "failed-a".into();
        failed.status = PipelineStatus::Failed;
        store.save_pipeline_run(&failed).await.unwrap();

        let found = store.succeeded_runs_in_folder(Kind::Terraform, "/srv/a").await.unwrap();
        assert_eq!(found.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["run-/srv/a"]);
        assert!(store.succeeded_runs_in_folder(Kind::Kubernetes, "/srv/a").await.unwrap().is_empty());

        // The lookup reads the folder's entries of the index, not every succeeded run.
        let sql =
            format!("EXPLAIN QUERY PLAN SELECT {COLUMNS} FROM pipeline_runs WHERE {}", in_folder(Backend::Sqlite));
        let plan: Vec<(i64, i64, i64, String)> =
            query(sql).bind("terraform").bind("/srv/a").fetch_all(store.pool()).await.unwrap();
        let detail: Vec<&str> = plan.iter().map(|p| p.3.as_str()).collect();
        assert!(detail.iter().any(|d| d.contains("USING INDEX pipeline_runs_folder")), "{detail:?}");
        store.close().await;
    }
}
