use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::oneshot;

use super::*;
use crate::app::model::ToastLevel;
use crate::app::msg::{PromptAnswer, PromptKind, PromptRequest};
use crate::app::output_buffer::LineKind;
use crate::app::theme::Theme;
use crate::exec::Stream;
use crate::exec::{ExecEvent, HostResult};
use crate::inventory::Host;

pub(super) fn model() -> Model {
    let mut web1 = Host::new("web01", "10.0.0.1");
    web1.add_tag("web");
    let mut web2 = Host::new("web02", "10.0.0.2");
    web2.add_tag("web");
    let db = Host::new("db01", "10.0.0.3");
    Model::new(vec![Host::localhost(), web1, web2, db], false, 100, Theme::plain())
}

pub(super) fn key(code: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub(super) fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

pub(super) fn type_text(m: &mut Model, text: &str) -> Vec<Effect> {
    let mut effects = Vec::new();
    for c in text.chars() {
        effects.extend(update(m, key(KeyCode::Char(c))));
    }
    effects
}

/// A console with a model, a question typed in the Chat pane and sent.
fn asked(question: &str) -> Model {
    let mut m = model();
    m.model_configured = true;
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, question);
    update(&mut m, key(KeyCode::Enter));
    m
}

fn prompt(kind: PromptKind) -> (Msg, oneshot::Receiver<PromptAnswer>) {
    let (tx, rx) = oneshot::channel();
    (Msg::Prompt(PromptRequest { title: "t".into(), body: "b".into(), kind, approval: None, reply: Some(tx) }), rx)
}

fn answer_of(effects: Vec<Effect>) -> PromptAnswer {
    match effects.into_iter().next() {
        Some(Effect::AnswerPrompt { answer, .. }) => answer,
        other => panic!("expected an answer, got {other:?}"),
    }
}

#[test]
fn tab_cycles_six_panes_and_numbers_jump() {
    let mut m = model();
    let mut seen = vec![m.focus];
    for _ in 0..6 {
        update(&mut m, key(KeyCode::Tab));
        seen.push(m.focus);
    }
    assert_eq!(
        seen,
        [Pane::Inventory, Pane::Output, Pane::Pipeline, Pane::Metrics, Pane::Drift, Pane::Chat, Pane::Inventory]
    );
    update(&mut m, key(KeyCode::BackTab));
    assert_eq!(m.focus, Pane::Chat);
    update(&mut m, key(KeyCode::Char('5')));
    assert_eq!((m.focus, m.view), (Pane::Metrics, Pane::Metrics));
    update(&mut m, key(KeyCode::Char('3')));
    assert_eq!((m.focus, m.view), (Pane::Chat, Pane::Metrics), "the chat keeps the last tab shown");
    update(&mut m, key(KeyCode::Char('2')));
    assert_eq!(m.view, Pane::Output);
}

#[test]
fn mouse_clicks_focus_the_pane_under_the_pointer() {
    use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
    let mut m = model();
    update(&mut m, Msg::Resize(120, 40));
    update(&mut m, key(KeyCode::Char('4')));
    let click = |column, row| {
        Msg::Mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column,
            row,
            modifiers: KeyModifiers::NONE,
        })
    };
    update(&mut m, click(100, 35));
    assert_eq!(m.focus, Pane::Chat);
    update(&mut m, click(100, 3));
    assert_eq!(m.focus, Pane::Pipeline, "the top-right area is the tab shown");
    update(&mut m, click(3, 3));
    assert_eq!(m.focus, Pane::Inventory);
    assert_eq!(m.inventory.cursor, 1, "the row under the pointer is selected (border, header, localhost, web01)");
    update(&mut m, click(3, 2));
    assert_eq!(m.inventory.cursor, 0);
    update(&mut m, click(3, 30));
    assert_eq!(m.inventory.cursor, 0, "below the last host nothing changes");
    // The tabs in the top-right border: a click on a label shows that tab.
    let terminal = {
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
        t.draw(|f| crate::app::view::view(&m, f)).unwrap();
        t
    };
    let top: String = (0..120).map(|x| terminal.backend().buffer()[(x, 0)].symbol().to_string()).collect();
    let column = top.chars().collect::<Vec<_>>().windows(7).position(|w| w.iter().collect::<String>() == "Metrics");
    let column = u16::try_from(column.expect("the Metrics tab label is drawn")).unwrap() + 2;
    update(&mut m, click(column, 0));
    assert_eq!((m.focus, m.view), (Pane::Metrics, Pane::Metrics));
}

#[test]
fn pipeline_selection_moves_within_runs() {
    use crate::store::pipelines::{Kind, PipelineRun};
    let mut m = model();
    let run = |id: &str| {
        let mut run = PipelineRun::new(Kind::Bash, "web01", serde_json::Value::Null, "alice");
        run.id = id.into();
        run
    };
    let dashboard = crate::app::model::Dashboard { pipelines: vec![run("a"), run("b")], ..Default::default() };
    update(&mut m, Msg::Dashboard(Box::new(dashboard)));
    update(&mut m, key(KeyCode::Char('4')));
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char('j')));
    assert_eq!(m.pipeline_cursor, 1);
    update(&mut m, key(KeyCode::Char('g')));
    assert_eq!(m.pipeline_cursor, 0);
}

#[test]
fn bang_runs_on_the_cursor_host_then_on_marked_hosts() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('!')));
    assert!(m.input.active);
    type_text(&mut m, "uptime");
    let effects = update(&mut m, key(KeyCode::Enter));
    match &effects[..] {
        [Effect::SaveHistory(line), Effect::RunCommand { run: 1, hosts, command }] => {
            assert_eq!(line, "!uptime");
            assert_eq!(command, "uptime");
            assert_eq!(hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["localhost"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(!m.input.active);
    // Mark web01 and db01.
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char(' ')));
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char(' ')));
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "df -h");
    let effects = update(&mut m, key(KeyCode::Enter));
    let Some(Effect::RunCommand { run: 2, hosts, .. }) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["web01", "db01"]);
    assert_eq!(m.runs.len(), 2);
}

#[test]
fn colon_exec_resolves_targets_and_reports_typos() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, "exec @web -- uptime");
    let effects = update(&mut m, key(KeyCode::Enter));
    let Some(Effect::RunCommand { hosts, .. }) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(hosts.len(), 2);
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, "exec @nope -- uptime");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(!effects.iter().any(|e| matches!(e, Effect::RunCommand { .. })));
    assert_eq!(m.flash.as_deref(), Some("no host has tag @nope"));
}

#[test]
fn filter_narrows_hosts_and_escape_clears() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('/')));
    type_text(&mut m, "web");
    assert_eq!(m.visible_hosts().len(), 2);
    // q while filtering is text, not quit.
    type_text(&mut m, "q");
    assert!(!m.should_quit);
    assert_eq!(m.visible_hosts().len(), 0);
    update(&mut m, key(KeyCode::Backspace));
    update(&mut m, key(KeyCode::Enter));
    assert!(!m.inventory.filtering);
    assert_eq!(m.visible_hosts().len(), 2);
    update(&mut m, key(KeyCode::Char('a')));
    assert_eq!(m.inventory.marked.len(), 2);
    update(&mut m, key(KeyCode::Esc));
    assert_eq!(m.visible_hosts().len(), 4);
    assert!(m.inventory.marked.is_empty());
}

/// Sets the filter as a command would; any message brings the list in step.
fn set_filter(m: &mut Model, text: &str) -> Vec<Effect> {
    m.inventory.filter = text.into();
    update(m, Msg::Resize(m.size.0, m.size.1))
}

#[test]
fn fuzzy_filter_ranks_and_tags_narrow() {
    let mut m = model();
    set_filter(&mut m, "wb2");
    assert_eq!(m.visible_hosts().iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["web02"]);
    set_filter(&mut m, "@web '01");
    assert_eq!(m.visible_hosts().iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["web01"]);
    set_filter(&mut m, "@web");
    assert_eq!(m.visible_hosts().len(), 2);
    set_filter(&mut m, "10.0.0.3");
    assert_eq!(m.visible_hosts()[0].name, "db01");
}

#[test]
fn exec_events_fill_output_and_reachability() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "uptime");
    update(&mut m, key(KeyCode::Enter));
    update(
        &mut m,
        Msg::Exec {
            run: 1,
            event: ExecEvent::Line { host: "localhost".into(), stream: Stream::Stdout, line: "up 3 days".into() },
        },
    );
    let result = HostResult {
        host: "localhost".into(),
        exit_code: Some(0),
        stdout: String::new(),
        stderr: String::new(),
        duration_ms: 12,
        error: None,
        failure: None,
        output_cut_bytes: 0,
        output_spill: Vec::new(),
        output_dropped_bytes: 0,
    };
    update(&mut m, Msg::RunStarted { run: 1 });
    assert_eq!(m.runs[&1].state, crate::exec::runs::RunState::Running);
    let effects = update(&mut m, Msg::Exec { run: 1, event: ExecEvent::Finished(result.clone()) });
    assert!(matches!(&effects[..], [Effect::SetReachable { reachable: true, .. }]));
    assert_eq!(m.reachable(&m.hosts[0]), Some(true));
    assert_eq!(m.runs[&1].progress().done, 1);
    update(&mut m, Msg::RunDone { run: 1, results: vec![result.clone()] });
    assert_eq!(m.runs[&1].state, crate::exec::runs::RunState::Done, "kept, finished, for rerun and export");
    assert!(m.active_runs().is_empty());
    assert_eq!(
        m.flash.as_deref(),
        Some("#1 uptime: 1/1 hosts succeeded · done · 0.01s"),
        "the output is on screen: no toast"
    );
    assert!(m.toasts.is_empty());
    let texts: Vec<&str> = m.output.window(10, 0, None).into_iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "$ uptime · 1 host: localhost",
            "up 3 days",
            "✓ localhost · exit 0 · 0.01s",
            "#1 uptime: 1/1 hosts succeeded · done · 0.01s"
        ]
    );
    let down = HostResult {
        failure: Some(crate::exec::HostFailure::Unreachable),
        error: Some("cannot reach 10.0.0.3:22: refused".into()),
        exit_code: None,
        host: "db01".into(),
        ..Default::default()
    };
    let effects = update(&mut m, Msg::Exec { run: 9, event: ExecEvent::Finished(down) });
    assert!(matches!(&effects[..], [Effect::SetReachable { reachable: false, .. }]));
    // In the background (another tab shown), the same news is a toast that fades.
    update(&mut m, key(KeyCode::Char('5')));
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "uptime");
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, Msg::RunDone { run: 2, results: vec![result] });
    let toast = m.toasts.back().expect("a toast says the run finished");
    assert_eq!(
        (toast.level, toast.text.as_str()),
        (ToastLevel::Success, "#2 uptime: 1/1 hosts succeeded · done · 0.01s")
    );
    for _ in 0..8 {
        update(&mut m, Msg::Tick);
    }
    assert!(m.toasts.is_empty(), "toasts fade after a few seconds");
}

#[test]
fn scrolling_up_stops_following_and_holds_position() {
    let mut m = model();
    for i in 0..20 {
        m.output.push(LineKind::Note, i.to_string());
    }
    update(&mut m, key(KeyCode::Char('2')));
    update(&mut m, key(KeyCode::Char('k')));
    assert!(!m.output_view.follow);
    assert_eq!(m.output_view.scroll, 1);
    update(
        &mut m,
        Msg::Exec { run: 1, event: ExecEvent::Line { host: "h".into(), stream: Stream::Stdout, line: "new".into() } },
    );
    assert_eq!(m.output_view.scroll, 2, "same lines stay on screen");
    update(&mut m, key(KeyCode::Char('G')));
    assert!(m.output_view.follow);
    assert_eq!(m.output_view.scroll, 0);
}

#[test]
fn prompts_queue_and_answer_in_order() {
    let mut m = model();
    let (first, _rx1) = prompt(PromptKind::Confirm);
    let (second, _rx2) = prompt(PromptKind::Secret);
    update(&mut m, first);
    update(&mut m, second);
    assert_eq!(m.prompts.len(), 2);
    // Keys go to the prompt, not the panes.
    assert!(update(&mut m, key(KeyCode::Char('q'))).is_empty());
    assert!(!m.should_quit);
    assert_eq!(answer_of(update(&mut m, key(KeyCode::Char('y')))), PromptAnswer::Yes);
    assert_eq!(m.prompts.len(), 1);
    type_text(&mut m, "s3cret");
    assert_eq!(answer_of(update(&mut m, key(KeyCode::Enter))), PromptAnswer::Secret("s3cret".into()));
    assert!(m.prompts.is_empty());
}

#[test]
fn escape_declines_and_ctrl_c_declines_everything_queued() {
    let mut m = model();
    for _ in 0..3 {
        update(&mut m, prompt(PromptKind::Confirm).0);
    }
    assert_eq!(answer_of(update(&mut m, key(KeyCode::Esc))), PromptAnswer::No);
    let effects = update(&mut m, ctrl('c'));
    assert_eq!(effects.len(), 2);
    assert!(m.prompts.is_empty());
    assert!(!m.should_quit, "Ctrl-C in a prompt does not quit");
}

#[test]
fn chat_without_model_explains_and_history_browses() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "why is web01 slow?");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.chat.len(), 2);
    assert_eq!(m.chat[1].role, ChatRole::User);
    // A worker runs the runbook that answers it, or says nobody can.
    assert!(matches!(effects.last(), Some(Effect::Runbook(t)) if t == "why is web01 slow?"));
    let note = m.locale.t("chat.no_answer").to_string();
    update(&mut m, Msg::Note(note));
    assert!(m.chat[2].text.contains("No model is configured"));
    update(&mut m, key(KeyCode::Char('i')));
    update(&mut m, key(KeyCode::Up));
    assert_eq!(m.input.text(), "why is web01 slow?");
    update(&mut m, key(KeyCode::Down));
    assert_eq!(m.input.text(), "");
}

#[test]
fn history_is_saved_with_secrets_masked() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "mysql -u root -phunter2");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(matches!(&effects[0], Effect::SaveHistory(l) if l == "!mysql -u root -p***"), "{effects:?}");
}

#[test]
fn language_switches_live_and_is_saved() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "/language fr");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.locale.code(), "fr");
    assert!(m.chat[0].text.starts_with("Aucun modèle"), "the banner is translated");
    assert!(
        effects
            .iter()
            .any(|e| matches!(e, Effect::SaveSetting { key, value } if key == "ui.language" && value == "fr"))
    );
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "/language de");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.flash.as_deref(), Some("langue inconnue de : en ou fr attendu"));
}

#[test]
fn quit_keys_and_help() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('?')));
    assert!(m.help_open);
    update(&mut m, key(KeyCode::Char('q')));
    assert!(!m.help_open && !m.should_quit, "q closes help first");
    update(&mut m, key(KeyCode::Char('q')));
    assert!(m.should_quit);
    // Ctrl-C with nothing running asks before quitting.
    let mut m = model();
    update(&mut m, ctrl('c'));
    assert!(!m.should_quit && m.prompts.len() == 1, "asks first");
    update(&mut m, key(KeyCode::Char('y')));
    assert!(m.should_quit);
}

/// Starts `command` on the selection as a run and lets it past the gate.
fn started_run(m: &mut Model, command: &str) -> u64 {
    update(m, key(KeyCode::Char('!')));
    type_text(m, command);
    update(m, key(KeyCode::Enter));
    let run = *m.runs.keys().next_back().expect("a run");
    update(m, Msg::RunStarted { run });
    run
}

#[test]
fn ctrl_c_cancels_the_running_run_then_asks_before_quitting() {
    let mut m = model();
    let run = started_run(&mut m, "sleep 600");
    let effects = update(&mut m, ctrl('c'));
    assert!(matches!(&effects[..], [Effect::CancelRun(r)] if *r == run), "the first Ctrl-C cancels the run");
    assert!(!m.should_quit && m.prompts.is_empty());
    assert!(m.runs[&run].cancel_requested);
    // A second Ctrl-C while it stops asks, listing what still runs.
    update(&mut m, ctrl('c'));
    let body = m.prompts.front().map(|p| p.request.body.render(&m.locale)).unwrap_or_default();
    assert!(body.contains("#1 $ sleep 600 (1)"), "{body}");
    update(&mut m, key(KeyCode::Char('n')));
    assert!(!m.should_quit, "no keeps the console open");
    let cancelled = HostResult {
        host: "localhost".into(),
        failure: Some(crate::exec::HostFailure::Cancelled),
        error: Some("cancelled".into()),
        ..Default::default()
    };
    update(&mut m, Msg::RunDone { run, results: vec![cancelled] });
    assert_eq!(m.runs[&run].state, crate::exec::runs::RunState::Cancelled);
    assert_eq!(m.host_run_state("localhost").map(|s| s.glyph()), Some("⊘"));
}

#[test]
fn quitting_with_a_run_in_flight_asks_and_cancels_it() {
    let mut m = model();
    let run = started_run(&mut m, "sleep 600");
    assert!(update(&mut m, key(KeyCode::Char('q'))).is_empty());
    assert!(!m.should_quit && m.prompts.len() == 1, "q asks while a run is in flight");
    let effects = update(&mut m, key(KeyCode::Char('y')));
    assert!(m.should_quit);
    assert!(matches!(&effects[..], [Effect::CancelRun(r)] if *r == run), "quitting stops the run on its hosts");
    // Asked only because a run was in flight: when it ends first, the console quits.
    let mut m = model();
    let run = started_run(&mut m, "sleep 1");
    update(&mut m, key(KeyCode::Char('q')));
    assert!(!m.should_quit);
    let done = HostResult { host: "localhost".into(), exit_code: Some(0), ..Default::default() };
    update(&mut m, Msg::RunDone { run, results: vec![done] });
    assert!(m.should_quit && m.prompts.is_empty(), "nothing left to protect: q quits");
    // SIGTERM quits without asking, and stops runs the same way.
    let mut m = model();
    let run = started_run(&mut m, "sleep 600");
    let effects = update(&mut m, Msg::Terminate);
    assert!(m.should_quit && matches!(&effects[..], [Effect::CancelRun(r)] if *r == run));
}

#[test]
fn palette_cancel_rerun_and_run_views() {
    let mut m = model();
    assert!(update(&mut m, Msg::RunDone { run: 7, results: Vec::new() }).len() == 1, "an unknown run is ignored");
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, "cancel");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.flash.as_deref(), Some("Nothing is running."));
    let run = started_run(&mut m, "uptime");
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, &format!("cancel {run}"));
    assert!(
        matches!(&update(&mut m, key(KeyCode::Enter))[..], [Effect::SaveHistory(_), Effect::CancelRun(r)] if *r == run)
    );
    let failed = HostResult { host: "localhost".into(), exit_code: Some(2), ..Default::default() };
    update(&mut m, Msg::RunDone { run, results: vec![failed] });
    assert_eq!(m.runs[&run].state, crate::exec::runs::RunState::Cancelled, "cancel was asked for");
    // R reruns on the failed hosts, through the gate again (a new run).
    update(&mut m, key(KeyCode::Char('2')));
    let effects = update(&mut m, key(KeyCode::Char('R')));
    assert!(
        matches!(&effects[..], [Effect::RunCommand { run: 2, hosts, command }] if hosts.len() == 1 && command == "uptime")
    );
    update(&mut m, key(KeyCode::Char('=')));
    assert_eq!(m.output_view.mode, crate::app::model::OutputMode::Grouped);
    update(&mut m, key(KeyCode::Char('=')));
    assert_eq!(m.output_view.mode, crate::app::model::OutputMode::Live);
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, "diff localhost nowhere");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.flash.as_deref(), Some("nowhere is not in run #2."));
    update(&mut m, key(KeyCode::Char(':')));
    type_text(&mut m, "export 1 /tmp/run.md");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(
        matches!(&effects[..], [Effect::SaveHistory(_), Effect::ExportRun { run, path }] if run.id == 1 && path == "/tmp/run.md")
    );
}

#[test]
fn approval_prompts_answer_once_always_or_deny() {
    let mut m = model();
    for _ in 0..3 {
        update(&mut m, prompt(PromptKind::Approval).0);
    }
    assert!(update(&mut m, key(KeyCode::Char('y'))).len() == 1);
    assert_eq!(answer_of(update(&mut m, key(KeyCode::Char('a')))), PromptAnswer::Always);
    assert_eq!(answer_of(update(&mut m, key(KeyCode::Char('d')))), PromptAnswer::No);
    update(&mut m, key(KeyCode::Char('!')));
    type_text(&mut m, "touch /tmp/x");
    update(&mut m, key(KeyCode::Enter));
    update(&mut m, Msg::RunDenied { run: 1, by: "tester (console)".into() });
    assert_eq!(m.runs[&1].state, crate::exec::runs::RunState::Denied);
    assert!(m.active_runs().is_empty());
    assert_eq!(
        m.output.window(1, 0, None).first().map(|l| l.text.as_str()),
        Some("✗ not run: denied by tester (console)")
    );
}

#[test]
fn output_search_jumps_between_matches() {
    let mut m = model();
    for i in 0..30 {
        let text = if i % 10 == 5 { format!("ERROR at {i}") } else { format!("line {i}") };
        m.output.push(LineKind::Note, text);
    }
    update(&mut m, key(KeyCode::Char('2')));
    update(&mut m, key(KeyCode::Char('/')));
    type_text(&mut m, "error");
    assert!(m.output_view.searching, "n and N are text while typing");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.output_view.scroll, 4, "the newest match, line 25");
    assert!(!m.output_view.follow);
    update(&mut m, key(KeyCode::Char('n')));
    assert_eq!(m.output_view.scroll, 14);
    update(&mut m, key(KeyCode::Char('n')));
    update(&mut m, key(KeyCode::Char('n')));
    assert_eq!(m.output_view.scroll, 24);
    assert_eq!(m.flash.as_deref(), Some("no more matches for “error”"));
    update(&mut m, key(KeyCode::Char('N')));
    assert_eq!(m.output_view.scroll, 14);
}

#[test]
fn h_opens_a_picker_of_the_hosts_with_output() {
    let mut m = model();
    for host in ["web01", "db01", "web01"] {
        update(
            &mut m,
            Msg::Exec {
                run: 1,
                event: ExecEvent::Line { host: host.into(), stream: Stream::Stdout, line: "x".into() },
            },
        );
    }
    update(&mut m, key(KeyCode::Char('2')));
    // Row 0 is every host, then each host with output; Enter shows the one under the cursor.
    update(&mut m, key(KeyCode::Char('h')));
    assert_eq!(m.output_view.host_picker, Some(0));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!((m.output_view.host.as_deref(), m.output_view.host_picker), (Some("db01"), None));
    // It opens on the host shown; Esc leaves it as it was; row 0 goes back to every host.
    update(&mut m, key(KeyCode::Char('h')));
    assert_eq!(m.output_view.host_picker, Some(2));
    update(&mut m, key(KeyCode::Esc));
    assert_eq!(m.output_view.host.as_deref(), Some("db01"));
    update(&mut m, key(KeyCode::Char('h')));
    update(&mut m, key(KeyCode::Up));
    update(&mut m, key(KeyCode::Up));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.output_view.host, None);
}

#[test]
fn ctrl_z_suspends_and_y_copies_the_screen() {
    let mut m = model();
    assert!(matches!(&update(&mut m, ctrl('z'))[..], [Effect::Suspend]));
    m.output.push(LineKind::Note, "first");
    m.output.push(LineKind::Note, "second");
    update(&mut m, key(KeyCode::Char('2')));
    match &update(&mut m, key(KeyCode::Char('y')))[..] {
        [Effect::Copy(text)] => assert_eq!(text, "first\nsecond"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_agent_turn_is_a_run_that_ctrl_c_cancels() {
    let mut m = asked("why is web01 slow?");
    let run = m.agent_run.expect("the turn is a run");
    assert_eq!(m.runs[&run].state, crate::exec::runs::RunState::Running);
    let exec = |event| Msg::Agent(crate::agent::AgentEvent::Exec(event));
    update(&mut m, exec(ExecEvent::Started { host: "web01".into() }));
    assert_eq!(
        m.host_run_state("web01"),
        Some(crate::exec::runs::HostState::Running),
        "its hosts show in the inventory"
    );
    let effects = update(&mut m, ctrl('c'));
    assert!(matches!(&effects[..], [Effect::CancelAgent]), "{effects:?}");
    let cancelled = HostResult {
        host: "web01".into(),
        failure: Some(crate::exec::HostFailure::Cancelled),
        error: Some("cancelled".into()),
        ..Default::default()
    };
    update(&mut m, exec(ExecEvent::Finished(cancelled)));
    update(&mut m, Msg::AgentDone { error: Some("cancelled".into()), summary: String::new() });
    assert_eq!(m.runs[&run].state, crate::exec::runs::RunState::Cancelled);
    assert!(m.agent_run.is_none() && m.active_runs().is_empty());
    // The input stayed open for the next question through it all; Esc leaves it.
    assert!(m.input.active);
    update(&mut m, key(KeyCode::Esc));
    update(&mut m, key(KeyCode::Char('2')));
    update(&mut m, key(KeyCode::Char('r')));
    assert_eq!(m.flash.as_deref(), Some("An agent's turn is not rerun: ask again in the chat."));
}

#[test]
fn the_input_stays_open_after_a_question_so_the_next_letter_is_typed_not_a_key() {
    let mut m = asked("why is web01 slow?");
    update(&mut m, Msg::AgentDone { error: None, summary: String::new() });
    type_text(&mut m, "q1");
    assert!(!m.should_quit, "q typed after a question is text, not quit");
    assert_eq!(m.input.text(), "q1");
    // A command closes the input as before.
    update(&mut m, ctrl('u'));
    type_text(&mut m, ":clear");
    update(&mut m, key(KeyCode::Enter));
    assert!(!m.input.active);
}
