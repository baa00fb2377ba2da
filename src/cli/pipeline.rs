//! `merlya pipeline run|list|show|rollback|resume`: changes through the one
//! change path, from a shell.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Subcommand};
use color_eyre::eyre::{Result, eyre};

use super::lang::{t, tf};
use super::{EXIT_CANCELLED, EXIT_ERROR, EXIT_HOST_FAILED, EXIT_OK, EXIT_REFUSED, OutputFormat, table};
use crate::approval::ApprovalGate;
use crate::context::Context;
use crate::pipeline::ansible::AnsibleSpec;
use crate::pipeline::bash::{BashChange, BashSpec};
use crate::pipeline::kubernetes::KubernetesSpec;
use crate::pipeline::terraform::{TerraformChange, TerraformSpec};
use crate::pipeline::tool::ToolEnv;
use crate::pipeline::vars::Vars;
use crate::pipeline::{
    Change, Env, PipelineError, PipelineRun, PipelineStatus, Spec, StageStatus, build, rebuild, runner,
};
use crate::term_safe::{visible, visible_line};

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum PipelineCommand {
    /// Start a change: plan, dry run, summary, approval, apply, post-check, rollback.
    #[command(subcommand)]
    Run(RunKind),
    /// Plan a change and show its diff and summary, then stop: nothing is asked, nothing applied.
    #[command(subcommand)]
    Plan(RunKind),
    /// Every change, newest first.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
    },
    /// One change: its stages, the diff shown, the decision.
    Show {
        /// The change's id (or an unambiguous prefix).
        id: String,
        /// Also print each stage's output.
        #[arg(long)]
        output: bool,
        #[arg(long, value_enum, default_value_t)]
        format: OutputFormat,
    },
    /// Undo a finished change (asks for its own approval).
    Rollback {
        id: String,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Start an interrupted, stopped or cancelled change again from its plan (asks again; never re-applies
    /// silently).
    Resume {
        id: String,
        #[command(flatten)]
        opts: ChangeOpts,
    },
}

// Documented through `cfg_attr`: clap would take a doc comment for the `about` of each command that
// flattens these options, and its commands are built deferred, so it would replace theirs.
#[cfg_attr(doc, doc = "What every command that may change something takes.")]
#[derive(Debug, Args)]
pub struct ChangeOpts {
    /// Approve without asking (recorded as such in the audit log).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Seconds each stage that runs something may take (default: policy.command_timeout).
    #[arg(long)]
    pub timeout: Option<f64>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
}

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum RunKind {
    /// A shell command on hosts.
    Bash {
        /// Host names, @tags, globs, comma lists, or `all`.
        #[arg(long)]
        targets: String,
        /// A read-only command whose success says the change worked.
        #[arg(long)]
        check: Option<String>,
        /// A command that undoes the change (approved with it).
        #[arg(long)]
        rollback: Option<String>,
        #[command(flatten)]
        opts: ChangeOpts,
        /// The command, after `--`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// An Ansible playbook on hosts from the inventory (dry run: --check --diff).
    Ansible {
        playbook: PathBuf,
        /// Host names, @tags, globs, comma lists, or `all`.
        #[arg(long)]
        targets: String,
        /// A playbook that undoes the change (approved with it).
        #[arg(long)]
        rollback: Option<PathBuf>,
        /// An extra variable, `name=value` (repeatable; passed in a private file).
        #[arg(long = "extra-vars", short = 'e', value_parser = key_value)]
        extra_vars: Vec<(String, String)>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// Kubernetes manifests (a file or a folder) or a kustomize folder: diff, apply --server-side,
    /// rollout status, rollout undo.
    Kubernetes {
        path: PathBuf,
        /// The kubeconfig context (default: the current one).
        #[arg(long)]
        context: Option<String>,
        /// The namespace for objects that name none.
        #[arg(long, short = 'n')]
        namespace: Option<String>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
    /// A Terraform configuration folder: init, plan, approve the saved plan, apply exactly it.
    Terraform {
        dir: PathBuf,
        /// A variable, `name=value` (repeatable).
        #[arg(long = "var", value_parser = key_value)]
        vars: Vec<(String, String)>,
        #[command(flatten)]
        opts: ChangeOpts,
    },
}

/// Parses `name=value` (clap value parser).
pub(super) fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{text}` is not name=value")),
    }
}

/// Where a change's live lines go and what cancels it (Ctrl-C, SIGTERM): made when the change starts.
pub struct Wiring {
    events: crate::exec::EventSender,
    lines: tokio::sync::mpsc::Receiver<crate::exec::ExecEvent>,
    cancel: tokio_util::sync::CancellationToken,
}

impl Wiring {
    fn new() -> Self {
        let (events, lines) = crate::exec::event_channel();
        Self { events, lines, cancel: super::cancel_on_signals() }
    }
}

/// A Terraform change a person started, whose `terraform init` already runs.
pub struct Early {
    change: TerraformChange,
    wiring: Wiring,
    finished: tokio_util::sync::CancellationToken,
}

impl Early {
    /// What stops its `init` if the command fails before the plan takes it.
    pub fn stopper(&self) -> EarlyStop {
        EarlyStop { cancel: self.wiring.cancel.clone(), finished: self.finished.clone() }
    }
}

/// Stops an `init` started early, as Ctrl-C would (SIGINT, then SIGTERM, SIGKILL to its process group),
/// and waits for it: the command failed before its plan took the `init` (the store, the logs or the
/// SSH configuration could not be read), so nothing is left half-done in the folder.
pub struct EarlyStop {
    cancel: tokio_util::sync::CancellationToken,
    finished: tokio_util::sync::CancellationToken,
}

impl EarlyStop {
    /// Cancels and waits; at once when the `init` has already ended.
    pub async fn stop(self) {
        if !self.finished.is_cancelled() {
            self.cancel.cancel();
        }
        self.finished.cancelled().await;
    }
}

/// Starts `terraform init` for `merlya pipeline run terraform` before the store opens: it is most of
/// a plan's time, and merlya's setup runs beside it. `None` for every other command; for a folder the
/// plan refuses no `init` starts, and the plan says why.
pub fn start_early(cmd: &PipelineCommand, config: &crate::config::Config) -> Option<Early> {
    let PipelineCommand::Run(RunKind::Terraform { dir, vars, opts }) = cmd else { return None };
    let mut change = TerraformChange::new(terraform_spec(dir, vars).ok()?);
    let wiring = Wiring::new();
    let timeout = stage_timeout(opts, config);
    let finished = tokio_util::sync::CancellationToken::new();
    let tools = ToolEnv { events: wiring.events.clone(), cancel: wiring.cancel.clone(), timeout };
    change.start_init(tools, finished.clone());
    Some(Early { change, wiring, finished })
}

fn terraform_spec(dir: &std::path::Path, vars: &[(String, String)]) -> Result<TerraformSpec> {
    let dir = std::path::absolute(dir).map_err(|e| eyre!("{}: {e}", dir.display()))?;
    Ok(TerraformSpec { dir, vars: Vars::new(vars.to_vec()), ..Default::default() })
}

/// Bound of each stage that runs something: `--timeout`, else the policy's command timeout.
fn stage_timeout(opts: &ChangeOpts, config: &crate::config::Config) -> std::time::Duration {
    opts.timeout
        .map_or_else(|| config.command_timeout(), |seconds| std::time::Duration::from_secs_f64(seconds.max(0.001)))
}

/// Runs `cmd`; `early` is the change [`start_early`] began, if any.
pub async fn run(ctx: &Context, cmd: PipelineCommand, early: Option<Early>) -> Result<u8> {
    match cmd {
        PipelineCommand::List { format } => list(ctx, format).await,
        PipelineCommand::Show { id, output, format } => show(ctx, &id, output, format).await,
        PipelineCommand::Plan(kind) => run_kind(ctx, kind, None, Mode::Plan).await,
        PipelineCommand::Run(kind) => run_kind(ctx, kind, early, Mode::Run).await,
        PipelineCommand::Resume { id, opts } => {
            let old = find(ctx, &id).await?;
            if old.status == PipelineStatus::Resumed {
                let args = [("id", old.id.as_str()), ("by", &old.resumed_by)];
                eprintln!("{}", tf("cli.pipeline.already_resumed", &args));
                return Ok(EXIT_ERROR);
            }
            if !matches!(
                old.status,
                PipelineStatus::Interrupted
                    | PipelineStatus::Stopped
                    | PipelineStatus::Planned
                    | PipelineStatus::Cancelled
            ) {
                let args = [("id", old.id.as_str()), ("status", old.status.as_str())];
                eprintln!("{}", tf("cli.pipeline.not_resumable", &args));
                return Ok(EXIT_ERROR);
            }
            let inventory = ctx.store.list_hosts().await?;
            let change = rebuild(&old.spec, &inventory)?;
            drive(ctx, change, inventory, Some(old), &opts, Mode::Resume, Wiring::new()).await
        }
        PipelineCommand::Rollback { id, opts } => {
            let old = find(ctx, &id).await?;
            let inventory = ctx.store.list_hosts().await?;
            let change = rebuild(&old.spec, &inventory)?;
            drive(ctx, change, inventory, Some(old), &opts, Mode::Rollback, Wiring::new()).await
        }
    }
}

/// Starts (or only plans, `Mode::Plan`) the change `kind` describes; `early` is the `init` that
/// [`start_early`] began for a Terraform run.
async fn run_kind(ctx: &Context, kind: RunKind, early: Option<Early>, mode: Mode) -> Result<u8> {
    // Only the rows the change can touch are read (a few hosts of a large inventory).
    let scope = match &kind {
        RunKind::Bash { targets, .. } | RunKind::Ansible { targets, .. } => targets.as_str(),
        RunKind::Kubernetes { .. } | RunKind::Terraform { .. } => crate::inventory::LOCALHOST,
    };
    let inventory = ctx.inventory_for(scope).await?;
    let (spec, opts, hosts) = match kind {
        RunKind::Bash { targets, check, rollback, opts, command } => {
            let hosts = ctx.resolve_targets(&targets, &inventory, &[]).await?;
            let names = hosts.iter().map(|h| h.name.clone()).collect();
            let command = command.join(" ");
            (Spec::Bash(BashSpec { hosts: names, command, check, rollback, ..BashSpec::default() }), opts, hosts)
        }
        RunKind::Ansible { playbook, targets, rollback, extra_vars, opts } => {
            let hosts = ctx.resolve_targets(&targets, &inventory, &[]).await?;
            let absolute = |p: PathBuf| std::path::absolute(&p).map_err(|e| eyre!("{}: {e}", p.display()));
            let spec = AnsibleSpec {
                playbook: absolute(playbook)?,
                hosts: hosts.iter().map(|h| h.name.clone()).collect(),
                rollback: rollback.map(absolute).transpose()?,
                extra_vars: Vars::new(extra_vars),
            };
            (Spec::Ansible(spec), opts, Vec::new())
        }
        RunKind::Kubernetes { path, context, namespace, opts } => {
            let path = std::path::absolute(&path).map_err(|e| eyre!("{}: {e}", path.display()))?;
            (Spec::Kubernetes(KubernetesSpec { path, context, namespace }), opts, Vec::new())
        }
        RunKind::Terraform { dir, vars, opts } => {
            if let Some(Early { change, wiring, .. }) = early {
                return drive(ctx, Box::new(change), inventory, None, &opts, mode, wiring).await;
            }
            (Spec::Terraform(terraform_spec(&dir, &vars)?), opts, Vec::new())
        }
    };
    let change: Box<dyn Change> = match spec {
        Spec::Bash(spec) => Box::new(BashChange::new(spec, hosts)),
        other => build(other, &inventory)?,
    };
    drive(ctx, change, inventory, None, &opts, mode, Wiring::new()).await
}

async fn find(ctx: &Context, id: &str) -> Result<PipelineRun> {
    ctx.store.find_pipeline_run(id).await?.ok_or_else(|| eyre!("{}", tf("cli.pipeline.no_change", &[("id", id)])))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Run,
    /// Plan, diff and summary only.
    Plan,
    Resume,
    Rollback,
}

/// Runs a change that touches only this machine (a provisioned resource's Terraform folder) as
/// `merlya pipeline run` does; returns the exit code and the run's record.
pub(super) async fn drive_change(
    ctx: &Context,
    change: Box<dyn Change>,
    opts: &ChangeOpts,
) -> Result<(u8, PipelineRun)> {
    let inventory = ctx.inventory_for(crate::inventory::LOCALHOST).await?;
    drive_run(ctx, change, inventory, None, opts, Mode::Run, Wiring::new()).await
}

/// Runs (or resumes, or rolls back) `change` on `inventory`'s hosts with live output and stage lines,
/// and maps its end to an exit code.
async fn drive(
    ctx: &Context,
    change: Box<dyn Change>,
    inventory: Vec<crate::inventory::Host>,
    old: Option<PipelineRun>,
    opts: &ChangeOpts,
    mode: Mode,
    wiring: Wiring,
) -> Result<u8> {
    drive_run(ctx, change, inventory, old, opts, mode, wiring).await.map(|(code, _)| code)
}

/// [`drive`], with the run's record.
async fn drive_run(
    ctx: &Context,
    mut change: Box<dyn Change>,
    inventory: Vec<crate::inventory::Host>,
    old: Option<PipelineRun>,
    opts: &ChangeOpts,
    mode: Mode,
    wiring: Wiring,
) -> Result<(u8, PipelineRun)> {
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(opts.yes);
    let executor = Arc::new(ctx.executor(inventory, prompter, interactive)?);
    let gate = ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let Wiring { events, lines: mut rx, cancel } = wiring;
    let mut env = Env::from_context(ctx, executor, gate, cancel.clone(), events);
    env.timeout = stage_timeout(opts, &ctx.config);
    env.at_approval = if mode == Mode::Plan {
        crate::pipeline::AtApproval::PlanOnly
    } else if !interactive && !opts.yes {
        crate::pipeline::AtApproval::NobodyToAsk
    } else {
        crate::pipeline::AtApproval::Ask
    };
    let format = opts.format;
    let work = tokio::spawn(async move {
        let shown = std::sync::Mutex::new(0usize);
        let progress = move |run: &PipelineRun| {
            if format == OutputFormat::Text
                && let Ok(mut shown) = shown.lock()
            {
                // A stage line once it ended.
                for stage in run.stages.iter().skip(*shown).filter(|s| s.status != StageStatus::Running) {
                    eprintln!("{}", stage_line(stage));
                    *shown += 1;
                }
            }
        };
        match (mode, old) {
            (Mode::Rollback, Some(old)) => runner::roll_back(&env, change.as_mut(), old, &progress).await,
            (_, old) => {
                let mut record = runner::record_of(&env, change.as_ref());
                if let Some(old) = old {
                    // Resumed once: the original names this run, and a second resume is refused.
                    if let Err(why) = env.store.mark_resumed(&old.id, &record.id).await? {
                        return Err(PipelineError::Invalid(why));
                    }
                    record.resumed_from = old.id;
                }
                runner::run(&env, change.as_mut(), record, &progress).await
            }
        }
    });
    // Live lines: on stdout for a person, on stderr when stdout carries the JSON record.
    super::exec::print_events_to(&mut rx, OutputFormat::Text, false, 8, format == OutputFormat::Json).await?;
    let done = work.await.map_err(|e| eyre!("{}", tf("cli.pipeline.task_failed", &[("error", &e.to_string())])))??;
    if format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&done)?);
    } else {
        if done.status == PipelineStatus::Planned {
            eprintln!("{}", t("cli.pipeline.planned"));
        } else if done.status == PipelineStatus::Stopped {
            eprintln!("{}", t("cli.pipeline.stopped"));
        }
        eprintln!("{}", tf("cli.change_line", &[("id", &done.id), ("status", &word(done.status))]));
    }
    let code = match done.status {
        PipelineStatus::Succeeded => EXIT_OK,
        // A plan ends where it was asked to.
        PipelineStatus::Planned => EXIT_OK,
        PipelineStatus::Denied | PipelineStatus::Stopped => EXIT_REFUSED,
        PipelineStatus::Cancelled => EXIT_CANCELLED,
        PipelineStatus::RolledBack if mode == Mode::Rollback => EXIT_OK,
        _ => EXIT_HOST_FAILED,
    };
    Ok((code, done))
}

fn word(status: PipelineStatus) -> String {
    status.as_str().replace('_', " ")
}

fn stage_line(stage: &crate::pipeline::Stage) -> String {
    format!(
        "{} {:<10} {:<11} {:>6.1}s  {}",
        crate::pipeline::stage_mark(stage.status),
        stage.name.as_str(),
        stage.status.as_str(),
        stage.duration_ms as f64 / 1000.0,
        visible_line(&stage.detail)
    )
}

async fn list(ctx: &Context, format: OutputFormat) -> Result<u8> {
    let runs = ctx.store.list_pipeline_runs().await?;
    if format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
        return Ok(EXIT_OK);
    }
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            vec![
                r.id.clone(),
                r.kind.as_str().to_string(),
                word(r.status),
                visible_line(&r.targets).into_owned(),
                r.created_at.get(..19).unwrap_or(&r.created_at).replace('T', " "),
                visible_line(&r.summary).into_owned(),
            ]
        })
        .collect();
    let headers = ["cli.h.id", "cli.h.kind", "cli.h.status", "cli.h.targets", "cli.h.created", "cli.h.summary"].map(t);
    print!("{}", table::render(&headers.each_ref().map(String::as_str), &rows));
    Ok(EXIT_OK)
}

async fn show(ctx: &Context, id: &str, output: bool, format: OutputFormat) -> Result<u8> {
    let run = find(ctx, id).await?;
    if format == OutputFormat::Json {
        println!("{}", serde_json::to_string_pretty(&run)?);
        return Ok(EXIT_OK);
    }
    let args = [("id", run.id.as_str()), ("kind", run.kind.as_str()), ("status", &word(run.status))];
    println!("{}", tf("cli.pipeline.show_title", &args));
    println!("{}", tf("cli.pipeline.show_targets", &[("targets", &visible_line(&run.targets))]));
    let who = visible_line(&run.requested_by);
    println!("{}", tf("cli.pipeline.show_asked", &[("who", &who), ("at", &run.created_at)]));
    if !run.summary.is_empty() {
        println!("{}", tf("cli.pipeline.show_summary", &[("summary", &visible_line(&run.summary))]));
    }
    if !run.decision.is_empty() {
        println!("{}", tf("cli.pipeline.show_decision", &[("decision", &visible_line(&run.decision))]));
    }
    if !run.resumed_from.is_empty() {
        println!("{}", tf("cli.pipeline.show_resumes", &[("id", &run.resumed_from)]));
    }
    println!();
    for stage in &run.stages {
        println!("{}", stage_line(stage));
        if output && !stage.output.is_empty() {
            for line in visible(&stage.output).lines() {
                println!("    {line}");
            }
        }
    }
    if !run.diff.is_empty() {
        println!("\n{}", visible(&run.diff));
    }
    if run.status == PipelineStatus::Interrupted {
        println!("\n{}", tf("cli.pipeline.interrupted", &[("id", &run.id)]));
    }
    Ok(EXIT_OK)
}
