//! What keys do in each pane: the inventory (cursor, marks, filter, tags,
//! details, host actions), the output (scroll, search, hosts, selection and
//! copy), the pipeline's diff viewer, and the chat's tool cells.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::diff_view::{Diff, jump_to_hunk};
use crate::app::keymap::Action;
use crate::app::model::{ChatRole, HostForm, KEPT_RUNS, Model, OnYes, OutputMode, Pane, PendingPrompt};
use crate::app::msg::{Effect, PromptKind, PromptRequest};
use crate::app::output_buffer::LineKind;
use crate::baseline::decide::HostDecision;
use crate::exec::runs::Run;
use crate::i18n::Text;
use crate::inventory::Host;
use crate::redact::redact_command;

/// Rows of the pane that a page moves.
pub(super) fn page(model: &Model) -> usize {
    usize::from(model.size.1.saturating_sub(8)).max(1)
}

/// Mouse wheel over `pane`.
pub(super) fn scroll(model: &mut Model, pane: Pane, up: bool) {
    match pane {
        Pane::Output if model.output_view.mode != OutputMode::Live => {
            scroll_report(model, if up { Action::Up } else { Action::Down });
        }
        Pane::Output => scroll_output(model, 3, up),
        Pane::Chat => scroll_chat(model, 3, up),
        Pane::Pipeline => scroll_diff(model, 3, up),
        Pane::Inventory => {
            let count = model.visible_count();
            let cursor = &mut model.inventory.cursor;
            *cursor = if up { cursor.saturating_sub(1) } else { (*cursor + 1).min(count.saturating_sub(1)) };
        }
        Pane::Metrics | Pane::Drift => {}
    }
}

/// Starts run `model.next_run` of `command` on `hosts`: a header in the output and progress.
pub(super) fn start_run(model: &mut Model, hosts: Vec<Host>, command: String) -> Effect {
    let run = model.next_run;
    model.next_run += 1;
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let key = if hosts.len() == 1 { "output.header_one" } else { "output.header_many" };
    let shown = crate::exec::runs::compress_names(&names);
    let args = [("command", redact_command(&command)), ("count", hosts.len().to_string()), ("hosts", shown)];
    let args: Vec<(&str, &str)> = args.iter().map(|(k, v)| (*k, v.as_str())).collect();
    model.output.push(LineKind::Header, model.locale.tf(key, &args));
    model.output_view.follow = true;
    model.output_view.scroll = 0;
    model.output_view.cursor = 0;
    model.output_view.report_scroll = 0;
    model.runs.insert(run, Run::new(run, redact_command(&command), &names));
    model.run_hosts.insert(run, (hosts.clone(), command.clone()));
    // Finished runs beyond the newest few are forgotten (their lines stay in the scrollback).
    while model.runs.len() > KEPT_RUNS {
        let Some(oldest) = model.runs.values().find(|r| !r.state.is_active()).map(|r| r.id) else { break };
        model.runs.remove(&oldest);
        model.run_hosts.remove(&oldest);
    }
    Effect::RunCommand { run, hosts, command }
}

pub(super) fn on_inventory_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let count = model.visible_count();
    match action {
        Action::Down => model.inventory.cursor = (model.inventory.cursor + 1).min(count.saturating_sub(1)),
        Action::Up => model.inventory.cursor = model.inventory.cursor.saturating_sub(1),
        Action::Top => model.inventory.cursor = 0,
        Action::Bottom => model.inventory.cursor = count.saturating_sub(1),
        Action::Mark => {
            let name = model.current_host().map(|h| h.name.clone());
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
            model.inventory.details = false;
        }
        Action::Details => model.inventory.details = !model.inventory.details,
        Action::Tags if model.tags().is_empty() => model.flash = Some(model.locale.t("flash.no_tags").to_string()),
        Action::Tags => model.inventory.tag_picker = Some(0),
        Action::Sort => super::inventory::open_picker(model, crate::app::inventory::Picker::Order),
        Action::Columns => super::inventory::open_picker(model, crate::app::inventory::Picker::Columns),
        Action::Ssh => return super::inventory::ssh(model),
        Action::Check => {
            let hosts = model.selection();
            if hosts.is_empty() {
                model.flash = Some(model.locale.t("flash.no_selection").to_string());
                return Vec::new();
            }
            model.flash = Some(model.locale.tf("flash.checking", &[("count", &hosts.len().to_string())]));
            return vec![Effect::CheckHosts(hosts)];
        }
        Action::Add => model.form = Some(HostForm::new(None)),
        Action::Edit => match model.current_host() {
            Some(h) if h.is_local() => model.flash = Some(model.locale.t("flash.localhost_builtin").to_string()),
            Some(h) => model.form = Some(HostForm::new(Some(h))),
            None => {}
        },
        Action::Delete => {
            let names: Vec<String> = model.selection().into_iter().filter(|h| !h.is_local()).map(|h| h.name).collect();
            if names.is_empty() {
                model.flash = Some(model.locale.t("flash.localhost_builtin").to_string());
                return Vec::new();
            }
            let request = PromptRequest {
                title: Text::key("confirm.delete_title", &[]),
                body: Text::key("confirm.delete", &[("hosts", &names.join(", "))]),
                kind: PromptKind::Confirm,
                approval: None,
                reply: None,
            };
            let mut prompt = PendingPrompt::new(request);
            prompt.on_yes = Some(OnYes::Effect(Effect::DeleteHosts(names)));
            model.prompts.push_back(prompt);
        }
        _ => {}
    }
    Vec::new()
}

/// How a key ended on a line being typed (a filter, a search).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Typed {
    /// Enter: the text stands.
    Done,
    /// Esc: the text was cleared.
    Cancelled,
    /// Still typing (a character added or removed, or a key with no meaning here).
    Typing,
}

/// Applies `key` to `text` being typed.
fn type_into(text: &mut String, key: KeyEvent) -> Typed {
    match key.code {
        KeyCode::Enter => return Typed::Done,
        KeyCode::Esc => {
            text.clear();
            return Typed::Cancelled;
        }
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => text.push(c),
        _ => {}
    }
    Typed::Typing
}

pub(super) fn on_filter_key(model: &mut Model, key: KeyEvent) {
    if type_into(&mut model.inventory.filter, key) != Typed::Typing {
        model.inventory.filtering = false;
    }
    clamp_cursor(model);
}

pub(super) fn clamp_cursor(model: &mut Model) {
    let count = model.visible_count();
    model.inventory.cursor = model.inventory.cursor.min(count.saturating_sub(1));
}

/// The diff viewer's rows in its current layout, and where hunks start.
fn diff_hunks(model: &Model) -> (usize, Vec<usize>) {
    let Some(diff) = model.selected_diff() else { return (0, Vec::new()) };
    if model.diff_view.side_by_side {
        let rows = diff.side_by_side();
        (rows.len(), Diff::side_hunks(&rows))
    } else {
        (diff.rows.len(), diff.hunks())
    }
}

fn scroll_diff(model: &mut Model, lines: usize, up: bool) {
    let (rows, _) = diff_hunks(model);
    let view = &mut model.diff_view;
    view.scroll =
        if up { view.scroll.saturating_sub(lines) } else { (view.scroll + lines).min(rows.saturating_sub(1)) };
}

pub(super) fn on_pipeline_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let last = model.dashboard.pipelines.len().saturating_sub(1);
    let before = model.pipeline_cursor;
    match action {
        Action::Down => model.pipeline_cursor = (model.pipeline_cursor + 1).min(last),
        Action::Up => model.pipeline_cursor = model.pipeline_cursor.saturating_sub(1),
        Action::Top => model.pipeline_cursor = 0,
        Action::Bottom => model.pipeline_cursor = last,
        Action::ScrollDiffDown | Action::PageDown => scroll_diff(model, page(model), false),
        Action::ScrollDiffUp | Action::PageUp => scroll_diff(model, page(model), true),
        Action::NextHunk | Action::PreviousHunk => {
            let (_, hunks) = diff_hunks(model);
            match jump_to_hunk(&hunks, model.diff_view.scroll, action == Action::NextHunk) {
                Some(at) => model.diff_view.scroll = at,
                None => model.flash = Some(model.locale.t("flash.no_more_hunks").to_string()),
            }
        }
        Action::SideBySide => {
            // Stay on the same hunk in the other layout.
            let (_, hunks) = diff_hunks(model);
            let current = hunks.iter().filter(|h| **h <= model.diff_view.scroll).count();
            model.diff_view.side_by_side = !model.diff_view.side_by_side;
            let (_, hunks) = diff_hunks(model);
            model.diff_view.scroll = current.checked_sub(1).and_then(|i| hunks.get(i).copied()).unwrap_or(0);
        }
        _ => {}
    }
    if model.pipeline_cursor != before {
        model.diff_view.scroll = 0;
    }
    Vec::new()
}

pub(super) fn scroll_chat(model: &mut Model, lines: usize, up: bool) {
    let view = &mut model.chat_view;
    view.scroll = if up { view.scroll + lines } else { view.scroll.saturating_sub(lines) };
}

pub(super) fn on_chat_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let tools: Vec<usize> =
        model.chat.iter().enumerate().filter(|(_, e)| e.role == ChatRole::Tool).map(|(i, _)| i).collect();
    let selected = model.chat_view.selected;
    match action {
        // Up and Down walk the tool cells, newest first.
        Action::Up => {
            model.chat_view.selected = match selected {
                None => tools.last().copied(),
                Some(s) => tools.iter().rev().find(|i| **i < s).copied().or(Some(s)),
            };
        }
        Action::Down => {
            model.chat_view.selected = selected.and_then(|s| tools.iter().find(|i| **i > s).copied());
            if model.chat_view.selected.is_none() {
                model.chat_view.scroll = 0;
            }
        }
        Action::PageUp => scroll_chat(model, page(model), true),
        Action::PageDown => scroll_chat(model, page(model), false),
        Action::Top => model.chat_view.scroll = usize::MAX / 2,
        Action::Bottom => model.chat_view = Default::default(),
        Action::Retry => return super::chat::retry(model),
        Action::EditLast => super::chat::on_escape(model),
        Action::Expand => {
            let target = selected.or(tools.last().copied());
            if let Some(entry) = target.and_then(|i| model.chat.get_mut(i)) {
                entry.expanded = !entry.expanded;
            }
        }
        _ => {}
    }
    // Back at the bottom: nothing is unseen any more.
    if model.chat_view.following() {
        model.chat_view.unseen = 0;
    }
    Vec::new()
}

/// When the user has scrolled up, keep the same lines on screen as new ones arrive.
pub(super) fn keep_scroll_position(model: &mut Model, added: usize) {
    if !model.output_view.follow {
        let max = model.output.count(model.output_view.host.as_deref());
        let view = &mut model.output_view;
        view.scroll = (view.scroll + added).min(max);
        view.cursor = (view.cursor + added).min(max);
        if let Some(anchor) = view.anchor.as_mut() {
            *anchor = (*anchor + added).min(max);
        }
    }
}

/// Moves the current line up (older) or down by `lines`. Without a
/// selection the screen moves with it (the current line is the newest on
/// screen); while selecting, the screen follows only when the selection's end
/// would leave it. The view keeps the screen full near the oldest lines.
fn scroll_output(model: &mut Model, lines: usize, up: bool) {
    let total = model.output.count(model.output_view.host.as_deref());
    let rows = model.output_rows();
    let view = &mut model.output_view;
    let last = total.saturating_sub(1);
    view.cursor = if up { (view.cursor + lines).min(last) } else { view.cursor.saturating_sub(lines) };
    if view.anchor.is_none() {
        view.scroll = view.cursor;
    } else if view.cursor >= view.scroll + rows {
        view.scroll = view.cursor + 1 - rows;
    } else if view.cursor < view.scroll {
        view.scroll = view.cursor;
    }
    view.follow = view.scroll == 0 && view.anchor.is_none();
}

/// Scrolls a run view (grouped, failed, diff), counted in rows from its top.
fn scroll_report(model: &mut Model, action: Action) -> bool {
    let page = page(model);
    let scroll = &mut model.output_view.report_scroll;
    match action {
        Action::Up => *scroll = scroll.saturating_sub(1),
        Action::Down => *scroll += 1,
        Action::PageUp => *scroll = scroll.saturating_sub(page),
        Action::PageDown => *scroll += page,
        Action::Top => *scroll = 0,
        Action::Bottom => *scroll = usize::MAX / 2,
        _ => return false,
    }
    true
}

pub(super) fn on_output_action(model: &mut Model, action: Action) -> Vec<Effect> {
    if model.output_view.mode != OutputMode::Live && scroll_report(model, action) {
        return Vec::new();
    }
    match action {
        Action::Up => scroll_output(model, 1, true),
        Action::Down => scroll_output(model, 1, false),
        Action::PageUp => scroll_output(model, page(model), true),
        Action::PageDown => scroll_output(model, page(model), false),
        Action::Top => scroll_output(model, usize::MAX / 2, true),
        Action::Bottom | Action::Follow => {
            model.output_view.scroll = 0;
            model.output_view.cursor = 0;
            model.output_view.follow = true;
        }
        Action::Clear => {
            model.output.clear();
            model.output_view.scroll = 0;
            model.output_view.cursor = 0;
            model.output_view.anchor = None;
        }
        Action::Search => {
            model.output_view.searching = true;
            model.output_view.search.clear();
        }
        Action::NextMatch | Action::PreviousMatch => jump_to_match(model, action == Action::NextMatch),
        // A picker of the hosts with output (the current one selected), not a cycle through them all.
        Action::NextHost => {
            let hosts = model.output.hosts();
            let at =
                model.output_view.host.as_ref().and_then(|h| hosts.iter().position(|x| x == h)).map_or(0, |i| i + 1);
            model.output_view.host_picker = Some(at);
        }
        Action::Select => {
            let view = &mut model.output_view;
            view.anchor = match view.anchor {
                Some(_) => None,
                None => {
                    // The selection starts on the current line.
                    view.follow = false;
                    Some(view.cursor)
                }
            };
        }
        Action::Copy => return copy_output(model),
        Action::Fold => fold_current(model),
        Action::FoldAll => {
            let all = model.output.folded().len() < model.output.hosts().len();
            model.output.set_all_folded(all);
            scroll_output(model, 0, false);
        }
        _ => {}
    }
    Vec::new()
}

/// Folds (or unfolds) the host of the line at the cursor, or of the nearest host line above it;
/// with every host folded, the folded one named first unfolds.
fn fold_current(model: &mut Model) {
    let view = &model.output_view;
    let host = model
        .output
        .window(usize::from(model.size.1).max(50), view.cursor, view.host.as_deref())
        .iter()
        .rev()
        .find_map(|l| l.kind.host().map(str::to_string))
        .or_else(|| model.output.folded().first().map(|(h, _)| h.to_string()));
    let Some(host) = host else {
        model.flash = Some(model.locale.t("flash.no_host_line").to_string());
        return;
    };
    let fold = !model.output.is_folded(&host);
    model.output.set_folded(&host, fold);
    let key = if fold { "flash.folded" } else { "flash.unfolded" };
    model.flash = Some(model.locale.tf(key, &[("host", &host)]));
    scroll_output(model, 0, false);
}

/// Copies the selected lines, or the lines on screen when nothing is selected.
fn copy_output(model: &mut Model) -> Vec<Effect> {
    let view = &model.output_view;
    let only = view.host.as_deref();
    let lines = match model.output_selection() {
        Some((low, high)) => model.output.window(high - low + 1, low, only),
        None => {
            let rows = model.output_rows();
            model.output.window(rows, model.output_bottom(rows), only)
        }
    };
    let text: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
    let copied = model.locale.tn("flash.copied_line", "flash.copied", text.len(), &[]);
    let effect = Effect::Copy(text.join("\n"));
    model.flash = Some(copied);
    model.output_view.anchor = None;
    vec![effect]
}

fn jump_to_match(model: &mut Model, older: bool) {
    let view = &mut model.output_view;
    match model.output.find(&view.search, view.scroll, older, view.host.as_deref()) {
        Some(position) => {
            view.scroll = position;
            view.cursor = position;
            view.follow = position == 0;
        }
        None if !view.search.is_empty() => {
            model.flash = Some(model.locale.tf("flash.no_match", &[("text", &view.search)]));
        }
        None => {}
    }
}

pub(super) fn on_search_key(model: &mut Model, key: KeyEvent) {
    let view = &mut model.output_view;
    match type_into(&mut view.search, key) {
        Typed::Done => {
            view.searching = false;
            // Search starts from the newest line and goes back.
            view.scroll = 0;
            view.cursor = 0;
            if model.output.find(&view.search, 0, false, view.host.as_deref()).is_none() {
                jump_to_match(model, true);
            }
        }
        Typed::Cancelled => view.searching = false,
        Typed::Typing => {}
    }
}

/// A key while the Drift pane's filter is typed: Enter keeps it, Esc clears it.
pub(super) fn on_drift_filter_key(model: &mut Model, key: KeyEvent) {
    if type_into(&mut model.drift_filter, key) != Typed::Typing {
        model.drift_filtering = false;
    }
    model.drift_cursor = model.drift_cursor.min(model.drift_board().len().saturating_sub(1));
}

/// The Drift pane's keys: move through its rows, `c` checks everything now.
pub(super) fn on_drift_action(model: &mut Model, action: Action) -> Vec<Effect> {
    let last = model.drift_board().len().saturating_sub(1);
    let before = model.drift_cursor;
    let effects = drift_action(model, action, last);
    if model.drift_cursor != before {
        model.diff_view.scroll = 0;
    }
    effects
}

fn drift_action(model: &mut Model, action: Action, last: usize) -> Vec<Effect> {
    match action {
        Action::Details => match model.drift_board().diff(model.drift_cursor) {
            Some(_) => {
                model.drift_diff_open = !model.drift_diff_open;
                model.diff_view.scroll = 0;
            }
            None => {
                model.drift_diff_open = false;
                model.flash = Some(model.locale.t("drift.no_diff").to_string());
            }
        },
        Action::ScrollDiffDown | Action::PageDown => {
            let rows = model.drift_board().diff(model.drift_cursor).map_or(0, |d| d.rows.len());
            model.diff_view.scroll = (model.diff_view.scroll + page(model)).min(rows.saturating_sub(1));
        }
        Action::ScrollDiffUp | Action::PageUp => {
            model.diff_view.scroll = model.diff_view.scroll.saturating_sub(page(model));
        }
        Action::SideBySide => model.diff_view.side_by_side = !model.diff_view.side_by_side,
        Action::Filter => model.drift_filtering = true,
        Action::Down => model.drift_cursor = (model.drift_cursor + 1).min(last),
        Action::Up => model.drift_cursor = model.drift_cursor.saturating_sub(1),
        Action::Top => model.drift_cursor = 0,
        Action::Bottom => model.drift_cursor = last,
        Action::Check if !model.drift_checking => {
            model.drift_checking = true;
            return vec![Effect::CheckDrift];
        }
        Action::Reconcile => {
            if let Some(r) = model.drift_board().resources.get(model.drift_cursor) {
                return vec![Effect::Reconcile(r.name.clone())];
            }
        }
        Action::Accept => {
            let board = model.drift_board().into_owned();
            return match model.drift_cursor.checked_sub(board.resources.len()) {
                None => board.resources.get(model.drift_cursor).map(|r| Effect::AcceptResource(r.name.clone())),
                Some(i) => board
                    .hosts
                    .get(i)
                    .map(|(host, _, _)| Effect::DecideHost(HostDecision::Accept { host: host.clone() })),
            }
            .into_iter()
            .collect();
        }
        Action::Ignore => {
            let board = model.drift_board().into_owned();
            match model.drift_cursor.checked_sub(board.resources.len()) {
                Some(i) => {
                    if let Some((host, _, row)) = board.hosts.get(i) {
                        return vec![Effect::DecideHost(HostDecision::ignore_row(host, row))];
                    }
                }
                None if !board.resources.is_empty() => {
                    let text = model.locale.t("drift.ignore_resource").to_string();
                    model.toast(crate::app::model::ToastLevel::Info, text);
                }
                None => {}
            }
        }
        _ => {}
    }
    Vec::new()
}

/// A drift check ended: say what it found (a toast), and reload what the pane shows.
pub(super) fn on_drift_checked(
    model: &mut Model,
    resources: usize,
    findings: usize,
    failed: Vec<String>,
) -> Vec<Effect> {
    use crate::app::model::ToastLevel;
    model.drift_checking = false;
    let text = match (resources, findings) {
        (0, 0) => model.locale.t("drift.none_found").to_string(),
        _ => model
            .locale
            .tf("drift.found", &[("resources", &resources.to_string()), ("findings", &findings.to_string())]),
    };
    let level = if resources + findings > 0 { ToastLevel::Error } else { ToastLevel::Success };
    model.toast(level, text);
    for why in failed {
        model.toast(ToastLevel::Error, why);
    }
    vec![Effect::Refresh]
}
