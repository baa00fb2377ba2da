//! `update` tests for the console's second half: completion, multi-line
//! input, the palette and slash commands, inventory actions and the host
//! form, the diff viewer, tool cells, output selection.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::tests::{ctrl, key, model, type_text};
use super::*;
use crate::app::model::HostForm;
use crate::app::output_buffer::LineKind;
use crate::exec::{ExecEvent, Stream};

fn alt_enter() -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT))
}

#[test]
fn slash_completion_accepts_with_tab_or_enter_and_submits_complete_commands() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char(':')));
    update(&mut m, key(KeyCode::Backspace));
    assert!(!m.input.active, "backspace on an empty line leaves it");
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "/la");
    assert_eq!(popup(&m).iter().map(|s| s.label.as_str()).collect::<Vec<_>>(), ["/language"]);
    update(&mut m, key(KeyCode::Tab));
    assert_eq!(m.input.text(), "/language ");
    type_text(&mut m, "f");
    update(&mut m, key(KeyCode::Enter));
    assert_eq!(m.input.text(), "/language fr", "Enter takes the highlighted suggestion first");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(matches!(&effects[..], [Effect::SaveHistory(_), Effect::SaveSetting { .. }]), "{effects:?}");
    assert_eq!(m.locale.code(), "fr");

    // Down moves in the popup; Esc closes it, a second Esc leaves the input.
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "/h");
    update(&mut m, key(KeyCode::Down));
    assert_eq!(m.input.completion, 1);
    update(&mut m, key(KeyCode::Esc));
    assert!(popup(&m).is_empty() && m.input.active);
    update(&mut m, key(KeyCode::Esc));
    assert!(!m.input.active);
}

#[test]
fn alt_enter_writes_several_lines_and_history_keeps_them() {
    let mut m = model();
    m.model_configured = true;
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('i')));
    type_text(&mut m, "check these:");
    update(&mut m, alt_enter());
    type_text(&mut m, "- disk");
    update(&mut m, ctrl('j'));
    type_text(&mut m, "- load");
    assert_eq!(m.input.editor.lines().len(), 3);
    assert_eq!(m.input_rows(), 3, "the input grows with the text");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(effects.iter().any(|e| matches!(e, Effect::AgentTurn(t) if t == "check these:\n- disk\n- load")));
    update(&mut m, Msg::AgentDone { error: None, summary: "done".into() });
    update(&mut m, key(KeyCode::Char('i')));
    update(&mut m, key(KeyCode::Up));
    assert_eq!(m.input.text(), "check these:\n- disk\n- load", "Up on the first line recalls history");
}

#[test]
fn paste_keeps_newlines_and_opens_the_input() {
    let mut m = model();
    update(&mut m, Msg::Paste("line one\r\nline two".into()));
    assert!(m.input.active);
    assert_eq!(m.input.text(), "line one\nline two");

    let (tx, _rx) = tokio::sync::oneshot::channel();
    let request = crate::app::msg::PromptRequest {
        title: "Key".into(),
        body: "passphrase".into(),
        kind: crate::app::msg::PromptKind::Secret,
        approval: None,
        reply: Some(tx),
    };
    update(&mut m, Msg::Prompt(request));
    update(&mut m, Msg::Paste("pass\nphrase".into()));
    assert_eq!(m.prompts.front().map(|p| p.typed.as_str()), Some("passphrase"), "a paste goes to the prompt");
    assert_eq!(m.input.text(), "line one\nline two", "and not to the input behind it");
}

#[test]
fn palette_words_act_like_keys_and_slash_commands_become_effects() {
    let mut m = model();
    for (line, check) in [
        (":metrics", Pane::Metrics),
        (":split", Pane::Pipeline),
        ("/metrics", Pane::Metrics),
        ("/hosts @web", Pane::Inventory),
    ] {
        update(&mut m, key(KeyCode::Char(':')));
        update(&mut m, ctrl('u'));
        type_text(&mut m, line);
        m.input.completion_closed = true;
        update(&mut m, key(KeyCode::Enter));
        assert_eq!(m.focus, check, "{line}");
    }
    assert!(m.diff_view.side_by_side, ":split toggled the diff layout");
    assert_eq!(m.visible_hosts().len(), 2, "/hosts @web filtered the inventory");
    let mut run = |line: &str| {
        update(&mut m, key(KeyCode::Char(':')));
        update(&mut m, ctrl('u'));
        type_text(&mut m, line);
        m.input.completion_closed = true;
        update(&mut m, key(KeyCode::Enter))
    };
    assert!(matches!(run("/audit 5").last(), Some(Effect::ShowAudit(5))));
    use crate::app::command_line::ConvCommand;
    assert!(matches!(run("/conv c2").last(), Some(Effect::Conversations(ConvCommand::Load(id))) if id == "c2"));
    assert!(matches!(run("/conv").last(), Some(Effect::Conversations(ConvCommand::List))));
    assert!(matches!(
        run("/conv rename c2 disk full on db01").last(),
        Some(Effect::Conversations(ConvCommand::Rename(id, t))) if id == "c2" && t == "disk full on db01"
    ));
    assert!(
        matches!(run("/conv delete c2").last(), Some(Effect::Conversations(ConvCommand::Delete(id))) if id == "c2")
    );
    assert!(matches!(
        run("/conv export c2 /tmp/c2.md").last(),
        Some(Effect::Conversations(ConvCommand::Export(id, p))) if id == "c2" && p == "/tmp/c2.md"
    ));
    use crate::app::command_line::McpCommand;
    assert!(matches!(run("/mcp").last(), Some(Effect::Mcp(McpCommand::List))));
    assert!(matches!(run("/mcp tools fs").last(), Some(Effect::Mcp(McpCommand::Tools(n))) if n == "fs"));
    assert!(matches!(run("/mcp test fs").last(), Some(Effect::Mcp(McpCommand::Test(n))) if n == "fs"));
    use crate::app::command_line::SkillLine;
    assert!(matches!(run("/skill").last(), Some(Effect::Skill(SkillLine::List))));
    assert!(matches!(
        run("/skill service_status nginx since=2h @web").last(),
        Some(Effect::Skill(SkillLine::Run { name, values, targets }))
            if name == "service_status" && values == &["nginx", "since=2h"] && targets == "@web"
    ));
    assert!(matches!(run("/secret set db_pw").last(), Some(Effect::Secret(_))));
    assert!(matches!(run("/new").last(), Some(Effect::NewConversation)));
    run("/exit");
    assert!(m.chat.iter().any(|e| e.text.contains("New conversation")));
    assert!(m.should_quit);
}

#[test]
fn the_host_form_validates_then_saves() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('n')));
    assert_eq!(m.form, Some(HostForm::new(None)));
    type_text(&mut m, "web 03");
    update(&mut m, key(KeyCode::Tab));
    type_text(&mut m, "10.0.0.9");
    update(&mut m, key(KeyCode::Enter));
    let error = m.form.as_ref().and_then(|f| f.error.as_ref()).map(|e| e.english()).unwrap_or_default();
    assert!(error.starts_with("name:"), "{error}");
    update(&mut m, key(KeyCode::BackTab));
    update(&mut m, ctrl('u'));
    type_text(&mut m, "web01");
    update(&mut m, key(KeyCode::Enter));
    let error = m.form.as_ref().and_then(|f| f.error.as_ref()).map(|e| e.english()).unwrap_or_default();
    assert!(error.contains("already exists"), "{error}");
    update(&mut m, ctrl('u'));
    type_text(&mut m, "web03");
    for _ in 0..2 {
        update(&mut m, key(KeyCode::Down));
    }
    update(&mut m, ctrl('u'));
    type_text(&mut m, "2222");
    update(&mut m, key(KeyCode::Down));
    update(&mut m, key(KeyCode::Down));
    type_text(&mut m, "web, canary");
    let effects = update(&mut m, key(KeyCode::Enter));
    let Some(Effect::SaveHost { original: None, host }) = effects.first() else { panic!("{effects:?}") };
    assert_eq!((host.name.as_str(), host.hostname.as_str(), host.port), ("web03", "10.0.0.9", 2222));
    assert_eq!(host.tags, ["canary", "web"]);
    assert!(m.form.is_none());

    // Editing keeps the original name; localhost cannot be edited.
    update(&mut m, key(KeyCode::Char('e')));
    assert!(m.form.is_none() && m.flash.as_deref().is_some_and(|f| f.contains("built in")));
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char('e')));
    update(&mut m, key(KeyCode::Tab));
    update(&mut m, ctrl('u'));
    type_text(&mut m, "web01.example.com");
    let effects = update(&mut m, key(KeyCode::Enter));
    assert!(
        matches!(effects.first(), Some(Effect::SaveHost { original: Some(o), host }) if o == "web01" && host.hostname == "web01.example.com")
    );
}

#[test]
fn delete_asks_first_and_check_reaches_the_selection() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char(' ')));
    update(&mut m, key(KeyCode::Char('j')));
    update(&mut m, key(KeyCode::Char(' ')));
    let effects = update(&mut m, key(KeyCode::Char('c')));
    let Some(Effect::CheckHosts(hosts)) = effects.first() else { panic!("{effects:?}") };
    assert_eq!(hosts.iter().map(|h| h.name.as_str()).collect::<Vec<_>>(), ["web01", "web02"]);

    assert!(update(&mut m, key(KeyCode::Char('d'))).is_empty(), "nothing is deleted before the answer");
    assert!(m.prompts.front().is_some_and(|p| p.request.body.english().contains("web01, web02")));
    assert!(update(&mut m, key(KeyCode::Char('n'))).is_empty(), "no means nothing happens");
    update(&mut m, key(KeyCode::Char('d')));
    let effects = update(&mut m, key(KeyCode::Char('y')));
    assert!(matches!(&effects[..], [Effect::DeleteHosts(names)] if names == &["web01", "web02"]));

    update(
        &mut m,
        Msg::HostChecked {
            host: "db01".into(),
            reachable: false,
            at: "2026-11-22T08:00:00Z".into(),
            error: Some((crate::exec::HostFailure::Unreachable, "cannot reach".into())),
        },
    );
    let db = m.hosts.iter().find(|h| h.name == "db01").unwrap();
    assert_eq!((m.reachable(db), m.last_check(db)), (Some(false), Some("2026-11-22T08:00:00Z")));
    assert!(m.toasts.back().is_some_and(|t| t.text.contains("db01 is unreachable")));
    assert_eq!(m.host_errors["db01"].failure, crate::exec::HostFailure::Unreachable, "the inventory shows why");
}

#[test]
fn tags_picker_filters_and_details_toggle() {
    let mut m = model();
    update(&mut m, key(KeyCode::Char('t')));
    assert_eq!(m.inventory.tag_picker, Some(0));
    update(&mut m, key(KeyCode::Enter));
    assert_eq!((m.inventory.filter.as_str(), m.visible_hosts().len()), ("@web", 2));
    update(&mut m, key(KeyCode::Enter));
    assert!(m.inventory.details);
    update(&mut m, key(KeyCode::Esc));
    assert!(!m.inventory.details && m.inventory.filter.is_empty());
}

fn with_diff_run(m: &mut Model) {
    use crate::store::pipelines::{Kind, PipelineRun, PipelineStatus};
    let diff = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n@@ -20,2 +20,2 @@\n x\n-y\n+z\n";
    let mut run = PipelineRun::new(Kind::Bash, "web01", serde_json::Value::Null, "alice");
    (run.id, run.status, run.diff) = ("1".into(), PipelineStatus::Succeeded, diff.into());
    update(m, Msg::Dashboard(Box::new(crate::app::model::Dashboard { pipelines: vec![run], ..Default::default() })));
}

#[test]
fn the_diff_viewer_jumps_between_hunks_and_keeps_its_place_when_split() {
    let mut m = model();
    with_diff_run(&mut m);
    update(&mut m, key(KeyCode::Char('4')));
    update(&mut m, key(KeyCode::Char(']')));
    assert_eq!(m.diff_view.scroll, 2, "first hunk");
    update(&mut m, key(KeyCode::Char(']')));
    assert_eq!(m.diff_view.scroll, 6, "second hunk");
    update(&mut m, key(KeyCode::Char(']')));
    assert!(m.flash.as_deref().is_some_and(|f| f.contains("no more hunks")));
    update(&mut m, key(KeyCode::Char('s')));
    assert!(m.diff_view.side_by_side);
    assert_eq!(m.diff_view.scroll, 5, "still on the second hunk, at its side-by-side row");
    update(&mut m, key(KeyCode::Char('[')));
    assert_eq!(m.diff_view.scroll, 2);
    update(&mut m, key(KeyCode::PageDown));
    assert_eq!(m.diff_view.scroll, 7, "scrolling stops at the last row");
}

#[test]
fn tool_cells_carry_their_output_and_expand() {
    let mut m = model();
    let exec = |event| Msg::Agent(crate::agent::AgentEvent::Exec(event));
    update(&mut m, exec(ExecEvent::Started { host: "web01".into() }));
    update(&mut m, exec(ExecEvent::Line { host: "web01".into(), stream: Stream::Stdout, line: "/dev/sda 92%".into() }));
    update(
        &mut m,
        Msg::Agent(crate::agent::AgentEvent::Command(crate::agent::CommandRecord {
            specialist: "diagnostic@web01".into(),
            host: "web01".into(),
            command: "df -h /".into(),
            exit_code: Some(0),
            refused: None,
            approved_by: None,
        })),
    );
    let cell = m.chat.last().unwrap();
    assert_eq!(
        (cell.text.as_str(), cell.detail.as_slice()),
        ("⚙ diagnostic@web01 $ df -h / → exit 0", &["/dev/sda 92%".to_string()][..])
    );
    update(&mut m, key(KeyCode::Char('3')));
    update(&mut m, key(KeyCode::Char('k')));
    assert_eq!(m.chat_view.selected, Some(m.chat.len() - 1));
    update(&mut m, key(KeyCode::Char(' ')));
    assert!(m.chat.last().unwrap().expanded);
}

#[test]
fn v_selects_lines_and_y_copies_exactly_them() {
    let mut m = model();
    m.size = (100, 30);
    for i in 0..10 {
        m.output.push(LineKind::Output { host: "h".into(), stream: Stream::Stdout }, format!("line {i}"));
    }
    update(&mut m, key(KeyCode::Char('2')));
    update(&mut m, key(KeyCode::Char('k')));
    update(&mut m, key(KeyCode::Char('v')));
    update(&mut m, key(KeyCode::Char('k')));
    update(&mut m, key(KeyCode::Char('k')));
    let effects = update(&mut m, key(KeyCode::Char('y')));
    assert!(matches!(&effects[..], [Effect::Copy(text)] if text == "line 6\nline 7\nline 8"), "{effects:?}");
    assert_eq!(m.output_view.anchor, None, "copying ends the selection");
}

#[test]
fn a_loaded_conversation_replaces_the_chat() {
    let mut m = model();
    update(&mut m, Msg::ConversationLoaded(vec![ChatEntry::new(ChatRole::User, "earlier question")]));
    assert_eq!(m.chat.len(), 1);
    assert_eq!(m.focus, Pane::Chat);
}

#[test]
fn streamed_markdown_is_rendered_once_per_delta_not_per_frame() {
    let mut m = model();
    let delta = |t: &str| Msg::Agent(crate::agent::AgentEvent::Delta { agent: "main".into(), text: t.into() });
    update(&mut m, delta("**Disk** is "));
    update(&mut m, delta("fine."));
    let entry = m.chat.last().unwrap();
    let first = entry.markdown_lines().and_then(|mut l| l.next().cloned()).expect("rendered as it streams");
    let text: String = first.spans.iter().map(|s| s.content.as_ref()).collect();
    assert_eq!(text, "Disk is fine.", "the whole reply so far, Markdown applied");
    assert!(entry.streamed.is_some() && entry.rendered.is_none(), "streaming: rendered block by block");
    update(&mut m, Msg::AgentDone { error: None, summary: "done".into() });
    let entry = m.chat.iter().rev().find(|e| e.role == ChatRole::Assistant).unwrap();
    assert!(entry.streamed.is_none() && entry.rendered.is_some(), "finished: rendered whole once");
}

#[test]
fn escape_sequences_from_hosts_and_the_model_are_stored_visible() {
    let mut m = model();
    let line = "\x1b]0;pwned\x07ok\r\x1b[2Jfake".to_string();
    update(&mut m, Msg::Exec { run: 1, event: ExecEvent::Line { host: "web01".into(), stream: Stream::Stdout, line } });
    let texts: Vec<&str> = m.output.window(10, 0, None).into_iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts, ["^[]0;pwned^Gok^M^[[2Jfake"], "the output pane");
    let delta = |t: &str| Msg::Agent(crate::agent::AgentEvent::Delta { agent: "main".into(), text: t.into() });
    update(&mut m, delta("copy \x1b]52;c;cm0="));
    update(&mut m, delta("\x07 done\nnext line"));
    assert_eq!(m.chat.last().map(|e| e.text.as_str()), Some("copy ^[]52;c;cm0=^G done\nnext line"), "chat");
    m.toast(crate::app::model::ToastLevel::Error, "web01: \x1b[31mred\x1b[0m");
    assert_eq!(m.toasts.back().map(|t| t.text.as_str()), Some("web01: ^[[31mred^[[0m"), "toasts");
}

#[test]
fn a_pipeline_record_from_a_runner_shows_at_once_and_ends_with_a_toast() {
    use crate::store::pipelines::{Kind, PipelineRun, PipelineStatus};
    let mut m = model();
    let mut run = PipelineRun::new(Kind::Terraform, "/srv/infra", serde_json::Value::Null, "alice");
    run.status = PipelineStatus::Applying;
    update(&mut m, Msg::Pipeline(Box::new(run.clone())));
    assert_eq!(m.dashboard.pipelines.len(), 1);
    assert_eq!(m.dashboard.pipelines[0].status, PipelineStatus::Applying);
    assert!(m.toasts.is_empty(), "nothing to say while it runs");
    run.status = PipelineStatus::Succeeded;
    update(&mut m, Msg::Pipeline(Box::new(run)));
    assert_eq!(m.dashboard.pipelines.len(), 1, "the same run is replaced, not added");
    assert_eq!(m.dashboard.pipelines[0].status, PipelineStatus::Succeeded);
    assert!(m.toasts.iter().any(|t| t.text.contains("/srv/infra") && t.text.contains("succeeded")), "{:?}", m.toasts);
}

#[test]
fn each_dashboard_after_the_first_adds_a_sample_of_what_changed() {
    let mut m = model();
    let dashboard = |done: u64, failed: u64| {
        let mut d = crate::app::model::Dashboard::default();
        d.stats.succeeded = done;
        d.stats.failed = failed;
        Box::new(d)
    };
    update(&mut m, Msg::Dashboard(dashboard(100, 5)));
    assert!(m.metric_history.commands.is_empty(), "the first dashboard is the baseline");
    update(&mut m, Msg::Dashboard(dashboard(110, 7)));
    update(&mut m, Msg::Dashboard(dashboard(110, 7)));
    assert_eq!(m.metric_history.commands, [12, 0]);
    assert_eq!(m.metric_history.failures, [2, 0]);
    for _ in 0..200 {
        update(&mut m, Msg::Dashboard(dashboard(110, 7)));
    }
    assert_eq!(m.metric_history.commands.len(), crate::app::model::MetricHistory::LEN);
}

/// The Drift pane: `c` asks for one check at a time; its end is a toast and a reload; the interval's
/// tick starts a check only when none runs.
#[test]
fn drift_checks_one_at_a_time_and_their_end_is_a_toast_and_a_reload() {
    use crate::app::model::{Pane, ToastLevel};
    use crate::app::msg::Effect;
    let mut m = super::tests::model();
    m.set_focus(Pane::Drift);
    let effects = update(&mut m, super::tests::key(crossterm::event::KeyCode::Char('c')));
    assert!(matches!(effects.as_slice(), [Effect::CheckDrift]), "{effects:?}");
    assert!(m.drift_checking);
    assert!(update(&mut m, super::tests::key(crossterm::event::KeyCode::Char('c'))).is_empty(), "one check at a time");
    assert!(update(&mut m, Msg::DriftTick).is_empty(), "the interval waits for the running check");
    let effects =
        update(&mut m, Msg::DriftChecked { resources: 2, findings: 3, failed: vec!["db01: not checked".into()] });
    assert!(matches!(effects.as_slice(), [Effect::Refresh]), "{effects:?}");
    assert!(!m.drift_checking);
    let toasts: Vec<(ToastLevel, String)> = m.toasts.iter().map(|t| (t.level, t.text.clone())).collect();
    assert!(toasts.iter().any(|(l, t)| *l == ToastLevel::Error && t.contains('2') && t.contains('3')), "{toasts:?}");
    assert!(toasts.iter().any(|(_, t)| t.contains("db01")), "{toasts:?}");
    assert!(matches!(update(&mut m, Msg::DriftTick).as_slice(), [Effect::CheckDrift]));
    // Moving through the rows stays within them.
    m.drift_checking = false;
    update(&mut m, super::tests::key(crossterm::event::KeyCode::Char('j')));
    assert_eq!(m.drift_cursor, 0, "no rows: the cursor stays");
}

/// The Drift pane's `a` and `i`: a resource row is accepted through its change (asked in the modal),
/// a host row accepted or one finding ignored (asked too); `i` on a resource says what does that.
#[test]
fn drift_rows_are_accepted_or_ignored_by_what_they_are() {
    use crate::app::model::Pane;
    use crate::app::msg::Effect;
    use crate::baseline::decide::HostDecision;
    use crossterm::event::KeyCode;
    let mut m = crate::app::view::fixtures::fixture_drift();
    m.set_focus(Pane::Drift);
    m.drift_cursor = 1;
    let effects = update(&mut m, super::tests::key(KeyCode::Char('a')));
    assert!(matches!(effects.as_slice(), [Effect::AcceptResource(name)] if name == "db-pair"), "{effects:?}");
    assert!(update(&mut m, super::tests::key(KeyCode::Char('i'))).is_empty());
    assert!(
        m.toasts.iter().any(|t| t.text.contains("a (")),
        "{:?}",
        m.toasts.iter().map(|t| &t.text).collect::<Vec<_>>()
    );
    // The first host finding.
    m.drift_cursor = m.dashboard.drift.resources.len();
    let (host, _, row) = m.dashboard.drift.hosts[0].clone();
    let effects = update(&mut m, super::tests::key(KeyCode::Char('a')));
    assert!(
        matches!(effects.as_slice(), [Effect::DecideHost(HostDecision::Accept { host: h })] if *h == host),
        "{effects:?}"
    );
    let effects = update(&mut m, super::tests::key(KeyCode::Char('i')));
    let [Effect::DecideHost(HostDecision::Ignore(rule))] = effects.as_slice() else { panic!("{effects:?}") };
    assert_eq!((rule.key.as_str(), rule.hosts.as_deref()), (row.key.as_str(), Some(host.as_str())));
    // A change made from the pane reloads it.
    assert!(matches!(update(&mut m, Msg::DriftChanged).as_slice(), [Effect::Refresh]));
}

/// Enter opens the selected row's diff over the whole Drift pane (scrolled, side by side with `s`);
/// a row without a difference says so; moving to another row starts its diff at the top.
#[test]
fn enter_opens_the_selected_rows_diff_and_a_row_without_one_says_so() {
    use crate::app::model::Pane;
    use crossterm::event::KeyCode;
    let mut m = crate::app::view::fixtures::fixture_drift();
    m.set_focus(Pane::Drift);
    // The first resource has no drift: nothing to open.
    m.drift_cursor = 0;
    update(&mut m, super::tests::key(KeyCode::Enter));
    assert!(!m.drift_diff_open);
    assert!(m.flash.is_some());
    m.drift_cursor = 1;
    update(&mut m, super::tests::key(KeyCode::Enter));
    assert!(m.drift_diff_open);
    update(&mut m, super::tests::key(KeyCode::Char('J')));
    assert!(m.diff_view.scroll > 0);
    update(&mut m, super::tests::key(KeyCode::Char('s')));
    assert!(m.diff_view.side_by_side);
    update(&mut m, super::tests::key(KeyCode::Char('k')));
    assert_eq!((m.drift_cursor, m.diff_view.scroll), (0, 0));
    update(&mut m, super::tests::key(KeyCode::Enter));
    assert!(!m.drift_diff_open, "a row without a difference closes it");
}

/// The chat follows the bottom unless the person scrolled up or sits on a tool cell; what arrives
/// then is counted ("↓ N new") until they go back down; a new question always goes back down.
#[test]
fn the_chat_follows_the_bottom_unless_the_person_looks_elsewhere() {
    use crate::agent::AgentEvent;
    use crate::app::model::{ChatEntry, ChatRole, Pane};
    use crossterm::event::KeyCode;
    let mut m = super::tests::model();
    m.set_focus(Pane::Chat);
    m.push_chat(ChatEntry::new(ChatRole::Tool, "⚙ diagnostic@web01 $ uptime → exit 0"));
    assert_eq!(m.chat_view.unseen, 0, "following: nothing is unseen");
    // On a tool cell, what arrives is counted.
    update(&mut m, super::tests::key(KeyCode::Up));
    assert_eq!(m.chat_view.selected, Some(m.chat.len() - 1));
    let delta = |text: &str| Msg::Agent(AgentEvent::Delta { agent: "main".into(), text: text.into() });
    update(&mut m, delta("the disk is full"));
    update(&mut m, delta(" on /var"));
    assert_eq!(m.chat_view.unseen, 1, "one new entry, however many chunks");
    // G goes back down and forgets it.
    update(&mut m, super::tests::key(KeyCode::Char('G')));
    assert!(m.chat_view.following());
    assert_eq!(m.chat_view.unseen, 0);
    // Scrolled up, then a new question: back to the bottom, selection dropped.
    update(&mut m, super::tests::key(KeyCode::Up));
    update(&mut m, super::tests::key(KeyCode::PageUp));
    assert!(!m.chat_view.following());
    update(&mut m, Msg::Typed("and now?".into()));
    assert!(m.chat_view.following(), "{:?}", m.chat_view);
    assert_eq!(m.chat_view.unseen, 0);
    // `/` in the chat starts a chat command at once.
    update(&mut m, super::tests::key(KeyCode::Char('/')));
    assert_eq!(m.input.text(), "/");
}

/// `/` in the Drift pane filters its rows by words (Enter keeps the filter, Esc clears it); the
/// actions then act on the rows shown.
#[test]
fn the_drift_filter_keeps_rows_holding_every_word() {
    use crate::app::model::Pane;
    use crate::app::msg::Effect;
    use crossterm::event::KeyCode;
    let mut m = crate::app::view::fixtures::fixture_drift();
    m.set_focus(Pane::Drift);
    let all = m.drift_board().len();
    update(&mut m, super::tests::key(KeyCode::Char('/')));
    assert!(m.drift_filtering);
    for c in "web07 NGINX".chars() {
        update(&mut m, super::tests::key(KeyCode::Char(c)));
    }
    update(&mut m, super::tests::key(KeyCode::Enter));
    assert!(!m.drift_filtering);
    let shown = m.drift_board().into_owned();
    assert!(shown.resources.is_empty() && shown.hosts.len() == 2, "{shown:?}");
    assert!(m.drift_cursor < shown.len());
    // `a` acts on the row shown under the cursor.
    m.drift_cursor = 0;
    let effects = update(&mut m, super::tests::key(KeyCode::Char('a')));
    assert!(matches!(effects.as_slice(), [Effect::DecideHost(_)]), "{effects:?}");
    update(&mut m, super::tests::key(KeyCode::Char('/')));
    update(&mut m, super::tests::key(KeyCode::Esc));
    assert_eq!(m.drift_board().len(), all);
}

/// A run that starts waiting for approval is the one the Pipeline pane shows (the modal asks about it).
#[test]
fn the_pipeline_pane_selects_the_run_awaiting_approval() {
    use crate::pipeline::PipelineStatus;
    let mut m = crate::app::view::fixtures::fixture_pipelines();
    assert!(m.dashboard.pipelines.len() >= 2);
    let mut waiting = m.dashboard.pipelines[1].clone();
    m.pipeline_cursor = 0;
    waiting.status = PipelineStatus::AwaitingApproval;
    let id = waiting.id.clone();
    update(&mut m, Msg::Pipeline(Box::new(waiting)));
    assert_eq!(m.dashboard.pipelines[m.pipeline_cursor].id, id);
}
