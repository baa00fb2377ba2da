//! `update` tests for `/setup`'s model questions: the steps in order, the model list asked of a
//! worker (never fetched here), the typed fallback, what the chat says of the key, and the
//! "no model" note gone once a model works.

use crossterm::event::KeyCode;

use super::tests::{ctrl, key, model, type_text};
use super::*;
use crate::app::setup::{KeyPlace, Listing, SecretText, SetupChoice, SetupProvider, SetupSaved, SetupStep};
use crate::secrets::SecretStore;

fn step(m: &Model) -> SetupStep {
    m.setup.as_ref().map(|f| f.step).expect("the setup questions are open")
}

/// Opens `/setup` the way a person does, and keeps the language.
fn open_setup(m: &mut Model) {
    update(m, key(KeyCode::Char(':')));
    m.input.set_text("/setup");
    update(m, key(KeyCode::Enter));
    assert_eq!(step(m), SetupStep::Language);
    let effects = update(m, key(KeyCode::Enter));
    assert!(effects.is_empty(), "the language kept: nothing saved: {effects:?}");
    assert_eq!(step(m), SetupStep::Provider);
}

fn no_model_note(m: &Model) -> bool {
    m.chat.iter().any(|e| e.text == m.locale.t("banner.no_model"))
}

#[test]
fn setup_asks_provider_base_url_key_then_a_model_from_the_list_and_saves_them() {
    let mut m = model();
    assert!(no_model_note(&m));
    open_setup(&mut m);
    // The third provider: OpenRouter, its default address prefilled.
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(step(&m), SetupStep::BaseUrl);
    assert_eq!(m.setup.as_ref().unwrap().typed, "https://openrouter.ai/api/v1");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(step(&m), SetupStep::Key);
    type_text(&mut m, "sk-or-1");
    let effects = update(&mut m, key(KeyCode::Enter));
    // The list is asked of a worker, with the key typed; the update does no I/O.
    match &effects[..] {
        [Effect::SetupListModels { provider: SetupProvider::OpenRouter, base_url, key: Some(k) }] => {
            assert_eq!(base_url, "https://openrouter.ai/api/v1");
            assert_eq!(k, &SecretText("sk-or-1".into()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(step(&m), SetupStep::Model);
    assert_eq!(m.setup.as_ref().unwrap().listing, Listing::Waiting);
    // An answer for another address (an earlier question) is ignored.
    let models = vec!["anthropic/claude-x".to_string(), "openai/gpt-4o".into(), "openai/gpt-4o-mini".into()];
    update(&mut m, Msg::SetupModels { base_url: "http://elsewhere".into(), result: Ok(models.clone()) });
    assert_eq!(m.setup.as_ref().unwrap().listing, Listing::Waiting);
    update(&mut m, Msg::SetupModels { base_url: "https://openrouter.ai/api/v1".into(), result: Ok(models) });
    // Typing narrows the list; Down picks the second left.
    type_text(&mut m, "gpt");
    assert_eq!(m.setup.as_ref().unwrap().offered(), ["openai/gpt-4o", "openai/gpt-4o-mini"]);
    update(&mut m, key(KeyCode::Down));
    let effects = update(&mut m, key(KeyCode::Enter));
    let [Effect::SetupSave(choice)] = &effects[..] else { panic!("{effects:?}") };
    assert_eq!(
        choice,
        &SetupChoice {
            provider: SetupProvider::OpenRouter,
            base_url: None,
            key: Some(SecretText("sk-or-1".into())),
            model: "openai/gpt-4o-mini".into()
        }
    );
    assert_eq!(choice.spec(), "openrouter/openai/gpt-4o-mini");
    assert_eq!(step(&m), SetupStep::Saving);
    assert!(!m.model_configured && no_model_note(&m), "nothing changes before the worker says it is saved");

    // Saved in the Secret Service: the note goes, the agent is on at once, the chat says where the key is.
    let saved = SetupSaved {
        spec: choice.spec(),
        key: KeyPlace::Stored { name: "llm:openrouter:api_key".into(), store: SecretStore::SecretService },
    };
    let effects = update(&mut m, Msg::SetupSaved(Ok(saved)));
    assert!(matches!(&effects[..], [Effect::SetupImport]), "then the inventories found here: {effects:?}");
    assert!(m.setup.is_none() && m.model_configured);
    assert!(!no_model_note(&m), "the note is gone");
    let said: Vec<&str> = m.chat.iter().map(|e| e.text.as_str()).collect();
    assert!(said.iter().any(|t| t.contains("Model set: openrouter/openai/gpt-4o-mini")), "{said:?}");
    assert!(said.iter().any(|t| t.contains("Secret Service") && t.contains("the next start will find it")), "{said:?}");
    // A chat message now goes to the agent.
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "hello");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(effects.iter().any(|e| matches!(e, Effect::AgentTurn(t) if t == "hello")), "{effects:?}");
}

#[test]
fn a_model_list_that_fails_says_why_and_the_name_is_typed_and_a_key_in_memory_is_said_to_be_lost() {
    let mut m = model();
    open_setup(&mut m);
    // Anthropic, its address changed to a gateway of one's own.
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.setup.as_ref().unwrap().typed, "https://api.anthropic.com");
    update(&mut m, ctrl('u'));
    type_text(&mut m, "gateway.local");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.setup.as_ref().unwrap().error, Some("setup.err_url"), "not an address: asked again");
    assert_eq!(step(&m), SetupStep::BaseUrl);
    update(&mut m, ctrl('u'));
    type_text(&mut m, "http://gateway.local:8080/");
    update(&mut m, key(KeyCode::Enter));
    type_text(&mut m, "k-1");
    update(&mut m, key(KeyCode::Enter));
    update(
        &mut m,
        Msg::SetupModels { base_url: "http://gateway.local:8080".into(), result: Err("HTTP 404 Not Found".into()) },
    );
    assert_eq!(m.setup.as_ref().unwrap().listing, Listing::Failed("HTTP 404 Not Found".into()));
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(effects.is_empty() && m.setup.as_ref().unwrap().error == Some("setup.err_model"), "a name is needed");
    type_text(&mut m, "claude-sonnet-4-5");
    let effects = update(&mut m, key(KeyCode::Enter));
    let [Effect::SetupSave(choice)] = &effects[..] else { panic!("{effects:?}") };
    assert_eq!(choice.base_url.as_deref(), Some("http://gateway.local:8080"), "not the default: written");
    assert_eq!(choice.model, "claude-sonnet-4-5");
    let saved = SetupSaved {
        spec: choice.spec(),
        key: KeyPlace::Stored { name: "llm:custom:api_key".into(), store: SecretStore::Memory },
    };
    update(&mut m, Msg::SetupSaved(Ok(saved)));
    let memory = m.chat.iter().find(|e| e.text.contains("in memory only")).map(|e| e.text.clone()).unwrap_or_default();
    assert!(memory.contains("the next start will NOT have it") && memory.contains("model.api_key_env"), "{memory}");
    assert!(!no_model_note(&m));
}

#[test]
fn esc_leaves_the_model_as_it_was_and_a_failed_save_keeps_the_note() {
    let mut m = model();
    open_setup(&mut m);
    update(&mut m, key(KeyCode::Enter));
    let effects = update(&mut m, key(KeyCode::Esc));
    assert!(matches!(&effects[..], [Effect::SetupImport]), "{effects:?}");
    assert!(m.setup.is_none() && !m.model_configured && no_model_note(&m));

    // Ctrl-C leaves from the very first question.
    update(&mut m, Msg::Typed("/setup".into()));
    let effects = update(&mut m, ctrl('c'));
    assert!(matches!(&effects[..], [Effect::SetupImport]) && m.setup.is_none(), "{effects:?}");

    // Ollama: no key needed, Enter on an empty key skips it.
    open_setup(&mut m);
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, key(KeyCode::Enter));
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(
        matches!(&effects[..], [Effect::SetupListModels { provider: SetupProvider::Ollama, key: None, .. }]),
        "{effects:?}"
    );
    update(
        &mut m,
        Msg::SetupModels { base_url: "http://127.0.0.1:11434/v1".into(), result: Ok(vec!["llama3.1".into()]) },
    );
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, Msg::SetupSaved(Err("cannot write config.yaml".into())));
    assert!(m.setup.is_none() && !m.model_configured && no_model_note(&m), "not saved: the note stays");
    assert!(m.chat.iter().any(|e| e.text.contains("The model was not set: cannot write config.yaml")));
}

#[test]
fn choosing_another_language_switches_and_saves_it() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char(':')));
    m.input.set_text("/setup");
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, key(KeyCode::Down));
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(matches!(&effects[..], [Effect::SaveSetting { key, value }] if key == "ui.language" && value == "fr"));
    assert_eq!(m.locale.code(), "fr");
    assert!(no_model_note(&m), "the note follows the language");
    assert_eq!(step(&m), SetupStep::Provider);
}
