//! The worker behind a console run. A command proven read-only runs at once
//! (audited fan-out); anything else is a change and goes through the one
//! change path, a Bash pipeline (approval → apply → audit). Output and
//! per-host failures are reported as messages; cancelled through
//! [`super::run_control::RunControl`].

use super::msg::Msg;
use super::workers::Services;
use crate::approval::Route;
use crate::exec::ExecEvent;
use crate::inventory::Host;
use crate::pipeline::bash::{BashChange, BashSpec};
use crate::pipeline::fanout::audited_fan_out;
use crate::pipeline::vars::Vars;
use crate::pipeline::{Change, Env, Kind, PipelineRun, PipelineStatus, StageName, StageStatus, runner};

/// Runs `command` on `hosts` as run `run`. A round of watch `watch` runs only a proven read: anything
/// else is refused, not asked (a watch would otherwise ask every N seconds).
pub(super) fn run_command(services: &Services, run: u64, hosts: Vec<Host>, command: String, watch: Option<u64>) {
    let (ctx, executor, sender, gate) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.gate.clone());
    let control = services.control.clone();
    let locale = services.locale();
    let cancel = control.register(run);
    services.control.spawn(async move {
        let (tx, mut rx) = crate::exec::event_channel();
        let forward = {
            let sender = sender.clone();
            tokio::spawn(async move {
                while let Some(event) = rx.recv().await {
                    if let ExecEvent::Finished(result) = &event
                        && let (Some(failure), Some(error)) = (result.failure, &result.error)
                    {
                        let at = crate::store::now_rfc3339();
                        sender.send(Msg::HostFailed { host: result.host.clone(), failure, error: error.clone(), at });
                    }
                    sender.send_output(Msg::Exec { run, event }).await;
                }
            })
        };
        let env = Env::from_context(&ctx, executor, gate, cancel, tx);
        // One routing decision: a proven read runs as merlya's rendering, anything else is a change.
        let route = env.gate.route(&command);
        let to_run = route.command(&command).to_string();
        let results = match (route, watch) {
            (Route::Read(clearance), _) => {
                sender.send(Msg::RunStarted { run });
                audited_fan_out(&env, &hosts, clearance, None).await.map(Some)
            }
            (Route::Ask { analysis, .. }, Some(watch)) => {
                sender.send(Msg::WatchRefused { watch, why: why_refused(&analysis, &locale) });
                sender.send(Msg::RunDenied { run, by: locale.t("watch.not_read_only").to_string() });
                Ok(None)
            }
            (Route::Ask { .. }, None) => change(&env, &sender, run, &hosts, &to_run, &locale).await,
        };
        drop(env);
        let _ = forward.await;
        control.forget(run);
        match results {
            Ok(Some(results)) => sender.send(Msg::RunDone { run, results }),
            Ok(None) => {}
            Err(e) => sender.send(Msg::Error(
                locale.tf("error.run_failed", &[("id", &run.to_string()), ("error", &format!("{e:#}"))]),
            )),
        }
    });
}

/// A watch: `command` must be proven read-only now (refused at once otherwise, never asked); then a
/// tick every `every` seconds, the first at once, until `:watch off`, Ctrl-C, another watch or quit.
pub(super) fn start_watch(services: &Services, watch: u64, every: u64, command: String) {
    let sender = services.sender.clone();
    if let Route::Ask { analysis, .. } = services.gate.route(&command) {
        return sender.send(Msg::WatchRefused { watch, why: why_refused(&analysis, &services.locale()) });
    }
    let stop = services.control.start_watch();
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(std::time::Duration::from_secs(every));
        // A round slower than the interval delays the next one; rounds never pile up.
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = interval.tick() => sender.send(Msg::WatchTick { watch }),
                () = stop.cancelled() => return,
            }
        }
    });
}

/// Why a watch is refused: the analysis's reasons, or (a proven read asked anyway) the setting that asks.
fn why_refused(analysis: &crate::safety::Analysis, locale: &crate::i18n::Locale) -> String {
    if analysis.reasons.is_empty() {
        return locale.t("watch.always_asked").to_string();
    }
    analysis.reasons.join("; ")
}

/// A change on `hosts`: a Bash pipeline. `Ok(None)` when it never applied (denied, refused, cancelled).
async fn change(
    env: &Env,
    sender: &super::sender::AppSender,
    run: u64,
    hosts: &[Host],
    command: &str,
    locale: &crate::i18n::Locale,
) -> color_eyre::Result<Option<Vec<crate::exec::HostResult>>> {
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let summary = locale.tf("approval.run_on", &[("count", &names.len().to_string())]);
    let spec = BashSpec { hosts: names, command: command.to_string(), summary: Some(summary), ..BashSpec::default() };
    let mut bash = BashChange::new(spec, hosts.to_vec());
    let record = runner::record_of(env, &bash);
    let progress = |r: &PipelineRun| {
        sender.send(Msg::Pipeline(Box::new(r.clone())));
        if r.status == PipelineStatus::Applying
            && r.stage(StageName::Apply).is_some_and(|s| s.status == StageStatus::Running)
        {
            sender.send(Msg::RunStarted { run });
        }
    };
    let done = runner::run(env, &mut bash, record, &progress).await?;
    if done.stage(StageName::Apply).is_some() {
        return Ok(Some(bash.applied));
    }
    let by = match done.status {
        PipelineStatus::Failed => done.stage(StageName::Plan).map(|s| s.detail.clone()).unwrap_or_default(),
        PipelineStatus::Cancelled => "the operator (cancelled)".into(),
        _ => done.decision.strip_prefix("denied by ").unwrap_or(&done.decision).to_string(),
    };
    sender.send(Msg::RunDenied { run, by });
    Ok(None)
}

/// `:change`: an Ansible, Terraform or Kubernetes pipeline started by the operator. Its dry run runs at
/// once (the person asked for it); the approval comes through the console's modal; the Pipeline pane
/// follows the record. Quitting waits for it (a tracked task) and cancels it.
pub(super) fn start_change(services: &Services, kind: Kind, path: String, hosts: Vec<Host>, plan_only: bool) {
    use crate::pipeline::ansible::{AnsibleChange, AnsibleSpec};
    use crate::pipeline::kubernetes::{KubernetesChange, KubernetesSpec};
    use crate::pipeline::terraform::{TerraformChange, TerraformSpec};
    let (ctx, executor, sender, gate) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.gate.clone());
    let cancel = services.control.shutdown_token();
    services.control.spawn(async move {
        let path = match std::path::absolute(&path) {
            Ok(path) => path,
            Err(e) => return sender.send(Msg::Error(format!("{path}: {e}"))),
        };
        let mut change: Box<dyn Change> = match kind {
            Kind::Terraform => Box::new(TerraformChange::new(TerraformSpec { dir: path, ..Default::default() })),
            Kind::Kubernetes => {
                Box::new(KubernetesChange::new(KubernetesSpec { path, context: None, namespace: None }))
            }
            Kind::Mcp => {
                let why = "an MCP resource is changed from the Drift pane or `merlya provision`, not `:pipeline`";
                return sender.send(Msg::Error(why.into()));
            }
            Kind::Ansible | Kind::Bash => {
                let names = hosts.iter().map(|h| h.name.clone()).collect();
                let spec = AnsibleSpec { playbook: path, hosts: names, rollback: None, extra_vars: Vars::default() };
                Box::new(AnsibleChange::new(spec, hosts))
            }
        };
        let mut env = Env::from_context(&ctx, executor, gate, cancel, crate::exec::no_events());
        // `:plan`: the diff and its summary, then stop: nothing is asked, nothing applied.
        if plan_only {
            env.at_approval = crate::pipeline::AtApproval::PlanOnly;
        }
        let record = runner::record_of(&env, change.as_ref());
        let progress = |r: &PipelineRun| sender.send(Msg::Pipeline(Box::new(r.clone())));
        if let Err(e) = runner::run(&env, change.as_mut(), record, &progress).await {
            sender.send(Msg::Error(e.to_string()));
        }
    });
}
