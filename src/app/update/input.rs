//! The input line: a multi-line text area (Alt-Enter or Ctrl-J adds a line),
//! history on Up/Down at the first/last line, the completion popup (Tab, or
//! Enter on a suggestion), and what a submitted line does.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::CursorMove;

use super::{run_palette_action, start_run};
use crate::app::command_line::{self, CommandLine};
use crate::app::completion::{self, Suggestion};
use crate::app::model::{ChatEntry, ChatRole, Model, Pane};
use crate::app::msg::Effect;
use crate::inventory::resolve_targets;
use crate::redact::redact_command;

/// Opens the input with `prefix` typed (`!`, `:` or nothing).
pub fn open_input(model: &mut Model, prefix: &str) {
    model.input.active = true;
    model.input.set_text(prefix);
    model.input.history_pos = None;
    model.flash = None;
}

/// The popup's suggestions, or none when it is closed.
pub fn popup(model: &Model) -> Vec<Suggestion> {
    if !model.input.active || model.input.completion_closed {
        return Vec::new();
    }
    completion::suggest(&model.input.text(), &model.hosts)
}

pub(super) fn on_input_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.intersects(KeyModifiers::ALT | KeyModifiers::SHIFT);
    let text = model.input.text();
    let suggestions = popup(model);
    let count = suggestions.len();
    let chosen = suggestions.into_iter().nth(model.input.completion.min(count.saturating_sub(1)));
    let something_runs = model.agent_busy || model.watch.is_some() || model.newest_active_run().is_some();
    let input = &mut model.input;
    match (key.code, chosen) {
        (KeyCode::Esc, Some(_)) => input.completion_closed = true,
        (KeyCode::Esc, None) => input.active = false,
        (KeyCode::Tab, Some(s)) => input.set_text(&s.replacement),
        (KeyCode::Enter, Some(s)) if !alt && s.replacement.trim() != text.trim() => input.set_text(&s.replacement),
        (KeyCode::Down, Some(_)) => input.completion = (input.completion + 1) % count,
        (KeyCode::Up, Some(_)) => input.completion = (input.completion + count - 1) % count,
        (KeyCode::Enter, _) if alt => input.editor.insert_newline(),
        (KeyCode::Char('j'), _) if ctrl => input.editor.insert_newline(),
        (KeyCode::Enter, _) => return submit(model),
        (KeyCode::Char('c'), _) if ctrl => {
            // An empty line: Ctrl-C stops what runs (the input stays open for the next question),
            // and with nothing running leaves the input.
            if text.is_empty() && something_runs {
                return super::runs::interrupt(model);
            }
            if text.is_empty() {
                input.active = false;
            }
            input.set_text("");
        }
        (KeyCode::Char('u'), _) if ctrl => {
            input.editor.delete_line_by_head();
        }
        // The chat scrolls while a question is being typed (an answer streams in meanwhile).
        (KeyCode::PageUp | KeyCode::PageDown, _) => {
            let page = super::panes::page(model);
            super::panes::scroll_chat(model, page, key.code == KeyCode::PageUp);
        }
        (KeyCode::Up, _) if input.editor.cursor().0 == 0 => browse_history(model, true),
        (KeyCode::Down, _) if input.editor.cursor().0 + 1 >= input.editor.lines().len() => {
            browse_history(model, false);
        }
        (KeyCode::Backspace, _) if text.is_empty() => input.active = false,
        _ => {
            input.editor.input(key);
            // Like vim's command line: deleting the last character leaves the input.
            if key.code == KeyCode::Backspace && input.text().is_empty() {
                input.active = false;
            }
            if input.text() != text {
                input.completion = 0;
                input.completion_closed = false;
            }
        }
    }
    Vec::new()
}

fn browse_history(model: &mut Model, older: bool) {
    let input = &mut model.input;
    if input.history.is_empty() {
        return;
    }
    let last = input.history.len() - 1;
    let pos = match (input.history_pos, older) {
        (None, true) => Some(last),
        (Some(p), true) => Some(p.saturating_sub(1)),
        (Some(p), false) if p < last => Some(p + 1),
        (_, false) => None,
    };
    let text = pos.map(|p| input.history[p].clone()).unwrap_or_default();
    input.set_text(&text);
    input.history_pos = pos;
    if older {
        input.editor.move_cursor(CursorMove::Top);
        input.editor.move_cursor(CursorMove::End);
    }
}

fn submit(model: &mut Model) -> Vec<Effect> {
    let line = model.input.text();
    model.input.active = false;
    model.input.set_text("");
    model.input.history_pos = None;
    let mut effects = Vec::new();
    if !line.trim().is_empty() && model.input.history.last() != Some(&line) {
        model.input.history.push(line.clone());
        effects.push(Effect::SaveHistory(redact_command(&line)));
    }
    let parsed = command_line::parse(&line);
    // A question leaves the input open for the next one, as a chat does (a letter typed right after
    // sending must not be read as a key: `q` would quit). Commands and runs close it.
    let question = matches!(parsed, Ok(CommandLine::Chat(_)));
    effects.extend(run_parsed(model, parsed));
    if question && model.setup.is_none() {
        model.input.active = true;
    }
    effects
}

/// A command line from a worker (`/setup` saving its answers), handled as if typed, not kept in the
/// input history.
pub(super) fn typed(model: &mut Model, line: &str) -> Vec<Effect> {
    run_line(model, line)
}

fn run_line(model: &mut Model, line: &str) -> Vec<Effect> {
    run_parsed(model, command_line::parse(line))
}

/// What a parsed line does.
fn run_parsed(model: &mut Model, parsed: Result<CommandLine, crate::i18n::Text>) -> Vec<Effect> {
    let mut effects = Vec::new();
    match parsed {
        Err(e) => model.flash = Some(e.render(&model.locale)),
        Ok(CommandLine::Nothing) => {}
        Ok(CommandLine::Quit) => effects.extend(super::runs::quit(model)),
        Ok(CommandLine::Watch { every, command }) => effects.extend(super::watch::start(model, every, command)),
        Ok(CommandLine::WatchOff) => effects.extend(super::watch::stop(model)),
        Ok(CommandLine::Retry) => effects.extend(super::chat::retry(model)),
        Ok(CommandLine::EditLast) => super::chat::edit_last(model),
        Ok(CommandLine::Cancel(id)) => effects.extend(super::runs::cancel(model, id)),
        Ok(CommandLine::Export { run, path }) => effects.extend(super::runs::export(model, run, path)),
        Ok(CommandLine::Diff(a, b)) => super::runs::diff(model, a, b),
        Ok(CommandLine::Help) => model.help_open = true,
        Ok(CommandLine::Reload) => effects.push(Effect::ReloadHosts),
        Ok(CommandLine::Review(id)) => effects.push(Effect::Review(id)),
        Ok(CommandLine::ImportHosts(path)) => effects.push(Effect::ImportHosts(path)),
        Ok(CommandLine::Clear) => model.output.clear(),
        Ok(CommandLine::Action(action)) => effects.extend(run_palette_action(model, action)),
        Ok(CommandLine::Hosts(filter)) => {
            model.inventory.filter = filter;
            model.set_focus(Pane::Inventory);
            super::panes::clamp_cursor(model);
        }
        Ok(CommandLine::Secret(command)) => effects.push(Effect::Secret(command)),
        Ok(CommandLine::Mcp(command)) => effects.push(Effect::Mcp(command)),
        Ok(CommandLine::Skill(line)) => effects.push(Effect::Skill(line)),
        Ok(CommandLine::Report(path)) => effects.push(Effect::Report(path)),
        Ok(CommandLine::Setup) => super::setup::open(model),
        Ok(CommandLine::Conv(conv)) => effects.push(Effect::Conversations(conv)),
        Ok(CommandLine::Audit(count)) => effects.push(Effect::ShowAudit(count)),
        Ok(CommandLine::New) => {
            model.chat.retain(|e| e.role == ChatRole::System && e.text == model.locale.t("banner.no_model"));
            model.push_chat(ChatEntry::new(ChatRole::System, model.locale.t("chat.new")));
            model.chat_view = Default::default();
            effects.push(Effect::NewConversation);
        }
        Ok(CommandLine::Language(code)) if code.is_empty() => {
            let note = model.locale.tf("language.list", &[("codes", &crate::i18n::languages().join(", "))]);
            model.push_chat(ChatEntry::new(ChatRole::System, note));
        }
        Ok(CommandLine::Language(code)) => match crate::i18n::Locale::new(&code) {
            Ok(locale) => {
                model.set_locale(locale);
                model.push_chat(ChatEntry::new(ChatRole::System, model.locale.t("language.switched")));
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
                model.flash = Some(model.locale.t("flash.no_selection").to_string());
            } else {
                effects.push(start_run(model, hosts, command));
            }
        }
        Ok(CommandLine::Change { kind, path, targets, plan_only }) => {
            let hosts = match targets.as_deref().map(|t| resolve_targets(t, &model.hosts, &model.ssh_aliases)) {
                None => Ok(Vec::new()),
                Some(resolved) => resolved,
            };
            match hosts {
                Ok(hosts) => {
                    model.set_focus(Pane::Pipeline);
                    effects.push(Effect::StartChange { kind, path, hosts, plan_only });
                }
                Err(e) => model.flash = Some(e.to_string()),
            }
        }
        Ok(CommandLine::Exec { targets, command }) => match resolve_targets(&targets, &model.hosts, &model.ssh_aliases)
        {
            Ok(hosts) => effects.push(start_run(model, hosts, command)),
            Err(e) => model.flash = Some(e.to_string()),
        },
        Ok(CommandLine::Chat(text)) => {
            // A new question: back to the bottom, whatever was scrolled or selected.
            model.chat_view = Default::default();
            model.push_chat(ChatEntry::new(ChatRole::User, text.clone()));
            if model.model_configured && model.agent_busy {
                model.flash = Some(model.locale.t("flash.agent_busy").to_string());
            } else if model.model_configured {
                model.agent_busy = true;
                super::runs::start_agent_run(model, &text);
                effects.push(Effect::AgentTurn(text));
            } else {
                // No model: a runbook may still answer it (a worker says so, or that nobody can).
                effects.push(Effect::Runbook(text));
            }
            model.focus = Pane::Chat;
        }
    }
    effects
}
