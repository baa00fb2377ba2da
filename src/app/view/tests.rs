//! Snapshots of every pane and overlay, rendered with ratatui's TestBackend
//! from fixed fixtures (also used to produce screenshots/).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::oneshot;

use super::fixtures::*;
use crate::app::model::{ChatEntry, ChatRole, Model, Pane};
use crate::app::msg::{Msg, PromptKind, PromptRequest};
use crate::app::update::update;

fn render(model: &Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::view(model, f)).unwrap();
    terminal
}

fn prompt(kind: PromptKind, title: &str, body: &str) -> Msg {
    let (tx, rx) = oneshot::channel();
    std::mem::forget(rx);
    Msg::Prompt(PromptRequest { title: title.into(), body: body.into(), kind, approval: None, reply: Some(tx) })
}

#[test]
fn first_start_without_a_model() {
    insta::assert_snapshot!(render(&fixture_model(), 110, 30).backend());
}

#[test]
fn output_after_a_fan_out() {
    insta::assert_snapshot!(render(&fixture_with_output(), 110, 30).backend());
}

#[test]
fn output_search_highlights_matches() {
    let mut m = fixture_with_output();
    m.output_view.search = "web02".into();
    m.output_view.searching = true;
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn output_one_host_at_a_time() {
    let mut m = fixture_with_output();
    m.output_view.host = Some("web02".into());
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn inventory_filtered_while_typing() {
    let mut m = fixture_model();
    m.inventory.filtering = true;
    m.inventory.filter = "web".into();
    // Any message brings the list in step with the filter.
    crate::app::update::update(&mut m, crate::app::msg::Msg::Resize(110, 24));
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn command_line_being_typed() {
    let mut m = fixture_with_output();
    m.input.active = true;
    m.input.set_text(":exec @prod -- df -h /");
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn chat_conversation() {
    let mut m = fixture_model();
    m.focus = Pane::Chat;
    m.chat.push(ChatEntry::new(ChatRole::User, "why is web02 loaded?"));
    m.chat.push(ChatEntry::new(ChatRole::System, "No model is configured, so nobody can answer yet."));
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn chat_with_an_agent_turn_streaming() {
    insta::assert_snapshot!(render(&fixture_agent_turn(), 110, 30).backend());
}

#[test]
fn pipeline_pane_with_stages_and_diff() {
    insta::assert_snapshot!(render(&fixture_pipelines(), 120, 32).backend());
}

#[test]
fn pipeline_pane_second_run_rolled_back() {
    let mut m = fixture_pipelines();
    m.pipeline_cursor = 1;
    insta::assert_snapshot!(render(&m, 120, 32).backend());
}

#[test]
fn metrics_pane() {
    insta::assert_snapshot!(render(&fixture_metrics(), 120, 34).backend());
}

#[test]
fn metrics_pane_with_sparklines_over_time() {
    let mut m = fixture_metrics();
    m.zoomed = true;
    insta::assert_snapshot!(render(&m, 120, 40).backend());
}

#[test]
fn drift_pane_with_resources_and_host_findings() {
    let mut m = crate::app::view::fixtures::fixture_drift();
    m.zoomed = true;
    insta::assert_snapshot!(render(&m, 120, 34).backend());
    m.drift_checking = true;
    m.drift_cursor = 4;
    insta::assert_snapshot!("drift_pane_checking", render(&m, 120, 34).backend());
    // Enter: the selected resource's field-level diff fills the pane.
    m.drift_checking = false;
    m.drift_cursor = 1;
    m.drift_diff_open = true;
    insta::assert_snapshot!("drift_pane_diff_open", render(&m, 120, 34).backend());
    // `/nginx`: only the rows holding it, the filter in the title.
    m.drift_diff_open = false;
    m.drift_filter = "nginx".into();
    m.drift_cursor = 0;
    insta::assert_snapshot!("drift_pane_filtered", render(&m, 120, 34).backend());
}

#[test]
fn drift_pane_empty_state() {
    let mut m = fixture_model();
    m.set_focus(Pane::Drift);
    insta::assert_snapshot!(render(&m, 110, 28).backend());
}

#[test]
fn french_console_with_output_and_help() {
    let mut m = fixture_with_output();
    m.set_locale(crate::i18n::Locale::new("fr").unwrap());
    insta::assert_snapshot!("french_output", render(&m, 110, 30).backend());
    m.help_open = true;
    insta::assert_snapshot!("french_help", render(&m, 120, 34).backend());
}

#[test]
fn help_overlay() {
    let mut m = fixture_model();
    m.help_open = true;
    insta::assert_snapshot!(render(&m, 120, 34).backend());
}

#[test]
fn host_key_prompt_with_one_queued() {
    let mut m = fixture_with_output();
    update(
        &mut m,
        prompt(
            PromptKind::Confirm,
            "Unknown host key",
            "[10.20.0.11]:22 offers ssh-ed25519 key SHA256:n4UOw1Xc6Q1jS3Rr9sR0bQf6pLkE0r0xT5yq8GQm2nA. Trust it and remember it?",
        ),
    );
    update(&mut m, prompt(PromptKind::Secret, "Key for web02", "passphrase for /root/.ssh/id_ed25519"));
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn passphrase_prompt_hides_what_is_typed() {
    let mut m = fixture_model();
    update(&mut m, prompt(PromptKind::Secret, "Key for web02", "passphrase for /root/.ssh/id_ed25519"));
    if let Some(front) = m.prompts.front_mut() {
        front.typed = "hunter2".into();
    }
    let terminal = render(&m, 110, 30);
    let screen = format!("{:?}", terminal.backend());
    assert!(!screen.contains("hunter2"), "the secret never reaches the screen");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn approval_modal_with_a_queued_request() {
    insta::assert_snapshot!(render(&fixture_with_approval(), 110, 34).backend());
}

#[test]
fn approval_modal_shows_escape_sequences_instead_of_running_them() {
    let terminal = render(&fixture_with_hostile_approval(), 110, 34);
    let screen = format!("{:?}", terminal.backend());
    assert!(!screen.contains('\x1b') && !screen.contains('\r') && !screen.contains('\x07'), "{screen}");
    for shown in ["tidy logs^[]52;c;cm0gLXJmIC8=^G^[[2J", "rm -rf /srv/data #^M^[[2Kecho harmless ^[]52;c;"] {
        assert!(screen.contains(shown), "{shown} in {screen}");
    }
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn small_terminal_still_draws() {
    insta::assert_snapshot!(render(&fixture_with_output(), 60, 16).backend());
}

#[test]
fn completion_popup_for_slash_commands() {
    let mut m = fixture_model();
    m.focus = Pane::Chat;
    m.input.active = true;
    m.input.set_text("/");
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn command_palette_with_suggestions() {
    let mut m = fixture_with_output();
    m.input.active = true;
    m.input.set_text(":ch");
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn multi_line_message_being_written() {
    let mut m = fixture_model();
    m.focus = Pane::Chat;
    m.input.active = true;
    m.input.set_text("Check the web tier:\n- disk and inodes\n- php-fpm workers");
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn inventory_columns_and_details() {
    insta::assert_snapshot!(render(&fixture_detailed_inventory(), 160, 34).backend());
}

#[test]
fn inventory_tag_picker() {
    let mut m = fixture_model();
    m.inventory.tag_picker = Some(3);
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn host_form_with_an_error() {
    let mut m = fixture_model();
    let mut form = crate::app::model::HostForm::new(None);
    form.values[0] = "web03".into();
    form.values[1] = "10.20.0.13".into();
    form.values[2] = "22x".into();
    form.focus = 2;
    form.error = form.to_host().err();
    m.form = Some(form);
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn delete_asks_for_confirmation() {
    let mut m = fixture_with_output();
    m.set_focus(Pane::Inventory);
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('d'))));
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

#[test]
fn notifications_have_rows_of_their_own_and_hide_no_pane_text() {
    use crate::app::model::ToastLevel;
    let mut m = fixture_metrics();
    let before = format!("{:?}", render(&m, 120, 34).backend());
    m.toast(ToastLevel::Success, "uptime: 3/3 hosts succeeded");
    m.toast(ToastLevel::Error, "db01 is unreachable: cannot reach 10.20.1.21:22: Connection refused");
    let screen = render(&m, 120, 34);
    let after = format!("{:?}", screen.backend());
    // Each notification has a row of its own (no pane border on it), and every line of the
    // metrics pane is still on screen: the panes gave up rows, nothing was drawn over.
    for text in ["✓ uptime: 3/3 hosts succeeded", "✗ db01 is unreachable"] {
        let row = after.lines().find(|l| l.contains(text)).unwrap_or_else(|| panic!("{text}: {after}"));
        assert!(!row.contains('│') && !row.contains('┃'), "{row}");
    }
    for line in ["182 succeeded", "≤ 50 ms", "> 5000 ms", "gpt-4o-mini", "Circuit breaker closed", "Pipeline runs 2"]
    {
        assert!(before.contains(line) && after.contains(line), "{line}: {after}");
    }
    insta::assert_snapshot!(screen.backend());
}

#[test]
fn output_line_selection() {
    let mut m = fixture_with_output();
    m.output_view.follow = false;
    m.output_view.scroll = 1;
    m.output_view.cursor = 1;
    m.output_view.anchor = Some(3);
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn pipeline_diff_side_by_side() {
    let mut m = fixture_pipelines();
    m.diff_view.side_by_side = true;
    insta::assert_snapshot!(render(&m, 120, 32).backend());
}

#[test]
fn pipeline_pane_interrupted_run_says_how_to_go_on() {
    let mut m = fixture_pipelines();
    m.pipeline_cursor = 2;
    insta::assert_snapshot!(render(&m, 120, 32).backend());
}

#[test]
fn approval_modal_for_a_terraform_plan() {
    let terminal = render(&fixture_with_terraform_approval(), 110, 34);
    let screen = format!("{:?}", terminal.backend());
    assert!(!screen.contains("hunter2"), "a sensitive value reached the screen");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn approval_modal_with_a_highlighted_diff() {
    insta::assert_snapshot!(render(&fixture_with_diff_approval(), 110, 34).backend());
}

#[test]
fn chat_tool_cell_expanded() {
    let mut m = fixture_agent_turn();
    let cell = m.chat.iter().position(|e| e.text.starts_with("⚙")).unwrap();
    m.chat[cell].detail = vec![" 10:42:01 up 41 days,  load average: 7.92, 6.40, 5.11".into()];
    m.chat[cell].expanded = true;
    m.chat_view.selected = Some(cell);
    insta::assert_snapshot!(render(&m, 110, 40).backend());
}

/// Unknown host keys of hosts connected in parallel: one modal names the host by its inventory name
/// and lists every other key waiting, each with its fingerprint, with "trust all"; `a` trusts them
/// all (and only them).
#[test]
fn waiting_host_keys_are_listed_and_trusted_at_once() {
    let (mut m, mut answers) = crate::app::view::fixtures::fixture_host_keys();
    let screen = format!("{:?}", render(&m, 120, 34).backend());
    for fp in [
        "SHA256:7u2hL0Lk3c1lq6zY2m0a5b4QJ0Y2mN8x1R9rK0aFq1E",
        "SHA256:Qm3y0dW2Vw8s1F4tH6jK9lZ2xC5vB7nM0pL3kJ8hG6f",
        "SHA256:aB9cD8eF7gH6iJ5kL4mN3oP2qR1sT0uV9wX8yZ7a6bC",
    ] {
        assert!(screen.contains(fp), "{fp} not listed: {screen}");
    }
    assert!(screen.contains("web01 ([127.0.0.1]:42001)") && screen.contains("trust all 3 listed"), "{screen}");
    insta::assert_snapshot!(render(&m, 120, 34).backend());
    let effects = update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('a'))));
    assert_eq!(effects.len(), 3, "{effects:?}");
    assert!(m.prompts.is_empty());
    for effect in effects {
        if let crate::app::msg::Effect::AnswerPrompt { reply, answer } = effect {
            assert_eq!(answer, crate::app::msg::PromptAnswer::Yes);
            let _ = reply.send(answer);
        }
    }
    for rx in &mut answers {
        assert_eq!(rx.try_recv().unwrap(), crate::app::msg::PromptAnswer::Yes);
    }
}

#[test]
fn the_output_host_picker() {
    let mut m = fixture_fleet_run();
    m.set_focus(Pane::Output);
    m.output_view.host_picker = Some(1);
    let terminal = render(&m, 120, 34);
    assert!(terminal.backend().to_string().contains("┌ Show the output of ┐"), "the title is whole");
    insta::assert_snapshot!(terminal.backend());
    // Sized from its title in any language, within the screen.
    m.set_locale(crate::i18n::Locale::new("fr").unwrap());
    assert!(render(&m, 120, 34).backend().to_string().contains("┌ Afficher la sortie de ┐"));
    assert!(render(&m, 20, 34).backend().to_string().lines().all(|l| l.chars().count() <= 22));
}

#[test]
fn chat_counts_what_arrives_while_the_person_looks_elsewhere() {
    let mut m = fixture_agent_turn();
    let cell = m.chat.iter().position(|e| e.text.starts_with("⚙")).unwrap();
    m.chat_view.selected = Some(cell);
    m.push_chat(crate::app::model::ChatEntry::new(crate::app::model::ChatRole::Assistant, "The disk is full."));
    m.push_chat(crate::app::model::ChatEntry::new(crate::app::model::ChatRole::System, "run finished"));
    let screen = render(&m, 110, 40);
    assert!(format!("{:?}", screen.backend()).contains("↓ 2 new"));
    insta::assert_snapshot!(screen.backend());
}

#[test]
fn code_in_chat_and_diffs_is_coloured() {
    // Colours are not in text snapshots: check the cells of a highlighted code block and diff.
    let m = fixture_with_diff_approval();
    let terminal = render(&m, 110, 34);
    let buffer = terminal.backend().buffer();
    let colours: std::collections::BTreeSet<String> =
        buffer.content().iter().filter(|c| c.symbol() != " ").map(|c| format!("{:?}", c.fg)).collect();
    assert!(colours.len() > 6, "syntax colours on top of the theme's: {colours:?}");
}

#[test]
fn french_pipeline_palette_and_approval() {
    let fr = || crate::i18n::Locale::new("fr").unwrap();
    let mut m = fixture_pipelines();
    m.set_locale(fr());
    m.input.active = true;
    m.input.set_text(":");
    insta::assert_snapshot!("french_pipeline_palette", render(&m, 120, 34).backend());
    let mut m = fixture_with_diff_approval();
    m.set_locale(fr());
    insta::assert_snapshot!("french_approval", render(&m, 110, 34).backend());
    let mut m = fixture_detailed_inventory();
    m.set_locale(fr());
    insta::assert_snapshot!("french_inventory_details", render(&m, 160, 34).backend());
    // A worker's question is drawn in the console's language.
    use crate::i18n::Text;
    let (tx, _rx) = oneshot::channel();
    let args = [
        ("host", "[10.20.0.11]:22"),
        ("type", "ssh-ed25519"),
        ("fingerprint", "SHA256:n4UOw1Xc6Q1jS3Rr9sR0bQf6pLkE0r0xT5yq8GQm2nA"),
    ];
    let mut m = fixture_with_output();
    m.set_locale(fr());
    update(
        &mut m,
        Msg::Prompt(PromptRequest {
            title: Text::key("prompt.hostkey_title", &[]),
            body: Text::key("prompt.hostkey_body", &args),
            kind: PromptKind::Confirm,
            approval: None,
            reply: Some(tx),
        }),
    );
    let screen = format!("{:?}", render(&m, 110, 30).backend());
    assert!(screen.contains("Clé d'hôte inconnue") && screen.contains("La croire et la retenir"), "{screen}");
}

#[test]
fn zoomed_output_fills_the_screen() {
    let mut m = fixture_with_output();
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('z'))));
    assert!(m.zoomed);
    insta::assert_snapshot!(render(&m, 110, 20).backend());
}

/// Writes an SVG per pane and modal into `MERLYA_SCREENSHOT_DIR` (run by scripts/screenshots.sh).
#[test]
#[ignore = "writes files; run through scripts/screenshots.sh"]
fn write_screenshots() {
    let Some(dir) = std::env::var_os("MERLYA_SCREENSHOT_DIR") else { panic!("set MERLYA_SCREENSHOT_DIR") };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut modal = fixture_with_output();
    update(
        &mut modal,
        prompt(
            PromptKind::Confirm,
            "Unknown host key",
            "[10.20.0.11]:22 offers ssh-ed25519 key SHA256:n4UOw1Xc6Q1jS3Rr9sR0bQf6pLkE0r0xT5yq8GQm2nA. Trust it and remember it?",
        ),
    );
    update(&mut modal, prompt(PromptKind::Secret, "Key for web02", "passphrase for /root/.ssh/id_ed25519"));
    let mut help = fixture_model();
    help.help_open = true;
    let mut filtered = fixture_model();
    filtered.inventory.filtering = true;
    filtered.inventory.filter = "web".into();
    let mut chat = fixture_model();
    chat.focus = Pane::Chat;
    chat.chat.push(ChatEntry::new(ChatRole::User, "why is web02 loaded?"));
    let mut palette = fixture_with_output();
    palette.input.active = true;
    palette.input.set_text(":");
    let mut split = fixture_pipelines();
    split.diff_view.side_by_side = true;
    let drift = crate::app::view::fixtures::fixture_drift();
    let mut drift_diff = crate::app::view::fixtures::fixture_drift();
    drift_diff.drift_diff_open = true;
    let mut grouped = fixture_fleet_run();
    grouped.output_view.mode = crate::app::model::OutputMode::Grouped;
    let mut failed = fixture_fleet_run();
    failed.output_view.mode = crate::app::model::OutputMode::Failed;
    let mut quitting = fixture_fleet_run();
    update(&mut quitting, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('q'))));
    let (host_keys, _answers) = crate::app::view::fixtures::fixture_host_keys();
    let mut host_picker = fixture_fleet_run();
    host_picker.set_focus(Pane::Output);
    host_picker.output_view.host_picker = Some(1);
    let mut columns = crate::app::view::fixtures::fixture_inventory_health();
    columns.inventory.picker = Some((crate::app::inventory::Picker::Columns, 2));
    let shots: [(&str, Model); 30] = [
        ("pipeline-team", crate::app::view::fixtures::fixture_team_pipeline()),
        ("store-read-only", crate::app::view::fixtures::fixture_store_lost()),
        ("inventory-health", crate::app::view::fixtures::fixture_inventory_health()),
        ("inventory-columns", columns),
        ("setup-models", super::tests_setup::fixture_setup_models()),
        ("run-in-flight", fixture_fleet_run()),
        ("output-watch", fixture_watch()),
        ("output-grouped", grouped),
        ("output-failed-hosts", failed),
        ("quit-with-runs", quitting),
        ("drift", drift),
        ("drift-diff", drift_diff),
        ("host-keys", host_keys),
        ("output-host-picker", host_picker),
        ("inventory-details", fixture_detailed_inventory()),
        ("command-palette", palette),
        ("pipeline-side-by-side", split),
        ("approval-diff", fixture_with_diff_approval()),
        ("approval-terraform", fixture_with_terraform_approval()),
        ("console-start", fixture_model()),
        ("output-fan-out", fixture_with_output()),
        ("inventory-filter", filtered),
        ("chat-no-model", chat),
        ("help-overlay", help),
        ("prompt-modal", modal),
        ("approval-modal", fixture_with_approval()),
        ("chat-agent-turn", fixture_agent_turn()),
        ("pipeline", fixture_pipelines()),
        ("metrics", fixture_metrics()),
        ("metrics-over-time", {
            let mut m = fixture_metrics();
            m.zoomed = true;
            m
        }),
    ];
    let wide = [("inventory-wide", fixture_detailed_inventory())];
    let sized = shots.into_iter().map(|(n, m)| (n, m, 120)).chain(wide.into_iter().map(|(n, m)| (n, m, 200)));
    for (name, model, width) in sized {
        let terminal = render(&model, width, 34);
        std::fs::write(dir.join(format!("{name}.svg")), super::svg::buffer_to_svg(terminal.backend().buffer()))
            .unwrap();
    }
}

#[test]
fn help_overlay_on_a_small_terminal_scrolls_and_keeps_whole_descriptions() {
    let mut m = fixture_model();
    m.help_open = true;
    let top = format!("{:?}", render(&m, 80, 24).backend());
    assert!(top.contains("Scroll") || top.contains("scroll"), "a scroll hint: {top}");
    m.help_scroll = 30;
    let terminal = render(&m, 80, 24);
    let scrolled = format!("{:?}", terminal.backend());
    assert_ne!(top, scrolled, "the overlay scrolls");
    // A long description wraps instead of being cut.
    let joined: String = scrolled.split('"').filter(|s| s.contains('│')).map(|s| s.replace('│', " ")).collect();
    let words = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("cancel the newest run (or the agent's turn); with nothing running, ask to quit")
            || top.split_whitespace().collect::<Vec<_>>().join(" ").contains("ask to quit"),
        "{scrolled}"
    );
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_long_inventory_draws_the_rows_around_the_cursor() {
    let hosts =
        (0..5_000).map(|i| crate::inventory::Host::new(format!("node{i:04}"), format!("10.1.{}.{}", i / 256, i % 256)));
    let mut m = Model::new(hosts.collect(), false, 100, crate::app::theme::Theme::dark());
    m.inventory.cursor = 3_000;
    let screen = render(&m, 110, 24).backend().to_string();
    assert!(screen.contains("Inventory · 5000"), "{screen}");
    assert!(screen.contains("node3000") && !screen.contains("node0000"), "{screen}");
    // The cursor's row is the last one drawn, as when the table was given every row.
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains("node")).collect();
    assert!(rows.last().is_some_and(|l| l.contains("node3000")), "{rows:?}");
}
