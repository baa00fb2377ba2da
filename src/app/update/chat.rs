//! The last question again: `/retry` (or `r` in the chat) sends it as it was,
//! `/edit` (or Esc twice in the chat, the Codex CLI's habit) puts it back in
//! the input line to change before sending.

use super::input::{open_input, typed};
use crate::app::model::{ChatRole, Model};
use crate::app::msg::Effect;

/// The operator's newest question in the chat.
fn last_question(model: &Model) -> Option<String> {
    model.chat.iter().rev().find(|e| e.role == ChatRole::User).map(|e| e.text.clone())
}

/// Sends the last question again, as if typed (a new turn, seen in the chat).
pub(super) fn retry(model: &mut Model) -> Vec<Effect> {
    let Some(question) = last_question(model) else {
        model.flash = Some(model.locale.t("chat.no_question").to_string());
        return Vec::new();
    };
    if model.agent_busy {
        model.flash = Some(model.locale.t("flash.agent_busy").to_string());
        return Vec::new();
    }
    typed(model, &question)
}

/// The last question back in the input line; Enter sends it (changed or not).
pub(super) fn edit_last(model: &mut Model) {
    model.chat_view.edit_armed = false;
    let Some(question) = last_question(model) else {
        model.flash = Some(model.locale.t("chat.no_question").to_string());
        return;
    };
    open_input(model, &question);
}

/// Esc in the chat: the first says what a second does; the second edits.
pub(super) fn on_escape(model: &mut Model) {
    if model.chat_view.edit_armed {
        edit_last(model);
    } else if last_question(model).is_some() {
        model.chat_view.edit_armed = true;
        model.flash = Some(model.locale.t("chat.esc_again").to_string());
    }
}
