//! Run control: Ctrl-C and `:cancel`, quitting with runs in flight, rerun
//! (all hosts or the failed ones), the output pane's run views (grouped,
//! failed only, a diff of two hosts), export, and the events that move a
//! run through its states.

use crate::app::model::{HostError, Model, OnYes, OutputMode, PendingPrompt, ToastLevel};
use crate::app::msg::{Effect, PromptKind, PromptRequest};
use crate::app::output_buffer::LineKind;
use crate::exec::runs::RunState;
use crate::exec::{HostFailure, HostResult};
use crate::i18n::Text;

/// Ctrl-C: cancels the newest run in flight; with none (or once it is
/// already being cancelled) stops the agent's turn; otherwise asks to quit.
pub(super) fn interrupt(model: &mut Model) -> Vec<Effect> {
    // A watch stops first (and its round in flight with it).
    if model.watch.is_some() {
        return super::watch::stop(model);
    }
    let newest = model.newest_active_run().map(|r| (r.id, r.cancel_requested));
    match newest {
        Some((id, false)) => cancel(model, Some(id)),
        _ if model.agent_busy => {
            model.agent_busy = false;
            model.flash = Some(model.locale.t("flash.agent_cancelling").to_string());
            vec![Effect::CancelAgent]
        }
        _ => {
            ask_to_quit(model);
            Vec::new()
        }
    }
}

/// `q`: quits at once when nothing runs; otherwise lists what runs and asks.
pub(super) fn quit(model: &mut Model) -> Vec<Effect> {
    if model.active_runs().is_empty() && !model.agent_busy {
        model.should_quit = true;
        return Vec::new();
    }
    ask_to_quit(model);
    Vec::new()
}

fn ask_to_quit(model: &mut Model) {
    if model.prompts.iter().any(|p| matches!(p.on_yes, Some(OnYes::Quit { .. }))) {
        return;
    }
    let mut running: Vec<String> =
        model.active_runs().iter().map(|r| format!("#{} $ {} ({})", r.id, r.command, r.hosts.len())).collect();
    if model.agent_busy && model.agent_run.is_none() {
        running.push(model.locale.t("confirm.agent_turn").to_string());
    }
    let body = if running.is_empty() {
        Text::key("confirm.quit", &[])
    } else {
        Text::key("confirm.quit_running", &[("runs", &running.join("\n"))])
    };
    let request = PromptRequest {
        title: Text::key("confirm.quit_title", &[]),
        body,
        kind: PromptKind::Confirm,
        approval: None,
        reply: None,
    };
    let mut prompt = PendingPrompt::new(request);
    prompt.on_yes = Some(OnYes::Quit { only_for_runs: !running.is_empty() });
    model.prompts.push_back(prompt);
}

/// Quits now: every run in flight and the agent's turn are cancelled first
/// (the runtime waits for their commands to stop on the hosts).
pub(super) fn quit_now(model: &mut Model) -> Vec<Effect> {
    model.should_quit = true;
    let mut effects: Vec<Effect> = model.active_runs().iter().map(|r| cancel_effect(model, r.id)).collect();
    if model.agent_busy && !effects.iter().any(|e| matches!(e, Effect::CancelAgent)) {
        effects.push(Effect::CancelAgent);
    }
    // Workers waiting on a person get a "no", so nothing starts while the console closes.
    effects.extend(model.prompts.drain(..).filter_map(|mut p| {
        p.request.reply.take().map(|reply| Effect::AnswerPrompt { reply, answer: crate::app::msg::PromptAnswer::No })
    }));
    effects
}

/// `:cancel [ID]`: stops run ID, or the newest in flight.
pub(super) fn cancel(model: &mut Model, id: Option<u64>) -> Vec<Effect> {
    let id = id.or_else(|| model.newest_active_run().map(|r| r.id));
    let Some(run) = id.and_then(|id| model.runs.get_mut(&id)) else {
        model.flash = Some(model.locale.t("flash.nothing_to_cancel").to_string());
        return Vec::new();
    };
    if !run.state.is_active() {
        let state = model.locale.t(run.state.key()).to_string();
        model.flash = Some(model.locale.tf("flash.run_over", &[("id", &run.id.to_string()), ("state", &state)]));
        return Vec::new();
    }
    run.cancel_requested = true;
    let id = run.id;
    model.flash = Some(model.locale.tf("flash.cancelling", &[("id", &id.to_string())]));
    if model.agent_run == Some(id) {
        model.agent_busy = false;
    }
    vec![cancel_effect(model, id)]
}

/// `r` / `R`: the focused run again on the same hosts, or on its failed hosts.
pub(super) fn rerun(model: &mut Model, failed_only: bool) -> Vec<Effect> {
    let Some(run) = model.focused_run() else {
        model.flash = Some(model.locale.t("flash.no_run").to_string());
        return Vec::new();
    };
    let failed = run.failed_hosts();
    let Some((hosts, command)) = model.run_hosts.get(&run.id).cloned() else {
        // An agent's turn is asked again in the chat, not rerun.
        model.flash = Some(model.locale.t("flash.no_rerun_agent").to_string());
        return Vec::new();
    };
    let hosts = if failed_only { hosts.into_iter().filter(|h| failed.contains(&h.name)).collect() } else { hosts };
    if hosts.is_empty() {
        model.flash = Some(model.locale.t("flash.none_failed").to_string());
        return Vec::new();
    }
    // A rerun goes through the gate again: a change asks again.
    vec![super::start_run(model, hosts, command)]
}

/// Switches the output pane to `mode`, or back to the live lines if it is shown.
pub(super) fn toggle_mode(model: &mut Model, mode: OutputMode) {
    if model.focused_run().is_none() && mode != OutputMode::Live {
        model.flash = Some(model.locale.t("flash.no_run").to_string());
        return;
    }
    model.output_view.mode = if model.output_view.mode == mode { OutputMode::Live } else { mode };
    model.output_view.report_scroll = 0;
}

/// `:diff HOST HOST`: both must be in the focused run.
pub(super) fn diff(model: &mut Model, a: String, b: String) {
    let Some(run) = model.focused_run() else {
        model.flash = Some(model.locale.t("flash.no_run").to_string());
        return;
    };
    if let Some(missing) = [&a, &b].into_iter().find(|h| !run.hosts.contains_key(*h)) {
        let id = run.id.to_string();
        model.flash = Some(model.locale.tf("flash.not_in_run", &[("host", missing), ("id", &id)]));
        return;
    }
    model.output_view.mode = OutputMode::Diff(a, b);
    model.output_view.report_scroll = 0;
}

/// `:export [ID] FILE`: the run (default: focused) written by a worker.
pub(super) fn export(model: &mut Model, id: Option<u64>, path: String) -> Vec<Effect> {
    let run = match id {
        Some(id) => model.runs.get(&id),
        None => model.focused_run(),
    };
    match run {
        Some(run) => vec![Effect::ExportRun { run: Box::new(run.clone()), path }],
        None => {
            model.flash = Some(model.locale.t("flash.no_run").to_string());
            Vec::new()
        }
    }
}

/// An agent's turn is a run too: its commands' hosts join it as they start.
pub(super) fn start_agent_run(model: &mut Model, question: &str) {
    let id = model.next_run;
    model.next_run += 1;
    let mut run = crate::exec::runs::Run::new(id, format!("agent: {}", crate::redact::redact_command(question)), &[]);
    run.start();
    model.runs.insert(id, run);
    model.agent_run = Some(id);
}

/// The agent's turn ended (answered, failed or cancelled).
pub(super) fn finish_agent_run(model: &mut Model) {
    if let Some(run) = model.agent_run.take().and_then(|id| model.runs.get_mut(&id)) {
        run.finish(&[]);
    }
}

/// The effect that stops run `id`: the agent's turn has its own.
fn cancel_effect(model: &Model, id: u64) -> Effect {
    if model.agent_run == Some(id) { Effect::CancelAgent } else { Effect::CancelRun(id) }
}

/// The gate let run `run` through.
pub(super) fn on_started(model: &mut Model, run: u64) -> Vec<Effect> {
    if let Some(r) = model.runs.get_mut(&run) {
        r.start();
    }
    Vec::new()
}

/// An approval was asked for: queued runs are now waiting on a person.
pub(super) fn on_approval_asked(model: &mut Model) {
    for run in model.runs.values_mut().filter(|r| r.state == RunState::Queued) {
        run.state = RunState::AwaitingApproval;
    }
}

/// A host failed: remembered as its last error until it next succeeds.
pub(super) fn on_host_failed(model: &mut Model, host: String, failure: HostFailure, error: String, at: String) {
    let message = crate::term_safe::visible_line(&error).into_owned();
    model.host_errors.insert(host, HostError { failure, message, at });
}

/// `q` asked only because something ran: once nothing does, the question is moot and the console quits.
pub(super) fn quit_if_only_runs_held_it(model: &mut Model) -> Vec<Effect> {
    let waiting = model.prompts.iter().position(|p| matches!(p.on_yes, Some(OnYes::Quit { only_for_runs: true })));
    match waiting {
        Some(i) if model.active_runs().is_empty() && !model.agent_busy => {
            model.prompts.remove(i);
            quit_now(model)
        }
        _ => Vec::new(),
    }
}

pub(super) fn on_done(model: &mut Model, run: u64, results: &[HostResult]) -> Vec<Effect> {
    let mut effects = on_done_inner(model, run, results);
    effects.extend(quit_if_only_runs_held_it(model));
    effects
}

fn on_done_inner(model: &mut Model, run: u64, results: &[HostResult]) -> Vec<Effect> {
    for result in results.iter().filter(|r| r.success()) {
        model.host_errors.remove(&result.host);
    }
    let watched = super::watch::round_done(model, run);
    let Some(r) = model.runs.get_mut(&run) else { return vec![Effect::Refresh] };
    r.finish(results);
    let ok = results.iter().filter(|r| r.success()).count();
    let state = model.locale.t(r.state.key()).to_string();
    let text = model.locale.tf(
        "toast.run_done",
        &[
            ("id", &r.id.to_string()),
            ("command", &r.command),
            ("ok", &ok.to_string()),
            ("total", &results.len().to_string()),
            ("state", &state),
            ("duration", &format!("{:.2}s", r.duration_ms() as f64 / 1000.0)),
        ],
    );
    let level = if r.state == RunState::Done { ToastLevel::Success } else { ToastLevel::Error };
    model.output.push(LineKind::Note, text.clone());
    // With the output on screen the run is not in the background: a line in the status area is enough.
    // A watch's rounds never toast: one every few seconds would bury everything else.
    if model.view == crate::app::model::Pane::Output || watched {
        model.flash = Some(text);
    } else {
        model.toast(level, text);
    }
    vec![Effect::Refresh]
}

pub(super) fn on_denied(model: &mut Model, run: u64, by: &str) -> Vec<Effect> {
    let Some(r) = model.runs.get_mut(&run) else { return Vec::new() };
    r.deny();
    let command = r.command.clone();
    model.output.push(LineKind::Note, model.locale.tf("output.denied", &[("by", by)]));
    let toast = model.locale.tf("toast.run_denied", &[("command", &command)]);
    model.toast(ToastLevel::Error, toast);
    Vec::new()
}
