//! The only place console state changes. Pure: no I/O, no await; work for
//! the outside world is returned as [`Effect`]s.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};
use ratatui::layout::Rect;

use super::command_line::{self, CommandLine};
use super::keymap::{Action, KeyContext};
use super::model::{ChatEntry, ChatRole, Model, Pane, PendingPrompt, RunProgress};
use super::msg::{Effect, Msg, PromptAnswer, PromptKind};
use super::output_buffer::LineKind;
use crate::agent::AgentEvent;
use crate::exec::{ExecEvent, HostResult};
use crate::inventory::resolve_targets;
use crate::redact::redact_command;

/// Applies `msg` to `model`.
pub fn update(model: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(key) if key.kind != KeyEventKind::Release => on_key(model, key),
        Msg::Key(_) => Vec::new(),
        Msg::Mouse(mouse) => {
            match mouse.kind {
                MouseEventKind::ScrollUp if model.view == Pane::Output => scroll_output(model, 3, true),
                MouseEventKind::ScrollDown if model.view == Pane::Output => scroll_output(model, 3, false),
                MouseEventKind::Down(_) if model.prompts.is_empty() => {
                    let screen = Rect::new(0, 0, model.size.0, model.size.1);
                    if let Some(pane) = super::layout::Areas::of(screen).pane_at(mouse.column, mouse.row, model.view) {
                        model.set_focus(pane);
                    }
                }
                _ => {}
            }
            Vec::new()
        }
        Msg::Dashboard(dashboard) => {
            model.dashboard = *dashboard;
            model.pipeline_cursor = model.pipeline_cursor.min(model.dashboard.pipelines.len().saturating_sub(1));
            Vec::new()
        }
        Msg::Paste(text) => {
            if model.input.active {
                for c in text.chars().filter(|c| !c.is_control()) {
                    insert_char(model, c);
                }
            }
            Vec::new()
        }
        Msg::Resize(w, h) => {
            model.size = (w, h);
            Vec::new()
        }
        Msg::HostsLoaded(hosts) => {
            model.hosts = hosts;
            let names: Vec<String> = model.hosts.iter().map(|h| h.name.clone()).collect();
            model.inventory.marked.retain(|m| names.contains(m));
            clamp_cursor(model);
            Vec::new()
        }
        Msg::Exec { run, event } => on_exec_event(model, run, event),
        Msg::RunDone { run, results } => {
            let ok = results.iter().filter(|r| r.success()).count();
            if let Some(progress) = model.runs.remove(&run) {
                model.flash = Some(format!("{}: {ok}/{} hosts succeeded", progress.command, results.len()));
            }
            vec![Effect::Refresh]
        }
        Msg::RunDenied { run, by } => {
            if let Some(progress) = model.runs.remove(&run) {
                model.output.push(LineKind::Outcome { ok: false }, format!("✗ not run: denied by {by}"));
                model.flash = Some(format!("{}: denied", progress.command));
            }
            Vec::new()
        }
        Msg::Agent(event) => on_agent_event(model, event),
        Msg::AgentDone { error, summary } => {
            model.agent_busy = false;
            if let Some(e) = error {
                model.chat.push(ChatEntry { role: ChatRole::System, text: e });
            }
            model.flash = Some(summary);
            vec![Effect::Refresh]
        }
        Msg::Prompt(request) => {
            model.prompts.push_back(PendingPrompt { request, typed: String::new() });
            Vec::new()
        }
        Msg::Error(e) => {
            model.flash = Some(e);
            Vec::new()
        }
        Msg::Note(text) => {
            model.chat.push(ChatEntry { role: ChatRole::System, text });
            Vec::new()
        }
    }
}

/// Streams the agent's words into the chat, its commands into the output pane.
fn on_agent_event(model: &mut Model, event: AgentEvent) -> Vec<Effect> {
    match event {
        AgentEvent::Delta { agent, text } if agent == "main" => {
            match model.chat.last_mut() {
                Some(entry) if entry.role == ChatRole::Assistant => entry.text.push_str(&text),
                _ => model.chat.push(ChatEntry { role: ChatRole::Assistant, text }),
            }
            Vec::new()
        }
        AgentEvent::Delta { .. } => Vec::new(),
        AgentEvent::Tool { agent, name, .. } if name.starts_with("delegate_") => {
            model.chat.push(ChatEntry { role: ChatRole::Tool, text: format!("{agent} → {name}") });
            Vec::new()
        }
        AgentEvent::Tool { .. } => Vec::new(),
        AgentEvent::Command(c) => {
            let text = match (&c.refused, c.exit_code) {
                (Some(why), None) => format!("✗ {} $ {} — {why}", c.specialist, c.command),
                (_, code) => format!(
                    "⚙ {} $ {} → exit {}",
                    c.specialist,
                    c.command,
                    code.map(|c| c.to_string()).unwrap_or_else(|| "-".into())
                ),
            };
            model.chat.push(ChatEntry { role: ChatRole::Tool, text });
            Vec::new()
        }
        AgentEvent::Notice(text) => {
            model.chat.push(ChatEntry { role: ChatRole::System, text });
            Vec::new()
        }
        // Agent commands share the output pane with the operator's (run 0 tracks no progress).
        AgentEvent::Exec(event) => on_exec_event(model, 0, event),
    }
}

fn on_exec_event(model: &mut Model, run: u64, event: ExecEvent) -> Vec<Effect> {
    match event {
        ExecEvent::Started { .. } => Vec::new(),
        ExecEvent::Line { host, stream, line } => {
            model.output.push(LineKind::Output { host, stream }, line);
            keep_scroll_position(model, 1);
            Vec::new()
        }
        ExecEvent::Finished(result) => {
            if let Some(progress) = model.runs.get_mut(&run) {
                progress.done += 1;
                if !result.success() {
                    progress.failed += 1;
                }
            }
            model.output.push(LineKind::Outcome { ok: result.success() }, outcome_text(&result));
            keep_scroll_position(model, 1);
            let mut effects = Vec::new();
            if let Some(reachable) = reachability(&result) {
                if let Some(host) = model.hosts.iter_mut().find(|h| h.name == result.host) {
                    host.reachable = Some(reachable);
                }
                effects.push(Effect::SetReachable { host: result.host.clone(), reachable });
            }
            effects
        }
    }
}

/// What a result says about reachability: ran → yes; could not connect → no; otherwise unknown.
fn reachability(result: &HostResult) -> Option<bool> {
    if result.exit_code.is_some() {
        return Some(true);
    }
    let error = result.error.as_deref().unwrap_or("");
    if error.starts_with("cannot reach") || error.starts_with("connection to") { Some(false) } else { None }
}

fn outcome_text(r: &HostResult) -> String {
    let took = format!("{:.2}s", r.duration_ms as f64 / 1000.0);
    match (&r.error, r.exit_code) {
        (Some(e), _) => format!("✗ {} · {e} · {took}", r.host),
        (None, Some(0)) => format!("✓ {} · exit 0 · {took}", r.host),
        (None, Some(code)) => format!("✗ {} · exit {code} · {took}", r.host),
        (None, None) => format!("✗ {} · no exit status · {took}", r.host),
    }
}

/// When the user has scrolled up, keep the same lines on screen as new ones arrive.
fn keep_scroll_position(model: &mut Model, added: usize) {
    if !model.output_view.follow {
        model.output_view.scroll = (model.output_view.scroll + added).min(model.output.len());
    }
}

fn scroll_output(model: &mut Model, lines: usize, up: bool) {
    let view = &mut model.output_view;
    if up {
        view.scroll = (view.scroll + lines).min(model.output.len().saturating_sub(1));
        view.follow = false;
    } else {
        view.scroll = view.scroll.saturating_sub(lines);
        view.follow = view.scroll == 0;
    }
}

fn on_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    if !model.prompts.is_empty() {
        return on_prompt_key(model, key);
    }
    if model.help_open {
        let action = model.keymap.action(KeyContext::Global, &key);
        if matches!(key.code, KeyCode::Esc | KeyCode::Enter) || matches!(action, Some(Action::Help | Action::Quit)) {
            model.help_open = false;
        }
        return Vec::new();
    }
    if model.input.active {
        return on_input_key(model, key);
    }
    if model.inventory.filtering {
        on_filter_key(model, key);
        return Vec::new();
    }
    if model.output_view.searching {
        on_search_key(model, key);
        return Vec::new();
    }
    // The focused pane's bindings win over the global ones.
    let context = KeyContext::of(model.focus);
    let Some(action) = model.keymap.action(context, &key).or_else(|| model.keymap.action(KeyContext::Global, &key))
    else {
        return Vec::new();
    };
    match action {
        Action::Quit => model.should_quit = true,
        Action::Suspend => return vec![Effect::Suspend],
        Action::Copy if model.focus == Pane::Output => {
            let height = usize::from(model.size.1.saturating_sub(2));
            let text: Vec<&str> =
                model.output.window(height, model.output_view.scroll).map(|l| l.text.as_str()).collect();
            model.flash = Some(format!("copied {} lines", text.len()));
            return vec![Effect::Copy(text.join("\n"))];
        }
        Action::Help => model.help_open = true,
        Action::NextPane => model.set_focus(model.focus.next()),
        Action::PreviousPane => model.set_focus(model.focus.previous()),
        Action::FocusInventory => model.set_focus(Pane::Inventory),
        Action::FocusOutput => model.set_focus(Pane::Output),
        Action::FocusChat => model.set_focus(Pane::Chat),
        Action::FocusPipeline => model.set_focus(Pane::Pipeline),
        Action::FocusMetrics => model.set_focus(Pane::Metrics),
        Action::FocusDrift => model.set_focus(Pane::Drift),
        Action::RunOnSelection | Action::Open => open_input(model, "!"),
        Action::CommandLine => open_input(model, ":"),
        Action::Write => open_input(model, ""),
        other => match model.focus {
            Pane::Inventory => on_inventory_action(model, other),
            Pane::Output => on_output_action(model, other),
            Pane::Pipeline => on_pipeline_action(model, other),
            Pane::Chat | Pane::Metrics | Pane::Drift => {}
        },
    }
    Vec::new()
}

fn open_input(model: &mut Model, prefix: &str) {
    model.input.active = true;
    model.input.text = prefix.to_string();
    model.input.cursor = prefix.chars().count();
    model.input.history_pos = None;
    model.flash = None;
}

fn on_inventory_action(model: &mut Model, action: Action) {
    let count = model.visible_hosts().len();
    match action {
        Action::Down => model.inventory.cursor = (model.inventory.cursor + 1).min(count.saturating_sub(1)),
        Action::Up => model.inventory.cursor = model.inventory.cursor.saturating_sub(1),
        Action::Top => model.inventory.cursor = 0,
        Action::Bottom => model.inventory.cursor = count.saturating_sub(1),
        Action::Mark => {
            let name = model.visible_hosts().get(model.inventory.cursor).map(|h| h.name.clone());
            if let Some(name) = name
                && !model.inventory.marked.remove(&name)
            {
                model.inventory.marked.insert(name);
            }
        }
        Action::MarkAll => {
            let visible: Vec<String> = model.visible_hosts().iter().map(|h| h.name.clone()).collect();
            if visible.iter().all(|n| model.inventory.marked.contains(n)) {
                model.inventory.marked.clear();
            } else {
                model.inventory.marked.extend(visible);
            }
        }
        Action::Filter => model.inventory.filtering = true,
        Action::Reset => {
            model.inventory.filter.clear();
            model.inventory.marked.clear();
        }
        _ => {}
    }
}

fn on_filter_key(model: &mut Model, key: KeyEvent) {
    match key.code {
        KeyCode::Enter => model.inventory.filtering = false,
        KeyCode::Esc => {
            model.inventory.filtering = false;
            model.inventory.filter.clear();
        }
        KeyCode::Backspace => {
            model.inventory.filter.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => model.inventory.filter.push(c),
        _ => {}
    }
    clamp_cursor(model);
}

fn clamp_cursor(model: &mut Model) {
    let count = model.visible_hosts().len();
    model.inventory.cursor = model.inventory.cursor.min(count.saturating_sub(1));
}

fn on_pipeline_action(model: &mut Model, action: Action) {
    let last = model.dashboard.pipelines.len().saturating_sub(1);
    model.pipeline_cursor = match action {
        Action::Down => (model.pipeline_cursor + 1).min(last),
        Action::Up => model.pipeline_cursor.saturating_sub(1),
        Action::Top => 0,
        Action::Bottom => last,
        _ => model.pipeline_cursor,
    };
}

fn on_output_action(model: &mut Model, action: Action) {
    let page = usize::from(model.size.1.saturating_sub(8)).max(1);
    match action {
        Action::Up => scroll_output(model, 1, true),
        Action::Down => scroll_output(model, 1, false),
        Action::PageUp => scroll_output(model, page, true),
        Action::PageDown => scroll_output(model, page, false),
        Action::Top => scroll_output(model, usize::MAX / 2, true),
        Action::Bottom | Action::Follow => {
            model.output_view.scroll = 0;
            model.output_view.follow = true;
        }
        Action::Clear => {
            model.output.clear();
            model.output_view.scroll = 0;
        }
        Action::Search => {
            model.output_view.searching = true;
            model.output_view.search.clear();
        }
        Action::NextMatch | Action::PreviousMatch => jump_to_match(model, action == Action::NextMatch),
        Action::NextHost => {
            let hosts = model.output.hosts();
            let next = match &model.output_view.host {
                None => hosts.first().map(|h| h.to_string()),
                Some(current) => {
                    let i = hosts.iter().position(|h| h == current);
                    i.and_then(|i| hosts.get(i + 1)).map(|h| h.to_string())
                }
            };
            model.output_view.host = next;
            model.output_view.scroll = 0;
            model.output_view.follow = true;
        }
        _ => {}
    }
}

fn jump_to_match(model: &mut Model, older: bool) {
    let view = &mut model.output_view;
    match model.output.find(&view.search, view.scroll, older) {
        Some(position) => {
            view.scroll = position;
            view.follow = position == 0;
        }
        None if !view.search.is_empty() => model.flash = Some(format!("no more matches for {:?}", view.search)),
        None => {}
    }
}

fn on_search_key(model: &mut Model, key: KeyEvent) {
    let view = &mut model.output_view;
    match key.code {
        KeyCode::Enter => {
            view.searching = false;
            // Search starts from the newest line and goes back.
            view.scroll = 0;
            if model.output.find(&view.search, 0, false).is_none() {
                jump_to_match(model, true);
            }
        }
        KeyCode::Esc => {
            view.searching = false;
            view.search.clear();
        }
        KeyCode::Backspace => {
            view.search.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => view.search.push(c),
        _ => {}
    }
}

fn insert_char(model: &mut Model, c: char) {
    let input = &mut model.input;
    let at = byte_index(&input.text, input.cursor);
    input.text.insert(at, c);
    input.cursor += 1;
}

fn byte_index(text: &str, chars: usize) -> usize {
    text.char_indices().nth(chars).map(|(i, _)| i).unwrap_or(text.len())
}

fn on_input_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let input = &mut model.input;
    match key.code {
        KeyCode::Esc => input.active = false,
        KeyCode::Char('c') if ctrl => {
            if input.text.is_empty() {
                input.active = false;
            }
            input.text.clear();
            input.cursor = 0;
        }
        KeyCode::Char('u') if ctrl => {
            let at = byte_index(&input.text, input.cursor);
            input.text.replace_range(..at, "");
            input.cursor = 0;
        }
        KeyCode::Enter => return submit(model),
        KeyCode::Backspace if input.cursor > 0 => {
            input.cursor -= 1;
            let at = byte_index(&input.text, input.cursor);
            input.text.remove(at);
            if input.text.is_empty() {
                input.active = false;
            }
        }
        KeyCode::Delete if input.cursor < input.text.chars().count() => {
            let at = byte_index(&input.text, input.cursor);
            input.text.remove(at);
        }
        KeyCode::Left => input.cursor = input.cursor.saturating_sub(1),
        KeyCode::Right => input.cursor = (input.cursor + 1).min(input.text.chars().count()),
        KeyCode::Home => input.cursor = 0,
        KeyCode::End => input.cursor = input.text.chars().count(),
        KeyCode::Up => browse_history(model, true),
        KeyCode::Down => browse_history(model, false),
        KeyCode::Char(c) if !ctrl => insert_char(model, c),
        _ => {}
    }
    Vec::new()
}

fn browse_history(model: &mut Model, older: bool) {
    let input = &mut model.input;
    if input.history.is_empty() {
        return;
    }
    let last = input.history.len() - 1;
    input.history_pos = match (input.history_pos, older) {
        (None, true) => Some(last),
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) if p < last => Some(p + 1),
        (_, false) => None,
    };
    input.text = input.history_pos.map(|p| input.history[p].clone()).unwrap_or_default();
    input.cursor = input.text.chars().count();
}

fn submit(model: &mut Model) -> Vec<Effect> {
    let line = std::mem::take(&mut model.input.text);
    model.input.active = false;
    model.input.cursor = 0;
    model.input.history_pos = None;
    let mut effects = Vec::new();
    if !line.trim().is_empty() && model.input.history.last() != Some(&line) {
        model.input.history.push(line.clone());
        effects.push(Effect::SaveHistory(redact_command(&line)));
    }
    match command_line::parse(&line) {
        Err(e) => model.flash = Some(e),
        Ok(CommandLine::Nothing) => {}
        Ok(CommandLine::Quit) => model.should_quit = true,
        Ok(CommandLine::Help) => model.help_open = true,
        Ok(CommandLine::Reload) => effects.push(Effect::ReloadHosts),
        Ok(CommandLine::Clear) => model.output.clear(),
        Ok(CommandLine::Language(code)) => match crate::i18n::Locale::new(&code) {
            Ok(locale) => {
                model.set_locale(locale);
                model.chat.push(ChatEntry { role: ChatRole::System, text: model.locale.t("language.switched").into() });
                effects.push(Effect::SaveSetting { key: "ui.language".into(), value: code });
            }
            Err(_) => model.flash = Some(model.locale.tf("language.unknown", &[("code", &code)])),
        },
        Ok(CommandLine::Model(change)) => {
            if change.is_some() {
                model.model_configured = true;
            }
            effects.push(Effect::Model(change));
        }
        Ok(CommandLine::RunOnSelection(command)) => {
            let hosts = model.selection();
            if hosts.is_empty() {
                model.flash = Some("no host selected: mark hosts with Space or move the cursor onto one".into());
            } else {
                effects.push(start_run(model, hosts, command));
            }
        }
        Ok(CommandLine::Exec { targets, command }) => match resolve_targets(&targets, &model.hosts) {
            Ok(hosts) => effects.push(start_run(model, hosts, command)),
            Err(e) => model.flash = Some(e.to_string()),
        },
        Ok(CommandLine::Chat(text)) => {
            model.chat.push(ChatEntry { role: ChatRole::User, text: text.clone() });
            if model.model_configured && model.agent_busy {
                model.flash = Some("the agent is still working on the previous message".into());
            } else if model.model_configured {
                model.agent_busy = true;
                effects.push(Effect::AgentTurn(text));
            } else {
                model.chat.push(ChatEntry { role: ChatRole::System, text: model.locale.t("chat.no_answer").into() });
            }
            model.focus = Pane::Chat;
        }
    }
    effects
}

fn start_run(model: &mut Model, hosts: Vec<crate::inventory::Host>, command: String) -> Effect {
    let run = model.next_run;
    model.next_run += 1;
    let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
    let plural = if hosts.len() == 1 { "" } else { "s" };
    model.output.push(
        LineKind::Header,
        format!("$ {} · {} host{plural}: {}", redact_command(&command), hosts.len(), names.join(", ")),
    );
    model.output_view.follow = true;
    model.output_view.scroll = 0;
    model.runs.insert(run, RunProgress { command: redact_command(&command), hosts: hosts.len(), done: 0, failed: 0 });
    Effect::RunCommand { run, hosts, command }
}

fn on_prompt_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let action = model.keymap.action(KeyContext::Modal, &key);
    let Some(front) = model.prompts.front_mut() else { return Vec::new() };
    let kind = front.request.kind;
    let answer = match (kind, action) {
        // Ctrl-C (by default) declines everything queued.
        (_, Some(Action::DeclineAll)) => {
            return model.prompts.drain(..).filter_map(|mut p| decline(&mut p)).collect();
        }
        (_, Some(Action::Decline)) => Some(PromptAnswer::No),
        (PromptKind::Secret | PromptKind::Text, Some(Action::Submit)) => {
            Some(PromptAnswer::Secret(std::mem::take(&mut front.typed)))
        }
        (PromptKind::Secret | PromptKind::Text, _) => {
            match key.code {
                KeyCode::Backspace => {
                    front.typed.pop();
                }
                KeyCode::Char(c) if !ctrl => front.typed.push(c),
                _ => {}
            }
            None
        }
        (_, Some(Action::Yes)) => Some(PromptAnswer::Yes),
        (_, Some(Action::No)) => Some(PromptAnswer::No),
        (PromptKind::Approval, Some(Action::Always))
            if front.request.approval.as_ref().is_none_or(|a| a.rule_possible()) =>
        {
            Some(PromptAnswer::Always)
        }
        _ => None,
    };
    let Some(answer) = answer else { return Vec::new() };
    let mut done = model.prompts.pop_front();
    done.as_mut()
        .and_then(|p| p.request.reply.take())
        .map(|reply| vec![Effect::AnswerPrompt { reply, answer }])
        .unwrap_or_default()
}

fn decline(prompt: &mut PendingPrompt) -> Option<Effect> {
    prompt.request.reply.take().map(|reply| Effect::AnswerPrompt { reply, answer: PromptAnswer::No })
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
