//! `/setup` in the update: opening the questions, their keys, and the workers' answers (the model
//! list, the saved setup). The flow itself is [`crate::app::setup::SetupFlow`].

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::app::model::{ChatEntry, ChatRole, Model};
use crate::app::msg::Effect;
use crate::app::setup::{KeyPlace, Next, SetupFlow, SetupSaved};
use crate::secrets::SecretStore;

/// `/setup`: the questions open over the panes, starting with the language.
pub(super) fn open(model: &mut Model) {
    model.setup = Some(SetupFlow::new(model.locale.code()));
}

/// A key while the questions are on screen.
pub(super) fn on_key(model: &mut Model, key: KeyEvent) -> Vec<Effect> {
    let Some(flow) = model.setup.as_mut() else { return Vec::new() };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let next = match key.code {
        KeyCode::Esc => flow.escape(),
        KeyCode::Enter => flow.submit(),
        KeyCode::Up => {
            flow.move_cursor(-1);
            Next::Stay
        }
        KeyCode::Down | KeyCode::Tab => {
            flow.move_cursor(1);
            Next::Stay
        }
        KeyCode::Backspace => {
            flow.backspace();
            Next::Stay
        }
        KeyCode::Char('u') if ctrl => {
            flow.clear();
            Next::Stay
        }
        // Ctrl-C leaves the model questions from any step.
        KeyCode::Char('c') if ctrl => flow.abandon(),
        KeyCode::Char(c) if !ctrl => {
            flow.type_char(c);
            Next::Stay
        }
        _ => Next::Stay,
    };
    follow(model, next)
}

/// A paste goes into what is typed (a key, a URL).
pub(super) fn on_paste(model: &mut Model, text: &str) {
    if let Some(flow) = model.setup.as_mut() {
        text.chars().filter(|c| !c.is_control()).for_each(|c| flow.type_char(c));
    }
}

/// Turns what an answer leads to into effects.
fn follow(model: &mut Model, next: Next) -> Vec<Effect> {
    match next {
        Next::Stay => Vec::new(),
        Next::Language(code) if code == model.locale.code() => Vec::new(),
        Next::Language(code) => match crate::i18n::Locale::new(&code) {
            Ok(locale) => {
                model.set_locale(locale);
                vec![Effect::SaveSetting { key: "ui.language".into(), value: code }]
            }
            Err(_) => Vec::new(),
        },
        Next::ListModels { provider, base_url, key } => vec![Effect::SetupListModels { provider, base_url, key }],
        Next::Save(choice) => vec![Effect::SetupSave(choice)],
        Next::Skipped => {
            model.setup = None;
            model.push_chat(ChatEntry::new(ChatRole::System, model.locale.t("setup.model_skipped")));
            vec![Effect::SetupImport]
        }
    }
}

/// The provider's model list, or why there is none.
pub(super) fn on_models(model: &mut Model, base_url: &str, result: Result<Vec<String>, String>) -> Vec<Effect> {
    if let Some(flow) = model.setup.as_mut() {
        flow.models_listed(base_url, result);
    }
    Vec::new()
}

/// The setup saved: the agent is on at once, the "no model" note gone, and the chat says truthfully
/// where the key went and whether the next start will have it. Then the inventories found here.
pub(super) fn on_saved(model: &mut Model, saved: Result<SetupSaved, String>) -> Vec<Effect> {
    if model.setup.is_none() {
        return Vec::new();
    }
    model.setup = None;
    let locale = model.locale.clone();
    match saved {
        Ok(saved) => {
            model.forget_no_model_note();
            model.model_configured = true;
            model.push_chat(ChatEntry::new(ChatRole::System, locale.tf("setup.saved", &[("spec", &saved.spec)])));
            if let KeyPlace::Stored { name, store } = &saved.key {
                let key = match store {
                    SecretStore::SecretService => "setup.key_secret_service",
                    SecretStore::KernelKeyring => "setup.key_kernel",
                    SecretStore::Memory | SecretStore::Unavailable => "setup.key_memory",
                };
                model.push_chat(ChatEntry::new(ChatRole::System, locale.tf(key, &[("name", name)])));
            }
        }
        Err(error) => {
            model.push_chat(ChatEntry::new(ChatRole::System, locale.tf("setup.not_saved", &[("error", &error)])));
        }
    }
    vec![Effect::SetupImport]
}
