//! Events from workers: command output, the agent's stream and tool calls,
//! reachability checks, and dashboard refreshes (with toasts for what
//! finished in the background).

use super::panes::keep_scroll_position;
use crate::agent::AgentEvent;
use crate::app::model::{ChatEntry, ChatRole, Dashboard, Model, ToastLevel};
use crate::app::msg::Effect;
use crate::app::output_buffer::LineKind;
use crate::exec::{ExecEvent, HostResult};
use crate::term_safe::{visible, visible_line};

/// Lines of an agent command's output kept for its tool cell.
const TOOL_OUTPUT_LINES: usize = 200;

/// New metrics; a toast for each pipeline run that finished since the last refresh.
pub(super) fn on_dashboard(model: &mut Model, dashboard: Dashboard) -> Vec<Effect> {
    use crate::store::pipelines::PipelineStatus;
    let mut toasts = Vec::new();
    for run in &dashboard.pipelines {
        let before = model.dashboard.pipelines.iter().find(|r| r.id == run.id);
        if !run.status.in_flight() && before.is_some_and(|b| b.status.in_flight()) {
            let level = if run.status == PipelineStatus::Succeeded { ToastLevel::Success } else { ToastLevel::Error };
            let status = model.locale.word("pipeline_status", run.status.as_str());
            let text = model.locale.tf("toast.pipeline", &[("target", &run.targets), ("status", &status)]);
            toasts.push((level, text));
        }
    }
    // A teammate's change that now waits for a second person: said once, with how to review it.
    for review in &dashboard.reviews {
        let known = model.dashboard.reviews.iter().any(|r| r.id == review.id);
        if !known && review.requested_by != model.operator {
            let text = model.locale.tf(
                "toast.review_waiting",
                &[("id", &review.id.to_string()), ("who", &review.requested_by), ("why", &review.why)],
            );
            toasts.push((ToastLevel::Info, text));
        }
    }
    if model.dashboard_seen {
        model.metric_history.record(&model.dashboard, &dashboard);
    }
    model.dashboard_seen = true;
    model.dashboard = dashboard;
    model.pipeline_cursor = model.pipeline_cursor.min(model.dashboard.pipelines.len().saturating_sub(1));
    for (level, text) in toasts {
        model.toast(level, text);
    }
    Vec::new()
}

/// A pipeline record from a runner in this console: replaces the one shown (or comes first, as the
/// newest); a run that just ended gets its toast here, and the next dashboard refresh agrees.
pub(super) fn on_pipeline(model: &mut Model, run: crate::pipeline::PipelineRun) -> Vec<Effect> {
    let awaiting = run.status == crate::pipeline::PipelineStatus::AwaitingApproval;
    let id = run.id.clone();
    let effects = show_pipeline(model, run);
    // The run the approval modal asks about is the one the pane shows.
    if awaiting && let Some(at) = model.dashboard.pipelines.iter().position(|r| r.id == id) {
        model.pipeline_cursor = at;
        model.diff_view.scroll = 0;
    }
    effects
}

fn show_pipeline(model: &mut Model, run: crate::pipeline::PipelineRun) -> Vec<Effect> {
    let mut dashboard = model.dashboard.clone();
    match dashboard.pipelines.iter_mut().find(|r| r.id == run.id) {
        Some(shown) => *shown = run,
        None => {
            dashboard.pipelines.insert(0, run);
            // The selection stays on the run it was on.
            if !model.dashboard.pipelines.is_empty() {
                model.pipeline_cursor += 1;
            }
        }
    }
    on_dashboard(model, dashboard)
}

pub(super) fn on_host_checked(
    model: &mut Model,
    host: String,
    reachable: bool,
    at: String,
    error: Option<(crate::exec::HostFailure, String)>,
) -> Vec<Effect> {
    model.checked.insert(host.clone(), crate::app::model::Checked { reachable, at: Some(at.clone()) });
    // The status line's "checking N hosts" is over once an answer is in.
    model.flash = None;
    match &error {
        Some((failure, message)) => {
            let message = visible_line(message).into_owned();
            let record = crate::app::model::HostError { failure: *failure, message, at };
            model.host_errors.insert(host.clone(), record);
        }
        None => {
            model.host_errors.remove(&host);
        }
    }
    if reachable && error.is_none() {
        model.toast(ToastLevel::Success, model.locale.tf("toast.reachable", &[("host", &host)]));
    } else {
        let why = error.map(|(_, e)| e).unwrap_or_default();
        model.toast(ToastLevel::Error, model.locale.tf("toast.unreachable", &[("host", &host), ("error", &why)]));
    }
    Vec::new()
}

/// Streams the agent's words into the chat, its commands into the output
/// pane and into tool cells (with their output, shown when expanded).
pub(super) fn on_agent_event(model: &mut Model, event: AgentEvent) -> Vec<Effect> {
    match event {
        AgentEvent::Delta { agent, text } if agent == "main" => {
            match model.chat.last_mut() {
                Some(entry) if entry.role == ChatRole::Assistant => entry.text.push_str(&visible(&text)),
                _ => model.push_chat(ChatEntry::new(ChatRole::Assistant, text)),
            }
            if let Some(entry) = model.chat.last_mut() {
                entry.stream_markdown(&model.theme);
            }
            Vec::new()
        }
        AgentEvent::Delta { .. } => Vec::new(),
        AgentEvent::Pipeline(run) => on_pipeline(model, *run),
        AgentEvent::Tool { agent, name, .. } if name.starts_with("delegate_") => {
            model.push_chat(ChatEntry::new(ChatRole::Tool, format!("{agent} → {name}")));
            Vec::new()
        }
        AgentEvent::Tool { .. } => Vec::new(),
        AgentEvent::Command(c) => {
            let text = match (&c.refused, c.exit_code) {
                (Some(why), None) => format!("✗ {} $ {} — {why}", c.specialist, c.command),
                (_, code) => {
                    let code = code.map(|c| c.to_string()).unwrap_or_else(|| "-".into());
                    let exit = model.locale.tf("output.exit", &[("code", &code)]);
                    format!("⚙ {} $ {} → {exit}", c.specialist, c.command)
                }
            };
            let mut entry = ChatEntry::new(ChatRole::Tool, text);
            entry.detail = model.agent_output.remove(&c.host).unwrap_or_default();
            model.push_chat(entry);
            Vec::new()
        }
        AgentEvent::Notice(text) => {
            model.push_chat(ChatEntry::new(ChatRole::System, text));
            Vec::new()
        }
        // Agent commands share the output pane with the operator's (run 0 tracks no progress).
        AgentEvent::Exec(event) => {
            match &event {
                ExecEvent::Started { host, .. } => {
                    model.agent_output.insert(host.clone(), Vec::new());
                }
                ExecEvent::Line { host, line, .. } => {
                    let lines = model.agent_output.entry(host.clone()).or_default();
                    if lines.len() < TOOL_OUTPUT_LINES {
                        lines.push(visible_line(line).into_owned());
                    } else if lines.len() == TOOL_OUTPUT_LINES {
                        lines.push("…".into());
                    }
                }
                ExecEvent::Finished(_) => {}
            }
            let run = model.agent_run.unwrap_or(0);
            on_exec_event(model, run, event)
        }
    }
}

pub(super) fn on_exec_event(model: &mut Model, run: u64, event: ExecEvent) -> Vec<Effect> {
    if let Some(tracked) = model.runs.get_mut(&run) {
        tracked.apply(&event);
    }
    match event {
        ExecEvent::Started { .. } => Vec::new(),
        ExecEvent::Line { host, stream, line } => {
            // Host output never reaches the terminal as it is: escape sequences are shown, not run.
            let text = visible_line(&line).into_owned();
            // A round of a watch: what changed since the previous round is marked.
            let changed = super::watch::changed(model, run, &host, &text);
            let shown = in_view(model, &host);
            model.output.push_changed(LineKind::Output { host: host.into(), stream }, text, changed);
            keep_scroll_position(model, shown);
            Vec::new()
        }
        ExecEvent::Finished(result) => {
            let kind = LineKind::Outcome { host: result.host.as_str().into(), ok: result.success() };
            let shown = in_view(model, &result.host);
            model.output.push(kind, visible_line(&outcome_text(&result, &model.locale)).into_owned());
            keep_scroll_position(model, shown);
            let mut effects = Vec::new();
            if let Some(reachable) = reachability(&result) {
                let at = model.checked.get(&result.host).and_then(|c| c.at.clone());
                model.checked.insert(result.host.clone(), crate::app::model::Checked { reachable, at });
                effects.push(Effect::SetReachable { host: result.host.clone(), reachable });
            }
            effects
        }
    }
}

/// 1 when a line of `host` shows in the output pane (not folded, not another host's view), else 0: what a
/// scrolled-up screen moves by to keep its lines.
fn in_view(model: &Model, host: &str) -> usize {
    let shown = match model.output_view.host.as_deref() {
        Some(only) => only == host,
        None => !model.output.is_folded(host),
    };
    usize::from(shown)
}

/// What a result says about reachability: ran → yes; could not connect → no; otherwise unknown.
pub fn reachability(result: &HostResult) -> Option<bool> {
    if result.exit_code.is_some() {
        return Some(true);
    }
    result.failure.filter(|f| f.unreachable()).map(|_| false)
}

fn outcome_text(r: &HostResult, locale: &crate::i18n::Locale) -> String {
    let took = format!("{:.2}s", r.duration_ms as f64 / 1000.0);
    let exit = |code: i32| locale.tf("output.exit", &[("code", &code.to_string())]);
    match (&r.error, r.exit_code) {
        (Some(e), _) => format!("✗ {} · {e} · {took}", r.host),
        (None, Some(0)) => format!("✓ {} · {} · {took}", r.host, exit(0)),
        (None, Some(code)) => format!("✗ {} · {} · {took}", r.host, exit(code)),
        (None, None) => format!("✗ {} · {} · {took}", r.host, locale.t("output.no_exit")),
    }
}
