//! `:watch N -- CMD`: start, one round per tick (never two at once), refusal
//! of a command not proven read-only, and stopping (`:watch off`, Ctrl-C).

use super::start_run;
use crate::app::model::{Model, Pane, ToastLevel};
use crate::app::msg::Effect;
use crate::app::output_buffer::LineKind;
use crate::app::watch::Watch;
use crate::redact::redact_command;

/// Starts watching `command` on the selection every `every` seconds (replacing a watch in progress).
/// The worker checks that it is proven read-only before the first tick.
pub(super) fn start(model: &mut Model, every: u64, command: String) -> Vec<Effect> {
    let hosts = model.selection();
    if hosts.is_empty() {
        model.flash = Some(model.locale.t("flash.no_selection").to_string());
        return Vec::new();
    }
    let mut effects = stop_quietly(model);
    model.watches += 1;
    let id = model.watches;
    let shown = redact_command(&command);
    let note = model.locale.tf(
        "watch.started",
        &[("command", &shown), ("every", &every.to_string()), ("count", &hosts.len().to_string())],
    );
    model.output.push(LineKind::Note, note);
    model.watch = Some(Watch::new(id, every, command.clone(), hosts));
    model.set_focus(Pane::Output);
    effects.push(Effect::StartWatch { watch: id, every, command });
    effects
}

/// A tick: the next round, unless the previous one is still running (or the watch is gone).
pub(super) fn tick(model: &mut Model, id: u64) -> Vec<Effect> {
    let Some(watch) = model.watch.as_ref().filter(|w| w.id == id) else { return Vec::new() };
    if watch.run.and_then(|r| model.runs.get(&r)).is_some_and(|r| r.state.is_active()) {
        return Vec::new();
    }
    let (hosts, command, first) = (watch.hosts.clone(), watch.command.clone(), watch.rounds == 0);
    // After the first round the person may have scrolled up to read: a round does not pull them down.
    let kept = (model.output_view.follow, model.output_view.scroll, model.output_view.cursor);
    let Effect::RunCommand { run, hosts, command } = start_run(model, hosts, command) else { return Vec::new() };
    if !first {
        (model.output_view.follow, model.output_view.scroll, model.output_view.cursor) = kept;
        super::panes::keep_scroll_position(model, 1);
    }
    if let Some(watch) = model.watch.as_mut() {
        watch.start_round(run);
    }
    vec![Effect::RunWatchRound { run, watch: id, hosts, command }]
}

/// The worker refused the watch: its command is not proven read-only. Said once, clearly; never asked.
pub(super) fn refused(model: &mut Model, id: u64, why: &str) -> Vec<Effect> {
    let Some(watch) = model.watch.take_if(|w| w.id == id) else { return Vec::new() };
    let text = model.locale.tf("watch.refused", &[("command", &redact_command(&watch.command)), ("why", why)]);
    model.output.push(LineKind::Note, text.clone());
    model.toast(ToastLevel::Error, text);
    vec![Effect::StopWatch]
}

/// `:watch off`, Ctrl-C: the timer stops and a round in flight is cancelled.
pub(super) fn stop(model: &mut Model) -> Vec<Effect> {
    let Some(rounds) = model.watch.as_ref().map(|w| w.rounds) else {
        model.flash = Some(model.locale.t("watch.none").to_string());
        return Vec::new();
    };
    let effects = stop_quietly(model);
    let text = model.locale.tf("watch.stopped", &[("rounds", &rounds.to_string())]);
    model.output.push(LineKind::Note, text.clone());
    model.flash = Some(text);
    effects
}

fn stop_quietly(model: &mut Model) -> Vec<Effect> {
    let Some(watch) = model.watch.take() else { return Vec::new() };
    let mut effects = vec![Effect::StopWatch];
    if let Some(run) = watch.run.and_then(|r| model.runs.get_mut(&r)).filter(|r| r.state.is_active()) {
        run.cancel_requested = true;
        effects.push(Effect::CancelRun(run.id));
    }
    effects
}

/// What changed in a line of `host` in run `run`, when it is a round of the watch.
pub(super) fn changed(model: &mut Model, run: u64, host: &str, text: &str) -> Option<Box<[std::ops::Range<usize>]>> {
    model.watch.as_mut().filter(|w| w.run == Some(run)).and_then(|w| w.line(host, text))
}

/// Run `run` ended: when it was the watch's round, the next one compares with it. Whether it was.
pub(super) fn round_done(model: &mut Model, run: u64) -> bool {
    match model.watch.as_mut().filter(|w| w.run == Some(run)) {
        Some(watch) => {
            watch.end_round();
            true
        }
        None => false,
    }
}
