//! Keys while something sits over the panes: a worker's prompt (or the
//! console's own confirmation), the add/edit host form, the tag picker.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::keymap::{Action, KeyContext};
use crate::app::model::{Model, OnYes, PendingPrompt};
use crate::app::msg::{Effect, PromptAnswer, PromptKind};

pub(super) fn on_prompt_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let action = model.keymap.action(KeyContext::Modal, &key);
    let page = usize::from(model.size.1 / 2).max(1);
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
        (_, Some(Action::Down)) => {
            front.scroll += 1;
            None
        }
        (_, Some(Action::Up)) => {
            front.scroll = front.scroll.saturating_sub(1);
            None
        }
        (_, Some(Action::PageDown)) => {
            front.scroll += page;
            None
        }
        (_, Some(Action::PageUp)) => {
            front.scroll = front.scroll.saturating_sub(page);
            None
        }
        (_, Some(Action::Yes)) => Some(PromptAnswer::Yes),
        (_, Some(Action::No)) => Some(PromptAnswer::No),
        // Every host key that waits, each listed on the modal, trusted at once.
        (PromptKind::HostKey, Some(Action::Always)) => return trust_all_host_keys(model),
        (PromptKind::Approval, Some(Action::Always))
            if front.request.approval.as_ref().is_none_or(|a| a.rule_possible()) =>
        {
            Some(PromptAnswer::Always)
        }
        _ => None,
    };
    let Some(answer) = answer else { return Vec::new() };
    answer_front(model, answer)
}

/// A click on the prompt: the choice drawn under the pointer answers it.
pub(super) fn on_prompt_click(model: &mut Model, column: u16, row: u16) -> Vec<Effect> {
    let screen = ratatui::layout::Rect::new(0, 0, model.size.0, model.size.1);
    let hit = crate::app::view::prompt::choice_hits(model, screen)
        .into_iter()
        .find(|(rect, _)| rect.contains(ratatui::layout::Position::new(column, row)))
        .map(|(_, answer)| answer.clone());
    let host_key = model.prompts.front().is_some_and(|p| p.request.kind == PromptKind::HostKey);
    match hit {
        Some(PromptAnswer::Always) if host_key => trust_all_host_keys(model),
        Some(answer) => answer_front(model, answer),
        None => Vec::new(),
    }
}

/// Trusts every host key that waits (each was listed on the modal); other questions stay queued.
fn trust_all_host_keys(model: &mut Model) -> Vec<Effect> {
    let (keys, others): (Vec<_>, Vec<_>) = model.prompts.drain(..).partition(|p| p.request.kind == PromptKind::HostKey);
    model.prompts.extend(others);
    keys.into_iter()
        .filter_map(|mut p| p.request.reply.take())
        .map(|reply| Effect::AnswerPrompt { reply, answer: PromptAnswer::Yes })
        .collect()
}

/// Answers the prompt on screen with `answer`.
fn answer_front(model: &mut Model, answer: PromptAnswer) -> Vec<Effect> {
    let Some(mut done) = model.prompts.pop_front() else { return Vec::new() };
    // The console's own question: do the deferred work on yes.
    match (done.on_yes.take(), answer == PromptAnswer::Yes) {
        (Some(OnYes::Effect(effect)), true) => return vec![effect],
        (Some(OnYes::Quit { .. }), true) => return super::quit_now(model),
        (Some(_), false) => return Vec::new(),
        (None, _) => {}
    }
    done.request.reply.take().map(|reply| vec![Effect::AnswerPrompt { reply, answer }]).unwrap_or_default()
}

fn decline(prompt: &mut PendingPrompt) -> Option<Effect> {
    prompt.request.reply.take().map(|reply| Effect::AnswerPrompt { reply, answer: PromptAnswer::No })
}

/// The host form: Tab/Down and Shift-Tab/Up move between fields, Enter
/// saves (or says which field is wrong), Esc cancels.
pub(super) fn on_form_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let Some(form) = model.form.as_mut() else { return Vec::new() };
    let fields = form.values.len();
    match key.code {
        KeyCode::Esc => model.form = None,
        KeyCode::Tab | KeyCode::Down => form.focus = (form.focus + 1) % fields,
        KeyCode::BackTab | KeyCode::Up => form.focus = (form.focus + fields - 1) % fields,
        KeyCode::Backspace => {
            if let Some(v) = form.values.get_mut(form.focus) {
                v.pop();
            }
        }
        KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => {
            if let Some(v) = form.values.get_mut(form.focus) {
                v.clear();
            }
        }
        KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
            if let Some(v) = form.values.get_mut(form.focus) {
                v.push(c);
            }
        }
        KeyCode::Enter => match form.to_host() {
            Err(e) => form.error = Some(e),
            Ok(host) => {
                let duplicate = form.original.as_deref() != Some(host.name.as_str())
                    && model.hosts.iter().any(|h| h.name == host.name);
                if duplicate {
                    form.error = Some(crate::i18n::Text::key("form.err_duplicate", &[("host", &host.name)]));
                    return Vec::new();
                }
                let original = form.original.clone();
                model.form = None;
                return vec![Effect::SaveHost { original, host }];
            }
        },
        _ => {}
    }
    Vec::new()
}

/// The output's host picker: move, Enter shows that host (row 0: every host), Esc closes.
fn on_host_picker_key(model: &mut Model, key: KeyEvent, cursor: usize) {
    let hosts: Vec<String> = model.output.hosts().iter().map(|h| h.to_string()).collect();
    let action = model.keymap.action(KeyContext::Output, &key);
    match (key.code, action) {
        (KeyCode::Esc, _) => model.output_view.host_picker = None,
        (KeyCode::Enter, _) => {
            let view = &mut model.output_view;
            view.host = cursor.checked_sub(1).and_then(|i| hosts.get(i).cloned());
            (view.scroll, view.cursor, view.anchor, view.follow, view.host_picker) = (0, 0, None, true, None);
        }
        (KeyCode::Down, _) | (_, Some(Action::Down)) => {
            model.output_view.host_picker = Some((cursor + 1).min(hosts.len()));
        }
        (KeyCode::Up, _) | (_, Some(Action::Up)) => model.output_view.host_picker = Some(cursor.saturating_sub(1)),
        _ => {}
    }
}

/// The tag picker: move, Enter filters by the tag, Esc closes.
pub(super) fn on_tag_picker_key(model: &mut Model, key: KeyEvent) {
    if let Some(cursor) = model.output_view.host_picker {
        return on_host_picker_key(model, key, cursor);
    }
    let tags = model.tags().to_vec();
    let Some(cursor) = model.inventory.tag_picker else { return };
    let action = model.keymap.action(KeyContext::Inventory, &key);
    match (key.code, action) {
        (KeyCode::Esc, _) => model.inventory.tag_picker = None,
        (KeyCode::Enter, _) => {
            if let Some((tag, _)) = tags.get(cursor) {
                model.inventory.filter = format!("@{tag}");
                model.inventory.cursor = 0;
            }
            model.inventory.tag_picker = None;
        }
        (_, Some(Action::Down)) => model.inventory.tag_picker = Some((cursor + 1).min(tags.len().saturating_sub(1))),
        (_, Some(Action::Up)) => model.inventory.tag_picker = Some(cursor.saturating_sub(1)),
        _ => {}
    }
}
