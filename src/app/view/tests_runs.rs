//! Snapshots of what a run looks like: progress while it runs, identical
//! outputs folded, the failed hosts only, a diff of two hosts, the inventory's
//! per-host state and last error, the quit question, and an approval for
//! thirty hosts on a small terminal.

use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::fixtures::*;
use crate::app::model::{Model, OutputMode, Pane};
use crate::app::msg::Msg;
use crate::app::update::update;

fn render(model: &Model, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| super::view(model, f)).unwrap();
    terminal
}

fn screen(terminal: &Terminal<TestBackend>) -> String {
    format!("{:?}", terminal.backend())
}

#[test]
fn a_run_in_flight_shows_its_progress_and_the_inventory_its_states() {
    let m = fixture_fleet_run();
    let terminal = render(&m, 120, 30);
    let text = screen(&terminal);
    assert!(text.contains("#1 11/12 done, 1 failed, 1 running"), "{text}");
    assert!(text.contains("✓ ok") && text.contains("▶ running") && text.contains("! host key"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn grouped_output_folds_identical_hosts() {
    let mut m = fixture_fleet_run();
    m.output_view.mode = OutputMode::Grouped;
    let terminal = render(&m, 120, 30);
    let text = screen(&terminal);
    assert!(text.contains("9 hosts identical: web01–web06, web08, web10, web11"), "{text}");
    assert!(text.contains("═ web07 ✓ ok"), "the odd host stands alone: {text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn a_group_of_folded_hosts_keeps_its_header_only() {
    let mut m = fixture_fleet_run();
    m.output_view.mode = OutputMode::Grouped;
    let open = screen(&render(&m, 120, 30));
    let web07_line = open.lines().skip_while(|l| !l.contains("═ web07")).nth(1).unwrap_or_default().to_string();
    assert!(web07_line.contains("┃  │ "), "web07's output shows: {open}");
    m.output.set_folded("web07", true);
    let text = screen(&render(&m, 120, 30));
    let after = text.lines().skip_while(|l| !l.contains("═ web07")).nth(1).unwrap_or_default().to_string();
    assert!(after.contains("folded") && !after.contains("┃  │ "), "web07's block is folded: {text}");
    assert!(text.contains("9 hosts identical"), "the other group stays open: {text}");
}

#[test]
fn failed_hosts_only() {
    let mut m = fixture_fleet_run();
    m.output_view.mode = OutputMode::Failed;
    let terminal = render(&m, 120, 24);
    let text = screen(&terminal);
    assert!(text.contains("═ web09 ! host key refused") && !text.contains("═ web07"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn diff_of_two_hosts() {
    let mut m = fixture_fleet_run();
    m.output_view.mode = OutputMode::Diff("web01".into(), "web07".into());
    let terminal = render(&m, 120, 24);
    let text = screen(&terminal);
    assert!(text.contains("-up 41 days, 3 hours") && text.contains("+up 2 hours, 3 minutes"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_inventory_details_name_the_last_error_and_its_time() {
    let mut m = fixture_fleet_run();
    m.set_focus(Pane::Inventory);
    m.inventory.cursor = 9;
    m.inventory.details = true;
    let terminal = render(&m, 120, 30);
    let text = screen(&terminal);
    assert!(text.contains("last error 11-23 09:14 · host key") && text.contains("the host key of web09"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn quitting_with_a_run_in_flight_lists_it() {
    let mut m = fixture_fleet_run();
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('q'))));
    let terminal = render(&m, 100, 24);
    let text = screen(&terminal);
    assert!(text.contains("#1 $ uptime -p (12)") && text.contains("[y/o]"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn approval_for_thirty_hosts_at_80x24_keeps_its_choices() {
    use crate::approval::ApprovalRequest;
    use crate::safety::analyze;
    let mut m = fixture_fleet_run();
    let hosts: Vec<String> = (1..=30).map(|i| format!("app{i:02}.eu-west-1.prod.example")).collect();
    let command = "systemctl restart nginx";
    let request = ApprovalRequest::new("restart nginx".into(), command, hosts, &analyze(command), Vec::new());
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::mem::forget(rx);
    let prompt = crate::app::msg::PromptRequest {
        title: crate::i18n::Text::key("prompt.approve_title", &[("summary", &request.summary)]),
        body: request.command.as_str().into(),
        kind: crate::app::msg::PromptKind::Approval,
        approval: Some(request),
        reply: Some(tx),
    };
    update(&mut m, Msg::Prompt(prompt));
    let terminal = render(&m, 80, 24);
    let text = screen(&terminal);
    assert!(text.contains("[a]") && text.contains("[n/d] [Esc]"), "the choices show whole: {text}");
    assert!(text.contains("30 hosts"), "{text}");
    assert!(text.contains("awaiting approval"), "the status line says what the run waits for: {text}");
    insta::assert_snapshot!(terminal.backend());
}

/// The output pane's rows as text, borders stripped.
fn output_rows(terminal: &Terminal<TestBackend>) -> Vec<String> {
    let buffer = terminal.backend().buffer();
    let area = crate::app::layout::Areas::of(buffer.area, 1, None, 0).view;
    (area.y + 1..area.y + area.height - 1)
        .map(|y| (area.x + 1..area.x + area.width - 1).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .map(|row| row.trim_end().to_string())
        .collect()
}

fn keys(m: &mut Model, keys: &[crossterm::event::KeyCode]) {
    for key in keys {
        update(m, Msg::Key(crossterm::event::KeyEvent::from(*key)));
    }
}

#[test]
fn scrollback_shows_full_screens_at_every_depth() {
    use crossterm::event::KeyCode::{Char, PageUp};
    let mut m = fixture_long_output();
    update(&mut m, Msg::Resize(110, 30));
    let rows = m.output_rows();
    // Following: the newest line at the bottom.
    let t = render(&m, 110, 30);
    let shown = output_rows(&t);
    assert_eq!(shown.iter().filter(|r| !r.is_empty()).count(), rows, "a full screen: {shown:#?}");
    assert!(shown.last().unwrap().ends_with("web02 line 40"), "{shown:#?}");
    insta::assert_snapshot!("scrollback_bottom", t.backend());
    // One page up: still full, older lines.
    keys(&mut m, &[PageUp]);
    let t = render(&m, 110, 30);
    let shown = output_rows(&t);
    assert_eq!(shown.iter().filter(|r| !r.is_empty()).count(), rows, "{shown:#?}");
    assert!(!shown.iter().any(|r| r.contains("line 40")), "{shown:#?}");
    insta::assert_snapshot!("scrollback_page_up", t.backend());
    // The top: the header first, then the oldest lines, and no blank rows.
    keys(&mut m, &[Char('g')]);
    let t = render(&m, 110, 30);
    let shown = output_rows(&t);
    assert!(shown[0].contains("$ seq 40") && shown[1].ends_with("web01 line 01"), "{shown:#?}");
    assert_eq!(shown.iter().filter(|r| !r.is_empty()).count(), rows, "{shown:#?}");
    insta::assert_snapshot!("scrollback_top", t.backend());
    // One host at a time (picked with h), from its top.
    use crossterm::event::KeyCode::{Down, Enter};
    keys(&mut m, &[Char('h'), Down, Down, Enter, Char('g')]);
    let t = render(&m, 110, 30);
    let shown = output_rows(&t);
    assert!(shown[1].ends_with("web02 line 01") && shown.iter().all(|r| !r.contains("web01 line")), "{shown:#?}");
    insta::assert_snapshot!("scrollback_one_host_top", t.backend());
}

#[test]
fn the_selection_highlight_sits_on_the_lines_it_names() {
    use crossterm::event::KeyCode::Char;
    let mut m = fixture_long_output();
    update(&mut m, Msg::Resize(110, 30));
    // From the newest line, two up, select, three more up: lines 39 (web02) … 38 (web01).
    keys(&mut m, &[Char('k'), Char('k'), Char('v'), Char('k'), Char('k'), Char('k')]);
    let t = render(&m, 110, 30);
    let buffer = t.backend().buffer();
    let area = crate::app::layout::Areas::of(buffer.area, 1, None, 0).view;
    let highlighted: Vec<String> = (area.y + 1..area.y + area.height - 1)
        .filter(|y| buffer[(area.x + 1, *y)].modifier.contains(ratatui::style::Modifier::REVERSED))
        .map(|y| (area.x + 1..area.x + area.width - 1).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .map(|r| r.trim_end().to_string())
        .collect();
    let texts: Vec<&str> = highlighted.iter().map(|r| r.rsplit("│ ").next().unwrap_or("")).collect();
    assert_eq!(texts, ["web01 line 38", "web02 line 38", "web01 line 39", "web02 line 39"], "{highlighted:#?}");
    // Selecting at the very top keeps a full screen and the highlight on the oldest lines.
    keys(&mut m, &[Char('v'), Char('g'), Char('v'), Char('j')]);
    let t = render(&m, 110, 30);
    let shown = output_rows(&t);
    assert!(shown[1].ends_with("web01 line 01"), "{shown:#?}");
    let buffer = t.backend().buffer();
    let reversed = |y: u16| buffer[(area.x + 1, y)].modifier.contains(ratatui::style::Modifier::REVERSED);
    assert!(
        reversed(area.y + 1) && reversed(area.y + 2) && !reversed(area.y + 3),
        "the header and line 01: {shown:#?}"
    );
    insta::assert_snapshot!("selection_at_the_top", t.backend());
}

#[test]
fn a_click_on_a_choice_answers_the_prompt() {
    use crate::app::msg::{Effect, PromptAnswer};
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut m = fixture_with_approval();
    update(&mut m, Msg::Resize(110, 34));
    let terminal = render(&m, 110, 34);
    let buffer = terminal.backend().buffer();
    let find = |needle: &str| {
        (0..buffer.area.height).find_map(|y| {
            let row: String = (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect();
            row.find(needle).map(|byte| (u16::try_from(row[..byte].chars().count()).unwrap(), y))
        })
    };
    let click = |(column, row): (u16, u16)| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: crossterm::event::KeyModifiers::NONE,
        })
    };
    let answer = |effects: Vec<Effect>| match effects.as_slice() {
        [Effect::AnswerPrompt { answer, .. }] => Some(answer.clone()),
        _ => None,
    };
    // Off the choices, nothing happens.
    assert!(update(&mut m, click((0, 0))).is_empty());
    assert_eq!(m.prompts.len(), 2);
    let deny = find("[n/d]").expect("the deny choice is drawn");
    assert_eq!(answer(update(&mut m, click(deny))), Some(PromptAnswer::No), "a click on deny denies");
    // The second request: drawn again, then "always" by a click on its label.
    let terminal = render(&m, 110, 34);
    let buffer = terminal.backend().buffer();
    let always = (0..buffer.area.height)
        .find_map(|y| {
            let row: String = (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect();
            row.find("always").map(|byte| (u16::try_from(row[..byte].chars().count()).unwrap(), y))
        })
        .unwrap();
    assert_eq!(answer(update(&mut m, click(always))), Some(PromptAnswer::Always));
    assert!(m.prompts.is_empty());
}

#[test]
fn a_lost_store_is_shown_in_the_status_bar_and_a_refused_run_says_why() {
    let m = fixture_store_lost();
    let terminal = render(&m, 110, 24);
    let text = screen(&terminal);
    assert!(text.contains("store unreachable · read-only"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}

#[test]
fn the_pipeline_pane_lists_changes_waiting_for_a_second_person_and_teammates_runs() {
    let m = fixture_team_pipeline();
    let terminal = render(&m, 120, 32);
    let text = screen(&terminal);
    assert!(text.contains("#7 alice@bastion · @prod · until 23:10 · :review 7 — restart nginx"), "{text}");
    assert!(text.contains("alice@bastion $ systemctl restart nginx · 2/3 done, 1 failed ✓ web01 ▶ web02"), "{text}");
    assert!(text.contains("yours: a teammate reviews it"), "{text}");
    insta::assert_snapshot!(terminal.backend());
}
