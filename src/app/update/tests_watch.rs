//! `update` tests for `:watch`, folding hosts in the output, and retrying or
//! editing the last question.

use crossterm::event::KeyCode;

use super::tests::{ctrl, key, model};
use super::*;
use crate::exec::{ExecEvent, HostResult, Stream};

fn line(host: &str, text: &str) -> ExecEvent {
    ExecEvent::Line { host: host.into(), stream: Stream::Stdout, line: text.into() }
}

fn done(run: u64, host: &str) -> Msg {
    let result = HostResult { host: host.into(), exit_code: Some(0), ..Default::default() };
    Msg::RunDone { run, results: vec![result] }
}

/// One round of watch 1 on localhost printing `lines`; returns its run.
fn round(m: &mut Model, lines: &[&str]) -> u64 {
    let effects = update(m, Msg::WatchTick { watch: 1 });
    let [Effect::RunWatchRound { run, watch: 1, hosts, command }] = &effects[..] else { panic!("{effects:?}") };
    assert_eq!((hosts.len(), command.as_str()), (1, "cat /tmp/f"));
    let run = *run;
    update(m, Msg::RunStarted { run });
    assert!(update(m, Msg::WatchTick { watch: 1 }).is_empty(), "no second round while one runs");
    for text in lines {
        update(m, Msg::Exec { run, event: line("localhost", text) });
    }
    update(m, done(run, "localhost"));
    run
}

fn changed_texts(m: &Model) -> Vec<String> {
    m.output
        .lines(None)
        .into_iter()
        .filter_map(|l| l.changed.as_ref().map(|c| c.iter().map(|r| l.text[r.clone()].to_string()).collect::<String>()))
        .collect()
}

#[test]
fn a_watch_runs_rounds_marks_what_changed_and_ctrl_c_stops_it() {
    let mut m = model();
    let effects = update(&mut m, Msg::Typed(":watch 5 -- cat /tmp/f".into()));
    assert!(
        matches!(&effects[..], [Effect::StartWatch { watch: 1, every: 5, command }] if command == "cat /tmp/f"),
        "{effects:?}"
    );
    assert_eq!(m.focus, Pane::Output);
    round(&mut m, &["disk 41%", "load 0.5"]);
    assert!(changed_texts(&m).is_empty(), "the first round has nothing to compare with");
    round(&mut m, &["disk 47%", "load 0.5", "new line"]);
    assert_eq!(changed_texts(&m), ["7", "new line"]);
    assert!(m.toasts.is_empty(), "rounds do not toast");
    assert_eq!(m.watch.as_ref().map(|w| w.rounds), Some(2));
    assert!(update(&mut m, Msg::WatchTick { watch: 7 }).is_empty(), "another watch's tick is ignored");

    let effects = update(&mut m, ctrl('c'));
    assert!(matches!(&effects[..], [Effect::StopWatch]), "{effects:?}");
    assert!(m.watch.is_none());
    assert!(update(&mut m, Msg::WatchTick { watch: 1 }).is_empty(), "a tick after the stop starts nothing");
    assert!(m.prompts.is_empty(), "Ctrl-C stopped the watch; it did not ask to quit");
}

#[test]
fn watch_off_cancels_the_round_in_flight() {
    let mut m = model();
    update(&mut m, Msg::Typed(":watch 2 -- cat /tmp/f".into()));
    update(&mut m, Msg::WatchTick { watch: 1 });
    update(&mut m, Msg::RunStarted { run: 1 });
    let effects = update(&mut m, Msg::Typed(":watch off".into()));
    assert!(matches!(&effects[..], [Effect::StopWatch, Effect::CancelRun(1)]), "{effects:?}");
    assert!(m.flash.as_deref().is_some_and(|f| f.contains("1 round")), "{:?}", m.flash);
    update(&mut m, Msg::Typed(":watch off".into()));
    assert_eq!(m.flash.as_deref(), Some("no watch to stop"));
}

#[test]
fn a_watch_of_a_change_is_refused_with_its_reason_not_asked() {
    let mut m = model();
    update(&mut m, Msg::Typed(":watch 5 -- rm -rf /tmp/x".into()));
    let effects = update(&mut m, Msg::WatchRefused { watch: 1, why: "rm deletes files".into() });
    assert!(matches!(&effects[..], [Effect::StopWatch]), "{effects:?}");
    assert!(m.watch.is_none());
    assert!(m.prompts.is_empty(), "nothing is asked");
    let toast = m.toasts.back().map(|t| t.text.clone()).unwrap_or_default();
    assert!(toast.contains("not proven read-only (rm deletes files)"), "{toast}");
    assert!(update(&mut m, Msg::WatchTick { watch: 1 }).is_empty());
}

#[test]
fn space_folds_the_host_on_the_current_line_and_capital_z_folds_all() {
    let mut m = model();
    m.set_focus(Pane::Output);
    for (host, text) in [("web01", "a"), ("web02", "b"), ("web01", "c")] {
        update(&mut m, Msg::Exec { run: 1, event: line(host, text) });
    }
    update(&mut m, key(KeyCode::Char(' ')));
    assert!(m.output.is_folded("web01"), "the newest line is web01's");
    assert_eq!(m.output.count(None), 1);
    assert_eq!(m.flash.as_deref(), Some("web01 folded"));
    update(&mut m, key(KeyCode::Char(' ')));
    assert!(m.output.is_folded("web02"), "now the line at the cursor is web02's");
    update(&mut m, key(KeyCode::Char(' ')));
    assert!(!m.output.is_folded("web01"), "with all folded, space unfolds the first");
    update(&mut m, key(KeyCode::Char('Z')));
    assert_eq!(m.output.folded().len(), 2);
    update(&mut m, key(KeyCode::Char('Z')));
    assert!(m.output.folded().is_empty());
}

#[test]
fn r_retries_the_last_question_and_esc_twice_puts_it_back_to_edit() {
    let mut m = model();
    m.model_configured = true;
    update(&mut m, Msg::Typed("/retry".into()));
    assert_eq!(m.flash.as_deref(), Some("no question to send again"));
    let effects = update(&mut m, Msg::Typed("why is web01 slow?".into()));
    assert!(effects.iter().any(|e| matches!(e, Effect::AgentTurn(q) if q == "why is web01 slow?")));
    update(&mut m, Msg::Typed("/retry".into()));
    assert_eq!(m.flash.as_deref(), Some("the agent is still working on the previous message"), "busy: not sent twice");
    update(&mut m, Msg::AgentDone { error: None, summary: "done".into() });
    assert_eq!(m.focus, Pane::Chat);
    let effects = update(&mut m, key(KeyCode::Char('r')));
    assert!(effects.iter().any(|e| matches!(e, Effect::AgentTurn(q) if q == "why is web01 slow?")), "{effects:?}");
    let asked = m.chat.iter().filter(|e| e.role == ChatRole::User).count();
    assert_eq!(asked, 2, "the retried question shows in the chat");
    update(&mut m, Msg::AgentDone { error: None, summary: "done".into() });

    update(&mut m, key(KeyCode::Esc));
    assert!(!m.input.active, "one Esc only says what a second does");
    assert!(m.flash.as_deref().is_some_and(|f| f.starts_with("Esc again")));
    update(&mut m, key(KeyCode::Char('k')));
    update(&mut m, key(KeyCode::Esc));
    assert!(!m.input.active, "another key in between: the Esc count starts again");
    update(&mut m, key(KeyCode::Esc));
    assert!(m.input.active);
    assert_eq!(m.input.text(), "why is web01 slow?");
    update(&mut m, key(KeyCode::Esc));
    update(&mut m, Msg::Typed("/edit".into()));
    assert_eq!(m.input.text(), "why is web01 slow?", "/edit does the same at once");
}

#[test]
fn lines_of_a_folded_host_do_not_move_a_scrolled_up_screen() {
    let mut m = model();
    m.set_focus(Pane::Output);
    for i in 0..40 {
        let host = if i % 2 == 0 { "web01" } else { "web02" };
        update(&mut m, Msg::Exec { run: 1, event: line(host, &format!("line {i}")) });
    }
    m.output.set_folded("web02", true);
    update(&mut m, key(KeyCode::Char('k')));
    update(&mut m, key(KeyCode::Char('k')));
    let scroll = m.output_view.scroll;
    update(&mut m, Msg::Exec { run: 1, event: line("web02", "hidden") });
    assert_eq!(m.output_view.scroll, scroll, "a folded host's line is not on screen");
    update(&mut m, Msg::Exec { run: 1, event: line("web01", "shown") });
    assert_eq!(m.output_view.scroll, scroll + 1, "a shown line keeps the same lines on screen");
}
