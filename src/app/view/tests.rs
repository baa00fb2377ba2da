//! Snapshots of every pane and overlay, rendered with ratatui's TestBackend
//! from fixed fixtures (also used to produce screenshots/).

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::oneshot;

use crate::app::model::{ChatEntry, ChatRole, Model, Pane};
use crate::app::msg::{Msg, PromptKind, PromptRequest};
use crate::app::output_buffer::LineKind;
use crate::app::theme::Theme;
use crate::app::update::update;
use crate::exec::Stream;
use crate::inventory::Host;

/// The fixture fleet shown in snapshots and screenshots.
pub fn fixture_model() -> Model {
    let mut hosts = vec![Host::localhost()];
    for (name, addr, tags, reachable) in [
        ("web01", "10.20.0.11", "web,prod", Some(true)),
        ("web02", "10.20.0.12", "web,prod", Some(true)),
        ("db01", "10.20.1.21", "db,prod", Some(false)),
        ("cache01", "10.20.2.31", "cache", None),
    ] {
        let mut h = Host::new(name, addr);
        for t in tags.split(',') {
            h.add_tag(t);
        }
        h.reachable = reachable;
        hosts.push(h);
    }
    hosts[0].reachable = Some(true);
    Model::new(hosts, false, 1000, Theme::dark())
}

/// The fixture after a fan-out of `uptime`.
pub fn fixture_with_output() -> Model {
    let mut m = fixture_model();
    m.output.push(LineKind::Header, "$ uptime · 3 hosts: web01, web02, db01");
    let lines = [
        ("web01", Stream::Stdout, " 10:42:01 up 41 days,  3:12,  0 users,  load average: 0.31, 0.28, 0.25"),
        ("web02", Stream::Stdout, " 10:42:01 up 41 days,  3:10,  0 users,  load average: 7.92, 6.40, 5.11"),
    ];
    for (host, stream, text) in lines {
        m.output.push(LineKind::Output { host: host.into(), stream }, text);
    }
    m.output.push(LineKind::Outcome { ok: true }, "✓ web01 · exit 0 · 0.21s");
    m.output.push(LineKind::Outcome { ok: true }, "✓ web02 · exit 0 · 0.23s");
    m.output.push(LineKind::Outcome { ok: false }, "✗ db01 · cannot reach 10.20.1.21:22: Connection refused · 0.01s");
    m.output.push(LineKind::Header, "$ tail -n1 /var/log/syslog · 1 host: web02");
    m.output.push(
        LineKind::Output { host: "web02".into(), stream: Stream::Stderr },
        "tail: cannot open '/var/log/syslog': Permission denied",
    );
    m.output.push(LineKind::Outcome { ok: false }, "✗ web02 · exit 1 · 0.02s");
    m.inventory.marked.insert("web01".into());
    m.inventory.marked.insert("web02".into());
    m.inventory.cursor = 2;
    m.focus = Pane::Output;
    m
}

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
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn command_line_being_typed() {
    let mut m = fixture_with_output();
    m.input.active = true;
    m.input.text = ":exec @prod -- df -h /".into();
    m.input.cursor = m.input.text.chars().count();
    insta::assert_snapshot!(render(&m, 110, 24).backend());
}

#[test]
fn chat_conversation() {
    let mut m = fixture_model();
    m.focus = Pane::Chat;
    m.chat.push(ChatEntry { role: ChatRole::User, text: "why is web02 loaded?".into() });
    m.chat.push(ChatEntry { role: ChatRole::System, text: "No model is configured, so nobody can answer yet.".into() });
    insta::assert_snapshot!(render(&m, 110, 30).backend());
}

/// An agent turn in progress: delegation and command cells, streamed answer.
pub fn fixture_agent_turn() -> Model {
    let mut m = fixture_with_output();
    m.model_configured = true;
    m.chat.clear();
    m.focus = Pane::Chat;
    m.agent_busy = true;
    m.chat.push(ChatEntry { role: ChatRole::User, text: "why is web02 slow?".into() });
    m.chat.push(ChatEntry { role: ChatRole::Tool, text: "main → delegate_diagnostic".into() });
    m.chat.push(ChatEntry { role: ChatRole::Tool, text: "⚙ diagnostic@web02 $ uptime → exit 0".into() });
    m.chat.push(ChatEntry {
        role: ChatRole::Tool,
        text: "✗ diagnostic@web02 $ systemctl restart php-fpm — `systemctl restart` is not a read-only subcommand"
            .into(),
    });
    m.chat.push(ChatEntry {
        role: ChatRole::Assistant,
        text: "web02 has a load average of 7.9 on 4 cores; php-fpm".into(),
    });
    m
}

#[test]
fn chat_with_an_agent_turn_streaming() {
    insta::assert_snapshot!(render(&fixture_agent_turn(), 110, 30).backend());
}

/// Two change runs: one approved and checked, one rolled back, with a diff.
pub fn fixture_pipelines() -> Model {
    use crate::store::pipelines::{PipelineRun, Stage};
    let stage = |name: &str, status: &str, detail: &str, ms: u64| Stage {
        name: name.into(),
        status: status.into(),
        detail: detail.into(),
        duration_ms: ms,
    };
    let diff = "--- a/etc/php/8.2/fpm/pool.d/www.conf\n+++ b/etc/php/8.2/fpm/pool.d/www.conf\n@@ -1,3 +1,3 @@\n [www]\n-pm.max_children = 5\n+pm.max_children = 20\n pm.start_servers = 2\n";
    let edit = PipelineRun {
        id: "2".into(),
        kind: "bash".into(),
        status: "succeeded".into(),
        targets: "web02".into(),
        stages: vec![
            stage("Plan", "done", "raise php-fpm workers", 0),
            stage("Diff", "done", diff, 0),
            stage("Summary", "done", "write /etc/php/8.2/fpm/pool.d/www.conf (412 bytes) (mutating)", 0),
            stage("HITL", "done", "approved by alice (console)", 4200),
            stage("Apply", "done", "exit code 0", 300),
            stage("Post-check", "done", "exit code 0", 120),
            stage("Rollback", "skipped", "not needed", 0),
        ],
        created_at: "2026-11-22T10:42:07.000Z".into(),
        updated_at: String::new(),
    };
    let restart = PipelineRun {
        id: "1".into(),
        kind: "bash".into(),
        status: "rolled_back".into(),
        targets: "web01".into(),
        stages: vec![
            stage("Plan", "done", "restart nginx", 0),
            stage("Diff", "skipped", "", 0),
            stage("Summary", "done", "systemctl restart nginx (mutating)", 0),
            stage("HITL", "done", "approved by alice (console)", 2100),
            stage("Apply", "done", "exit code 0", 900),
            stage("Post-check", "failed", "exit code 7", 50),
            stage("Rollback", "done", "exit code 0", 800),
        ],
        created_at: "2026-11-22T10:31:55.000Z".into(),
        updated_at: String::new(),
    };
    let mut m = fixture_with_output();
    m.dashboard.pipelines = vec![edit, restart];
    m.set_focus(Pane::Pipeline);
    m
}

/// Metrics after a day of use.
pub fn fixture_metrics() -> Model {
    use crate::llm::Usage;
    use crate::llm::client::Spend;
    let mut m = fixture_pipelines();
    m.dashboard.stats = crate::store::metrics::CommandStats {
        succeeded: 182,
        failed: 9,
        unreachable: 3,
        latency: vec![40, 71, 52, 18, 7, 3, 1],
        pipeline_runs: 2,
        pipelines_failed: 1,
    };
    m.dashboard.spend = vec![
        (
            "gpt-4o".into(),
            Spend {
                calls: 41,
                usage: Usage { input_tokens: 96_210, output_tokens: 7_904, approximate: false },
                cost_usd: 0.3195,
            },
        ),
        (
            "gpt-4o-mini".into(),
            Spend {
                calls: 6,
                usage: Usage { input_tokens: 3_120, output_tokens: 88, approximate: true },
                cost_usd: 0.0005,
            },
        ),
    ];
    m.set_focus(Pane::Metrics);
    m
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

/// A change waiting for approval, with a second one queued.
pub fn fixture_with_approval() -> Model {
    use crate::approval::ApprovalRequest;
    use crate::safety::{analyze, leaks::find_leaks};
    let mut m = fixture_with_output();
    let command = "echo hunter2 | sudo -S systemctl restart nginx";
    let request = ApprovalRequest::new(
        "restart nginx on the web tier".into(),
        command,
        vec!["web01".into(), "web02".into()],
        &analyze(command),
        find_leaks(command, "web01"),
    );
    for _ in 0..2 {
        let (tx, rx) = oneshot::channel();
        std::mem::forget(rx);
        update(
            &mut m,
            Msg::Prompt(PromptRequest {
                title: format!("Approve: {}", request.summary),
                body: command.into(),
                kind: PromptKind::Approval,
                approval: Some(request.clone()),
                reply: Some(tx),
            }),
        );
    }
    m
}

#[test]
fn approval_modal_with_a_queued_request() {
    insta::assert_snapshot!(render(&fixture_with_approval(), 110, 34).backend());
}

#[test]
fn small_terminal_still_draws() {
    insta::assert_snapshot!(render(&fixture_with_output(), 60, 16).backend());
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
    chat.chat.push(ChatEntry { role: ChatRole::User, text: "why is web02 loaded?".into() });
    let shots: [(&str, Model); 10] = [
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
    ];
    for (name, model) in shots {
        let terminal = render(&model, 120, 34);
        std::fs::write(dir.join(format!("{name}.svg")), super::svg::buffer_to_svg(terminal.backend().buffer()))
            .unwrap();
    }
}
