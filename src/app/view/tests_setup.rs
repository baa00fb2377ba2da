//! Snapshots of each `/setup` question: the language, the provider, the base URL, the key (dots,
//! never the key), the model list asked for, offered and narrowed, the typed fallback saying why,
//! and the saving step.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::fixtures::fixture_model;
use crate::app::model::Model;
use crate::app::msg::Msg;
use crate::app::update::update;

fn render(model: &Model) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(110, 30)).unwrap();
    terminal.draw(|f| super::view(model, f)).unwrap();
    terminal
}

fn press(m: &mut Model, code: KeyCode) {
    update(m, Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn type_text(m: &mut Model, text: &str) {
    text.chars().for_each(|c| press(m, KeyCode::Char(c)));
}

/// The console with `/setup` open at the language.
pub(crate) fn fixture_setup() -> Model {
    let mut m = fixture_model();
    update(&mut m, Msg::Typed("/setup".into()));
    m
}

/// At the model step, the provider's list offered.
pub(crate) fn fixture_setup_models() -> Model {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    type_text(&mut m, "sk-test");
    press(&mut m, KeyCode::Enter);
    let models = ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "o3-mini", "text-embedding-3-small"];
    let result = Ok(models.iter().map(|m| m.to_string()).collect());
    update(&mut m, Msg::SetupModels { base_url: "https://api.openai.com/v1".into(), result });
    m
}

#[test]
fn setup_language() {
    insta::assert_snapshot!(render(&fixture_setup()).backend());
}

#[test]
fn setup_provider() {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Down);
    press(&mut m, KeyCode::Down);
    insta::assert_snapshot!(render(&m).backend());
}

#[test]
fn setup_base_url_refused() {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Up);
    for _ in 0..4 {
        press(&mut m, KeyCode::Down);
    }
    press(&mut m, KeyCode::Enter);
    type_text(&mut m, "gateway.local");
    press(&mut m, KeyCode::Enter);
    insta::assert_snapshot!(render(&m).backend());
}

#[test]
fn setup_key_is_never_drawn() {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    type_text(&mut m, "sk-very-secret");
    let terminal = render(&m);
    assert!(!format!("{:?}", terminal.backend()).contains("sk-very-secret"));
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn setup_models_waiting() {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    insta::assert_snapshot!(render(&m).backend());
}

#[test]
fn setup_models_offered_and_narrowed() {
    let mut m = fixture_setup_models();
    insta::assert_snapshot!("setup_models_offered", render(&m).backend());
    type_text(&mut m, "mini");
    press(&mut m, KeyCode::Down);
    insta::assert_snapshot!("setup_models_narrowed", render(&m).backend());
}

#[test]
fn setup_models_failed_typed_by_hand() {
    let mut m = fixture_setup();
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    press(&mut m, KeyCode::Enter);
    let result = Err("openai returned HTTP 401: invalid api key".to_string());
    update(&mut m, Msg::SetupModels { base_url: "https://api.openai.com/v1".into(), result });
    type_text(&mut m, "gpt-4o");
    insta::assert_snapshot!(render(&m).backend());
}

#[test]
fn setup_saving() {
    let mut m = fixture_setup_models();
    press(&mut m, KeyCode::Enter);
    insta::assert_snapshot!(render(&m).backend());
}
