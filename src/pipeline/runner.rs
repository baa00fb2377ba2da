//! The one runner: Plan → Diff → Summary → Approval → Apply → Post-check →
//! Rollback. Each stage is stored before its work begins and again when it
//! ends, so a crash leaves a record that says where it stopped; a record that
//! cannot be stored stops the run before anything changes.

use std::time::Instant;

use super::{
    Approved, Change, Env, PipelineError, PipelineRun, PipelineStatus, Stage, StageName, StageOutcome, StageStatus,
};
use crate::approval::GateOutcome;
use crate::store::audit::AuditOutcome;

/// Called with the record each time it is stored (the console's Pipeline pane, a CLI's progress lines).
pub type Progress<'a> = &'a (dyn Fn(&PipelineRun) + Send + Sync);

/// Most bytes of a stage's output kept in the record.
const STAGE_OUTPUT_LIMIT: usize = 64 * 1024;

struct Recorder<'a> {
    env: &'a Env,
    run: PipelineRun,
    progress: Progress<'a>,
    started: Instant,
}

impl Recorder<'_> {
    async fn save(&mut self) -> Result<(), PipelineError> {
        self.env.store.save_pipeline_run(&self.run).await?;
        (self.progress)(&self.run);
        Ok(())
    }

    /// Stores the stage as running (and the run's status) before its work starts.
    async fn begin(&mut self, name: StageName, status: PipelineStatus) -> Result<(), PipelineError> {
        self.open(name, status);
        self.save().await
    }

    /// Opens the Approval stage. It is stored before a person is asked; a decision nobody is asked
    /// for (`--yes`) is immediate and stored with what follows it: the next stage's start, before
    /// anything runs, or the refusal.
    async fn begin_approval(&mut self) -> Result<(), PipelineError> {
        if self.env.gate.asks_a_person() {
            self.begin(StageName::Approval, PipelineStatus::AwaitingApproval).await
        } else {
            self.open(StageName::Approval, PipelineStatus::AwaitingApproval);
            Ok(())
        }
    }

    /// Marks the stage as running in the record, not yet stored.
    fn open(&mut self, name: StageName, status: PipelineStatus) {
        self.run.status = status;
        self.run.stages.push(Stage {
            name,
            status: StageStatus::Running,
            detail: String::new(),
            started_at: crate::store::now_rfc3339(),
            duration_ms: 0,
            output: String::new(),
        });
        self.started = Instant::now();
    }

    /// Records how the running stage ended. It is stored with the next save, which always follows at
    /// once: the next stage's start (one write for both, before that stage's work) or the run's end.
    /// A crash in between leaves the stage running in the record, so the run is found interrupted —
    /// never taken as finished.
    async fn end(&mut self, status: StageStatus, detail: String, output: String) -> Result<(), PipelineError> {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        if let Some(stage) = self.run.stages.last_mut() {
            stage.status = status;
            stage.detail = crate::term_safe::visible_line(&detail).into_owned();
            stage.duration_ms = elapsed;
            stage.output = bounded(output);
        }
        (self.progress)(&self.run);
        Ok(())
    }

    /// A stage that did not run (or ran nothing: no tool, no host), with why; stored with the next save.
    fn skip(&mut self, name: StageName, why: &str) {
        self.done_now(name, StageStatus::Skipped, why);
    }

    /// A stage that ends as it starts (it runs nothing), stored with the next save.
    fn done_now(&mut self, name: StageName, status: StageStatus, detail: &str) {
        self.run.stages.push(Stage {
            name,
            status,
            detail: crate::term_safe::visible_line(detail).into_owned(),
            started_at: crate::store::now_rfc3339(),
            duration_ms: 0,
            output: String::new(),
        });
    }

    /// The run is over: the owner is cleared so no later start marks it interrupted. What the
    /// stages left to write is written first.
    async fn finish(&mut self, status: PipelineStatus) -> Result<PipelineRun, PipelineError> {
        self.env.deferred.write().await;
        crate::metrics::pipeline(self.run.kind.as_str(), status.as_str());
        self.run.status = status;
        self.run.owner_pid = 0;
        self.save().await?;
        Ok(self.run.clone())
    }
}

fn bounded(mut text: String) -> String {
    if text.len() > STAGE_OUTPUT_LIMIT {
        let cut = text.len() - STAGE_OUTPUT_LIMIT;
        let start = (cut..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
        text = format!("[… {start} earlier bytes are in the command history]\n{}", &text[start..]);
    }
    text
}

fn status_of(outcome: &StageOutcome, env: &Env) -> StageStatus {
    match (outcome.ok, env.cancel.is_cancelled()) {
        (true, _) => StageStatus::Done,
        (false, true) => StageStatus::Cancelled,
        (false, false) => StageStatus::Failed,
    }
}

/// A new record for `change`, asked by `env.requested_by`.
pub fn record_of(env: &Env, change: &dyn Change) -> PipelineRun {
    PipelineRun::new(change.kind(), &change.targets(), change.spec().to_json(), &env.requested_by)
}

/// Drives `change` from Plan to its end and returns the stored record. A stage
/// that fails ends the run (recorded); only a record that cannot be stored is
/// an error, and then nothing after it ran.
pub async fn run(
    env: &Env,
    change: &mut dyn Change,
    run: PipelineRun,
    progress: Progress<'_>,
) -> Result<PipelineRun, PipelineError> {
    // Also when a record could not be stored: an audit entry is finished whatever the record says.
    env.deferred.after(run_stages(env, change, run, progress)).await
}

async fn run_stages(
    env: &Env,
    change: &mut dyn Change,
    run: PipelineRun,
    progress: Progress<'_>,
) -> Result<PipelineRun, PipelineError> {
    let mut rec = Recorder { env, run, progress, started: Instant::now() };
    // A change the agent proposes is asked about before anything of it runs: before the plan when
    // the plan itself runs a tool (`terraform init`), else before the dry run.
    let ask_first = env.ask_before_dry_run.then(|| change.plan_command()).flatten();
    let planned = if let Some(plan_command) = &ask_first {
        rec.begin(StageName::Plan, PipelineStatus::Planning).await?;
        let command = [Some(plan_command.clone()), change.dry_run_command()].into_iter().flatten().collect();
        if let Some(denied) = ask_dry_run(&mut rec, env, change, command, change.dry_run_hazards()).await? {
            return Ok(denied);
        }
        change.plan(env, &rec.run).await
    } else {
        // Nothing to ask: the Plan stage's record is stored while the plan starts. A plan changes
        // nothing, so a crash before that record leaves nothing to recover (ADR 0024).
        rec.open(StageName::Plan, PipelineStatus::Planning);
        let run = rec.run.clone();
        // Beside the plan too: SQLite compiles the audit log's statements now, not in the entry
        // the apply writes before it runs.
        let stored = async {
            rec.save().await?;
            env.store.prepare_audit().await;
            Ok::<_, PipelineError>(())
        };
        let (saved, planned) = tokio::join!(stored, change.plan(env, &run));
        saved?;
        planned
    };
    match planned {
        Ok(outcome) => {
            let ok = outcome.ok;
            // What the plan pinned (the kubeconfig's current context) is kept for resume and rollback.
            rec.run.spec = change.spec().to_json();
            rec.end(status_of(&outcome, env), outcome.detail, outcome.output).await?;
            if !ok {
                return rec.finish(PipelineStatus::Failed).await;
            }
        }
        Err(PipelineError::Store(e)) => return Err(PipelineError::Store(e)),
        Err(e) => {
            change.audit_refused(env, AuditOutcome::Refused, "merlya", &e.to_string()).await;
            rec.end(StageStatus::Failed, e.to_string(), String::new()).await?;
            return rec.finish(PipelineStatus::Failed).await;
        }
    }
    // Stored before it starts, as every stage after the plan: a dry run can run code.
    rec.begin(StageName::Diff, PipelineStatus::Planning).await?;
    // A dry run that runs something for real is not a dry run: asked first, whoever proposed it.
    let hazards = change.dry_run_hazards();
    if ((env.ask_before_dry_run && ask_first.is_none()) || !hazards.is_empty())
        && let Some(command) = change.dry_run_command()
        && let Some(denied) = ask_dry_run(&mut rec, env, change, vec![command], hazards).await?
    {
        return Ok(denied);
    }
    match change.dry_run(env, &rec.run).await {
        None => {
            let why = "this change has no dry run; the approval shows exactly what runs";
            rec.end(StageStatus::Skipped, why.into(), String::new()).await?;
        }
        Some(dry) => {
            rec.run.diff = crate::term_safe::visible(&dry.diff).into_owned();
            let ok = dry.outcome.ok;
            rec.end(status_of(&dry.outcome, env), dry.outcome.detail, dry.outcome.output).await?;
            if !ok {
                let status = if env.cancel.is_cancelled() { PipelineStatus::Cancelled } else { PipelineStatus::Failed };
                return rec.finish(status).await;
            }
            if !dry.changes {
                rec.skip(StageName::Summary, "nothing to change");
                return rec.finish(PipelineStatus::Succeeded).await;
            }
        }
    }
    let mut request = change.approval(&rec.run);
    request.kind = Some(change.kind());
    if !rec.run.resumed_from.is_empty() {
        request.summary = format!("{} (resumes interrupted run {})", request.summary, rec.run.resumed_from);
    }
    // Summary runs nothing: it is stored with the Approval stage that follows (or the stop).
    rec.run.summary = request.summary.clone();
    rec.run.rollback_data = change.rollback_data();
    let line = format!("{} ({})", request.command, request.class.as_str());
    rec.done_now(StageName::Summary, StageStatus::Done, &line);
    if let Some(stage) = rec.run.stages.last_mut() {
        stage.output = bounded(crate::approval::render_request(&request));
    }
    if env.at_approval == super::AtApproval::PlanOnly {
        let why = "plan only: nothing was asked or applied";
        rec.run.decision = "plan only".into();
        rec.skip(StageName::Approval, why);
        return rec.finish(PipelineStatus::Planned).await;
    }
    if env.at_approval == super::AtApproval::NobodyToAsk {
        let why = "denied by nobody (no terminal): nobody can approve here without --yes; stopped after Summary, nothing changed";
        rec.run.decision = "denied by nobody (no terminal)".into();
        rec.skip(StageName::Approval, why);
        change.audit_refused(env, AuditOutcome::Denied, "nobody (no terminal)", why).await;
        return rec.finish(PipelineStatus::Stopped).await;
    }
    rec.begin_approval().await?;
    let decision = tokio::select! {
        decision = env.gate.check(&request) => decision,
        () = env.cancel.cancelled() => {
            rec.end(StageStatus::Cancelled, "cancelled while awaiting approval".into(), String::new()).await?;
            let why = "cancelled while awaiting approval";
            change.audit_refused(env, AuditOutcome::Cancelled, "the operator (cancelled)", why).await;
            return rec.finish(PipelineStatus::Cancelled).await;
        }
    };
    let Some(approved_by) = decision.approved_by() else {
        let by = decision.decided_by();
        rec.run.decision = format!("denied by {by}");
        rec.end(StageStatus::Denied, format!("denied by {by}"), String::new()).await?;
        let why = format!("denied by {by}: {} ({})", request.class.as_str(), request.reasons.join("; "));
        change.audit_refused(env, AuditOutcome::Denied, &by, &why).await;
        return rec.finish(PipelineStatus::Denied).await;
    };
    rec.run.decision = format!("approved by {approved_by}");
    rec.end(StageStatus::Done, format!("approved by {approved_by}"), String::new()).await?;
    after_approval(rec, env, change, &Approved::of(decision, &request)).await
}

/// Asks whether the dry run (and what the plan runs before it) may run: it can run code. Returns the
/// finished record when it was denied; the running stage ends as denied.
async fn ask_dry_run(
    rec: &mut Recorder<'_>,
    env: &Env,
    change: &dyn Change,
    commands: Vec<String>,
    hazards: Vec<String>,
) -> Result<Option<PipelineRun>, PipelineError> {
    let command = commands.join("\n");
    let reasons = if hazards.is_empty() {
        vec![
            "a dry run can run code (data sources, provisioners, check_mode: false tasks, webhooks, downloaded providers)".into(),
        ]
    } else {
        hazards.clone()
    };
    let analysis =
        crate::safety::Analysis { class: crate::safety::Class::Mutating, reasons, commands, rule_keys: None };
    let what = if hazards.is_empty() { "run the dry run" } else { "run the dry run, which CHANGES things" };
    let summary = format!("{what} of this {} change on {}", change.kind().as_str(), change.targets());
    // The hosts the change's own approval names (a tag rule such as two-person approval reads them).
    let hosts = change.approval(&rec.run).hosts;
    let mut request = crate::approval::ApprovalRequest::new(summary, &command, hosts, &analysis, Vec::new());
    request.kind = Some(change.kind());
    let decision = tokio::select! {
        decision = env.gate.check(&request) => decision,
        () = env.cancel.cancelled() => GateOutcome::Denied("the operator (cancelled)".into()),
    };
    let GateOutcome::Denied(by) = decision else {
        return Ok(None);
    };
    rec.run.decision = format!("denied by {by}");
    let why = if hazards.is_empty() { String::new() } else { format!(" (it runs for real: {})", hazards.join("; ")) };
    rec.end(StageStatus::Denied, format!("the dry run was denied by {by}{why}"), String::new()).await?;
    change.audit_refused(env, AuditOutcome::Denied, &by, &format!("dry run denied by {by}")).await;
    Ok(Some(rec.finish(PipelineStatus::Denied).await?))
}

/// Apply → Post-check → Rollback under an approved `decision`.
async fn after_approval(
    mut rec: Recorder<'_>,
    env: &Env,
    change: &mut dyn Change,
    decision: &Approved,
) -> Result<PipelineRun, PipelineError> {
    rec.begin(StageName::Apply, PipelineStatus::Applying).await?;
    let applied = change.apply(env, &rec.run, decision).await;
    let apply_ok = applied.ok;
    rec.end(status_of(&applied, env), applied.detail, applied.output).await?;
    if env.cancel.is_cancelled() {
        return rec.finish(PipelineStatus::Cancelled).await;
    }
    let mut needs_rollback = !apply_ok;
    if apply_ok {
        rec.begin(StageName::PostCheck, PipelineStatus::Checking).await?;
        // Beside the post-check: the apply's records reach the database file, so the close at the
        // end has little left to write; then what the apply left to write (its audit finish) starts
        // the emptied log afresh, paying the sync of its header here rather than in the next save
        // (ADR 0024).
        let beside = async {
            env.store.checkpoint().await;
            env.deferred.write().await;
        };
        let (checked, ()) = tokio::join!(change.post_check(env, &rec.run, decision), beside);
        match checked {
            Some(checked) => {
                needs_rollback = !checked.ok;
                rec.end(status_of(&checked, env), checked.detail, checked.output).await?;
            }
            None => rec.end(StageStatus::Skipped, "no post-check given".into(), String::new()).await?,
        }
        if env.cancel.is_cancelled() {
            return rec.finish(PipelineStatus::Cancelled).await;
        }
    }
    if !needs_rollback {
        rec.skip(StageName::Rollback, "not needed");
        return rec.finish(PipelineStatus::Succeeded).await;
    }
    rec.begin(StageName::Rollback, PipelineStatus::RollingBack).await?;
    let (undone, ()) = tokio::join!(change.rollback(env, &rec.run, decision), env.deferred.write());
    match undone {
        Some(undone) => {
            let status = if undone.ok { PipelineStatus::RolledBack } else { PipelineStatus::Failed };
            rec.end(status_of(&undone, env), undone.detail, undone.output).await?;
            rec.finish(status).await
        }
        None => {
            rec.end(StageStatus::Skipped, "no rollback was given with the change".into(), String::new()).await?;
            rec.finish(PipelineStatus::Failed).await
        }
    }
}

/// Rolls back a finished run on demand: its own approval, then the Rollback stage, appended to the record.
pub async fn roll_back(
    env: &Env,
    change: &mut dyn Change,
    run: PipelineRun,
    progress: Progress<'_>,
) -> Result<PipelineRun, PipelineError> {
    env.deferred.after(roll_back_stages(env, change, run, progress)).await
}

async fn roll_back_stages(
    env: &Env,
    change: &mut dyn Change,
    run: PipelineRun,
    progress: Progress<'_>,
) -> Result<PipelineRun, PipelineError> {
    if run.status.in_flight() {
        return Err(PipelineError::Invalid(format!("run {} is still {}", run.id, run.status.as_str())));
    }
    change.prepare_rollback(env, &run).await?;
    let Some(mut request) = change.rollback_approval(&run) else {
        return Err(PipelineError::Invalid(format!("run {} has no rollback (none was given with the change)", run.id)));
    };
    request.kind = Some(change.kind());
    let before = run.status;
    let mut rec = Recorder { env, run, progress, started: Instant::now() };
    rec.run.owner_pid = std::process::id();
    rec.begin_approval().await?;
    let decision = tokio::select! {
        decision = env.gate.check(&request) => decision,
        () = env.cancel.cancelled() => GateOutcome::Denied("the operator (cancelled)".into()),
    };
    let Some(approved_by) = decision.approved_by() else {
        let by = decision.decided_by();
        rec.end(StageStatus::Denied, format!("rollback denied by {by}"), String::new()).await?;
        change.audit_refused(env, AuditOutcome::Denied, &by, &format!("rollback denied by {by}")).await;
        return rec.finish(before).await;
    };
    rec.end(StageStatus::Done, format!("rollback approved by {approved_by}"), String::new()).await?;
    rec.begin(StageName::Rollback, PipelineStatus::RollingBack).await?;
    let undone = change
        .rollback(env, &rec.run, &Approved::of(decision, &request))
        .await
        .unwrap_or_else(|| StageOutcome::failed("no rollback", ""));
    let status = if undone.ok { PipelineStatus::RolledBack } else { PipelineStatus::Failed };
    rec.end(status_of(&undone, env), undone.detail, undone.output).await?;
    rec.finish(status).await
}
