//! The only place console state changes. Pure: no I/O, no await; work for
//! the outside world is returned as [`Effect`]s. Split by concern: keys of
//! the text input ([`input`]), pane actions ([`panes`]), modals and forms
//! ([`modal`]), and events from workers ([`events`]).

mod chat;
mod events;
mod filter;
mod input;
mod inventory;
mod modal;
mod panes;
mod runs;
mod setup;
mod store;
mod watch;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, MouseEventKind};
use ratatui::layout::Rect;

use super::keymap::{Action, KeyContext};
use super::model::{ChatEntry, ChatRole, InputMode, Model, Pane, PendingPrompt, ToastLevel};
use super::msg::{Effect, Msg, PromptKind};

pub use events::reachability;
pub use filter::SYNC_LIMIT;
pub use input::{open_input, popup};
use panes::start_run;
use runs::quit_now;

/// Applies `msg` to `model`, then brings what the inventory lists in step
/// with its filter (whatever the message changed).
pub fn update(model: &mut Model, msg: Msg) -> Vec<Effect> {
    let mut effects = apply(model, msg);
    effects.extend(filter::follow(model));
    super::inventory::follow(model);
    if model.store_down.is_none() {
        return effects;
    }
    // What was refused is ended as a denial would end it (a run, a watch, the agent's turn).
    let (endings, mut kept) = store::refuse_writes_while_down(model, effects);
    for ending in endings {
        kept.extend(update(model, ending));
    }
    kept
}

fn apply(model: &mut Model, msg: Msg) -> Vec<Effect> {
    match msg {
        Msg::Key(key) if key.kind != KeyEventKind::Release => on_key(model, key),
        Msg::Key(_) => Vec::new(),
        Msg::Mouse(mouse) => {
            let screen = Rect::new(0, 0, model.size.0, model.size.1);
            let under = model.areas(screen).pane_at(mouse.column, mouse.row, model.view);
            match (mouse.kind, under) {
                (MouseEventKind::ScrollUp, Some(pane)) => panes::scroll(model, pane, true),
                (MouseEventKind::ScrollDown, Some(pane)) => panes::scroll(model, pane, false),
                (MouseEventKind::Down(_), _) if !model.prompts.is_empty() => {
                    return modal::on_prompt_click(model, mouse.column, mouse.row);
                }
                (MouseEventKind::Down(_), Some(pane)) if model.form.is_none() => {
                    let areas = model.areas(screen);
                    let labels: Vec<(Pane, usize)> =
                        Pane::VIEWS.iter().map(|p| (*p, model.locale.t(p.key()).chars().count())).collect();
                    if let Some(tab) = areas.tab_at(mouse.column, mouse.row, &labels) {
                        model.set_focus(tab);
                        return Vec::new();
                    }
                    model.set_focus(pane);
                    if pane == Pane::Inventory {
                        // The detail panel lies over rows next to the cursor: the table keeps its height.
                        let rows = usize::from(areas.inventory.height.saturating_sub(3));
                        if let Some(i) = areas.inventory_row(mouse.row, rows, model.inventory.cursor)
                            && i < model.visible_count()
                        {
                            model.inventory.cursor = i;
                        }
                    }
                }
                _ => {}
            }
            Vec::new()
        }
        Msg::Dashboard(dashboard) => events::on_dashboard(model, *dashboard),
        Msg::Pipeline(run) => events::on_pipeline(model, *run),
        Msg::Paste(text) => {
            // A pasted passphrase or answer goes to the prompt on screen.
            if let Some(front) = model.prompts.front_mut() {
                if matches!(front.request.kind, PromptKind::Secret | PromptKind::Text) {
                    front.typed.extend(text.chars().filter(|c| !c.is_control()));
                }
            } else if model.setup.is_some() && model.form.is_none() {
                setup::on_paste(model, &text);
            } else if let Some(form) = model.form.as_mut() {
                if let Some(value) = form.values.get_mut(form.focus) {
                    value.extend(text.chars().filter(|c| !c.is_control()));
                }
            } else {
                if !model.input.active {
                    open_input(model, "");
                }
                model.input.editor.insert_str(text.replace("\r\n", "\n").replace('\r', "\n"));
            }
            Vec::new()
        }
        Msg::Resize(w, h) => {
            model.size = (w, h);
            Vec::new()
        }
        Msg::HostsLoaded(hosts) => {
            let old = std::mem::replace(&mut model.hosts, hosts);
            // Answers about the old fleet: useless now, and they would keep it alive.
            model.inventory.answers.clear();
            // The store has what this console learnt (and maybe newer, from another one).
            model.checked.clear();
            if !model.inventory.marked.is_empty() {
                let names: std::collections::HashSet<&str> = model.hosts.iter().map(|h| h.name.as_str()).collect();
                model.inventory.marked.retain(|m| names.contains(m.as_str()));
            }
            panes::clamp_cursor(model);
            vec![Effect::Discard(old)]
        }
        Msg::Filtered { job, shown } => filter::on_filtered(model, job, *shown),
        Msg::Health(readings) => {
            model.health = super::inventory::by_host(readings);
            // Ordered by a reading: the order follows the new ones.
            model.inventory.order = None;
            Vec::new()
        }
        Msg::Exec { run, event } => events::on_exec_event(model, run, event),
        Msg::RunStarted { run } => runs::on_started(model, run),
        Msg::RunDone { run, results } => runs::on_done(model, run, &results),
        Msg::RunDenied { run, by } => runs::on_denied(model, run, &by),
        Msg::WatchTick { watch } => watch::tick(model, watch),
        Msg::WatchRefused { watch, why } => watch::refused(model, watch, &why),
        Msg::HostFailed { host, failure, error, at } => {
            runs::on_host_failed(model, host, failure, error, at);
            Vec::new()
        }
        Msg::Terminate => quit_now(model),
        Msg::Agent(event) => events::on_agent_event(model, event),
        Msg::AgentDone { error, summary } => {
            model.agent_busy = false;
            // The finished replies, rendered whole once (a block rendered alone can differ a little).
            for entry in model.chat.iter_mut().rev().take_while(|e| e.role != ChatRole::User) {
                if entry.streamed.is_some() {
                    entry.render_markdown(&model.theme);
                }
            }
            runs::finish_agent_run(model);
            match error {
                Some(e) if model.focus == Pane::Chat => model.push_chat(ChatEntry::new(ChatRole::System, e)),
                Some(e) => {
                    model.push_chat(ChatEntry::new(ChatRole::System, e.clone()));
                    model.toast(ToastLevel::Error, e);
                }
                None => model.flash = Some(summary),
            }
            let mut effects = vec![Effect::Refresh];
            effects.extend(runs::quit_if_only_runs_held_it(model));
            effects
        }
        Msg::Prompt(request) => {
            if request.kind == PromptKind::Approval {
                runs::on_approval_asked(model);
            }
            model.prompts.push_back(PendingPrompt::new(request));
            Vec::new()
        }
        Msg::Error(e) => {
            model.toast(ToastLevel::Error, e);
            Vec::new()
        }
        Msg::Typed(line) => input::typed(model, &line),
        Msg::SetupModels { base_url, result } => setup::on_models(model, &base_url, result),
        Msg::SetupSaved(saved) => setup::on_saved(model, saved),
        Msg::StoreChanged(topic) => store::on_changed(model, topic),
        Msg::StoreLost(why) => store::on_lost(model, why),
        Msg::StoreBack => store::on_back(model),
        Msg::Note(text) => {
            model.push_chat(ChatEntry::new(ChatRole::System, text));
            model.chat_view.scroll = 0;
            Vec::new()
        }
        Msg::Toast { level, text } => {
            model.toast(level, text);
            Vec::new()
        }
        Msg::DriftChecked { resources, findings, failed } => {
            panes::on_drift_checked(model, resources, findings, failed)
        }
        Msg::DriftChanged => vec![Effect::Refresh],
        Msg::DriftTick if model.drift_checking => Vec::new(),
        Msg::DriftTick => {
            model.drift_checking = true;
            vec![Effect::CheckDrift]
        }
        Msg::Tick => {
            for toast in model.toasts.iter_mut() {
                toast.ticks_left = toast.ticks_left.saturating_sub(1);
            }
            model.toasts.retain(|t| t.ticks_left > 0);
            Vec::new()
        }
        Msg::HostChecked { host, reachable, at, error } => events::on_host_checked(model, host, reachable, at, error),
        Msg::ConversationLoaded(mut entries) => {
            for entry in entries.iter_mut() {
                entry.render_markdown(&model.theme);
            }
            model.chat = entries;
            model.chat_view = Default::default();
            model.set_focus(Pane::Chat);
            Vec::new()
        }
    }
}

fn on_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    match model.input_mode() {
        InputMode::Prompt => modal::on_prompt_key(model, key),
        InputMode::Form => modal::on_form_key(model, key),
        InputMode::Setup => setup::on_key(model, key),
        InputMode::TagPicker => {
            modal::on_tag_picker_key(model, key);
            Vec::new()
        }
        InputMode::InventoryPicker => {
            inventory::on_picker_key(model, key);
            Vec::new()
        }
        InputMode::Help => {
            on_help_key(model, key);
            Vec::new()
        }
        InputMode::Editor => input::on_input_key(model, key),
        InputMode::Filter => {
            panes::on_filter_key(model, key);
            Vec::new()
        }
        InputMode::Search => {
            panes::on_search_key(model, key);
            Vec::new()
        }
        InputMode::DriftFilter => {
            panes::on_drift_filter_key(model, key);
            Vec::new()
        }
        InputMode::Panes => {
            // The focused pane's bindings win over the global ones.
            let context = KeyContext::of(model.focus);
            let action = model.keymap.action(context, &key).or_else(|| model.keymap.action(KeyContext::Global, &key));
            // Only a second Esc in a row edits the last question.
            if action != Some(Action::EditLast) {
                model.chat_view.edit_armed = false;
            }
            match action {
                Some(action) => run_action(model, action),
                None => Vec::new(),
            }
        }
    }
}

/// The help overlay scrolls; Esc, Enter, `?` or `q` close it.
fn on_help_key(model: &mut Model, key: KeyEvent) {
    let action = model.keymap.action(KeyContext::Global, &key);
    let page = usize::from(model.size.1 / 2).max(1);
    let scroll = &mut model.help_scroll;
    match key.code {
        KeyCode::Down | KeyCode::Char('j') => *scroll += 1,
        KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
        KeyCode::PageDown | KeyCode::Char(' ') => *scroll += page,
        KeyCode::PageUp => *scroll = scroll.saturating_sub(page),
        KeyCode::Home | KeyCode::Char('g') => *scroll = 0,
        KeyCode::End | KeyCode::Char('G') => *scroll = usize::MAX / 2,
        KeyCode::Esc | KeyCode::Enter => model.help_open = false,
        _ if matches!(action, Some(Action::Help | Action::Quit)) => model.help_open = false,
        _ => {}
    }
}

/// Does what `action` means in the focused pane (keys and the `:` palette).
fn run_action(model: &mut Model, action: Action) -> Vec<Effect> {
    match action {
        Action::Quit => return runs::quit(model),
        Action::Interrupt => return runs::interrupt(model),
        Action::Rerun => return runs::rerun(model, false),
        Action::RerunFailed => return runs::rerun(model, true),
        Action::Group => runs::toggle_mode(model, super::model::OutputMode::Grouped),
        Action::FailedOnly => runs::toggle_mode(model, super::model::OutputMode::Failed),
        Action::Suspend => return vec![Effect::Suspend],
        Action::Help => {
            model.help_open = true;
            model.help_scroll = 0;
        }
        Action::Zoom => model.zoomed = !model.zoomed,
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
        Action::Slash => open_input(model, "/"),
        other => {
            return match model.focus {
                Pane::Inventory => panes::on_inventory_action(model, other),
                Pane::Output => panes::on_output_action(model, other),
                Pane::Pipeline => panes::on_pipeline_action(model, other),
                Pane::Chat => panes::on_chat_action(model, other),
                Pane::Drift => panes::on_drift_action(model, other),
                Pane::Metrics => Vec::new(),
            };
        }
    }
    Vec::new()
}

/// A palette word: focus the pane the action belongs to, then do it.
fn run_palette_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let pane = match action {
        Action::Add
        | Action::Edit
        | Action::Delete
        | Action::Check
        | Action::Details
        | Action::Tags
        | Action::Sort
        | Action::Columns
        | Action::Ssh => Some(Pane::Inventory),
        Action::Follow | Action::Search | Action::Copy | Action::Group | Action::FailedOnly => Some(Pane::Output),
        Action::SideBySide => Some(Pane::Pipeline),
        _ => None,
    };
    if let Some(pane) = pane {
        model.set_focus(pane);
    }
    run_action(model, action)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_console;
#[cfg(test)]
mod tests_fleet;
#[cfg(test)]
mod tests_inventory;
#[cfg(test)]
mod tests_setup;
#[cfg(test)]
mod tests_watch;
