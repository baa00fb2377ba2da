//! Fixed models shared by the snapshot tests and the screenshots: a small
//! fleet, a fan-out's output, an agent turn, pipeline runs, metrics and a
//! queued approval.

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
    m.output.push(LineKind::Outcome { host: "web01".into(), ok: true }, "✓ web01 · exit 0 · 0.21s");
    m.output.push(LineKind::Outcome { host: "web02".into(), ok: true }, "✓ web02 · exit 0 · 0.23s");
    m.output.push(
        LineKind::Outcome { host: "db01".into(), ok: false },
        "✗ db01 · cannot reach 10.20.1.21:22: Connection refused · 0.01s",
    );
    m.output.push(LineKind::Header, "$ tail -n1 /var/log/syslog · 1 host: web02");
    m.output.push(
        LineKind::Output { host: "web02".into(), stream: Stream::Stderr },
        "tail: cannot open '/var/log/syslog': Permission denied",
    );
    m.output.push(LineKind::Outcome { host: "web02".into(), ok: false }, "✗ web02 · exit 1 · 0.02s");
    m.inventory.marked.insert("web01".into());
    m.inventory.marked.insert("web02".into());
    m.inventory.cursor = 2;
    m.focus = Pane::Output;
    m
}

/// An agent turn in progress: delegation and command cells, streamed answer.
pub fn fixture_agent_turn() -> Model {
    let mut m = fixture_with_output();
    m.model_configured = true;
    m.chat.clear();
    m.focus = Pane::Chat;
    m.agent_busy = true;
    m.chat.push(ChatEntry::new(ChatRole::User, "why is web02 slow?"));
    m.chat.push(ChatEntry::new(ChatRole::Tool, "main → delegate_diagnostic"));
    m.chat.push(ChatEntry::new(ChatRole::Tool, "⚙ diagnostic@web02 $ uptime → exit 0"));
    m.chat.push(ChatEntry::new(
        ChatRole::Tool,
        "✗ diagnostic@web02 $ systemctl restart php-fpm — `systemctl restart` is not a read-only subcommand",
    ));
    m.chat.push(ChatEntry::new(
        ChatRole::Assistant,
        "## web02 is CPU-bound\n\nLoad is **7.9** on 4 cores; `php-fpm` has hit `pm.max_children`:\n\n- 5 workers, all busy\n- requests queue for ~2 s\n\n```bash\ngrep max_children /etc/php/8.2/fpm/pool.d/www.conf\n```\n",
    ));
    m
}

/// Two change runs: one approved and checked, one rolled back, with a diff.
pub fn fixture_pipelines() -> Model {
    use crate::store::pipelines::{Kind, PipelineRun, PipelineStatus, Stage, StageName as N, StageStatus as S};
    let stage = Stage::ended;
    let diff = "--- a/etc/php/8.2/fpm/pool.d/www.conf\n+++ b/etc/php/8.2/fpm/pool.d/www.conf\n@@ -1,3 +1,3 @@\n [www]\n-pm.max_children = 5\n+pm.max_children = 20\n pm.start_servers = 2\n";
    let run = |id: &str, status: PipelineStatus, target: &str, created: &str, stages: Vec<Stage>| {
        let mut run = PipelineRun::new(Kind::Bash, target, serde_json::Value::Null, "alice");
        (run.id, run.status, run.stages, run.created_at) = (id.into(), status, stages, created.into());
        run
    };
    let mut edit = run(
        "2",
        PipelineStatus::Succeeded,
        "web02",
        "2026-11-22T10:42:07.000Z",
        vec![
            stage(N::Plan, S::Done, "raise php-fpm workers", 0),
            stage(N::Diff, S::Done, "preview of the change", 0),
            stage(N::Summary, S::Done, "write /etc/php/8.2/fpm/pool.d/www.conf (412 bytes) (mutating)", 0),
            stage(N::Approval, S::Done, "approved by alice (console)", 4200),
            stage(N::Apply, S::Done, "exit code 0", 300),
            stage(N::PostCheck, S::Done, "exit code 0", 120),
            stage(N::Rollback, S::Skipped, "not needed", 0),
        ],
    );
    edit.diff = diff.into();
    let restart = run(
        "1",
        PipelineStatus::RolledBack,
        "web01",
        "2026-11-22T10:31:55.000Z",
        vec![
            stage(N::Plan, S::Done, "restart nginx", 0),
            stage(N::Diff, S::Skipped, "", 0),
            stage(N::Summary, S::Done, "systemctl restart nginx (mutating)", 0),
            stage(N::Approval, S::Done, "approved by alice (console)", 2100),
            stage(N::Apply, S::Done, "exit code 0", 900),
            stage(N::PostCheck, S::Failed, "exit code 7", 50),
            stage(N::Rollback, S::Done, "exit code 0", 800),
        ],
    );
    let mut infra = run(
        "3",
        PipelineStatus::Interrupted,
        "/srv/infra",
        "2026-11-22T10:20:40.000Z",
        vec![
            stage(N::Plan, S::Done, "terraform in /srv/infra (4 configuration file(s))", 900),
            stage(N::Diff, S::Done, "1 to add, 1 to change, 0 to destroy", 1400),
            stage(N::Summary, S::Done, "terraform apply -input=false -no-color …/change.tfplan (mutating)", 0),
            stage(N::Approval, S::Done, "approved by alice (console)", 6100),
            stage(N::Apply, S::Interrupted, "merlya stopped during this stage; ", 0),
        ],
    );
    infra.kind = Kind::Terraform;
    infra.summary = "terraform /srv/infra: 1 to add, 1 to change, 0 to destroy".into();
    let mut m = fixture_with_output();
    m.dashboard.pipelines = vec![edit, restart, infra];
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
    for (commands, failures, tokens) in
        [(0, 0, 0), (4, 0, 1200), (12, 1, 5400), (30, 2, 800), (8, 0, 0), (3, 3, 9000), (0, 0, 300), (21, 1, 2500)]
    {
        m.metric_history.commands.push_back(commands);
        m.metric_history.failures.push_back(failures);
        m.metric_history.tokens.push_back(tokens);
    }
    m.set_focus(Pane::Metrics);
    m
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
        queue_approval(&mut m, request.clone());
    }
    m
}

/// Puts an approval request on the model's prompt queue, as the gate would.
fn queue_approval(m: &mut Model, request: crate::approval::ApprovalRequest) {
    let (tx, rx) = oneshot::channel();
    std::mem::forget(rx);
    let prompt = PromptRequest {
        title: crate::i18n::Text::key("prompt.approve_title", &[("summary", &request.summary)]),
        body: request.command.as_str().into(),
        kind: PromptKind::Approval,
        approval: Some(request),
        reply: Some(tx),
    };
    update(m, Msg::Prompt(prompt));
}

/// The fleet with users, elevation and checks filled in (the wide inventory and its details).
pub fn fixture_detailed_inventory() -> Model {
    let mut m = fixture_model();
    let mut hosts = m.hosts.to_vec();
    for h in hosts.iter_mut().skip(1) {
        h.username = Some("deploy".into());
        h.last_check = Some("2026-11-22T10:40:12Z".into());
    }
    hosts[1].elevation = crate::inventory::Elevation::Sudo;
    hosts[3].elevation = crate::inventory::Elevation::SudoPassword;
    hosts[3].jump = Some("bastion".into());
    m.set_hosts(hosts);
    m.inventory.cursor = 3;
    m.inventory.details = true;
    m
}

/// An approval for an edit, with the highlighted diff.
pub fn fixture_with_diff_approval() -> Model {
    use crate::approval::ApprovalRequest;
    use crate::safety::analyze;
    let mut m = fixture_with_output();
    let command = "edit_file /etc/prometheus/prometheus.yml";
    let mut request = ApprovalRequest::new(
        "scrape every 15 s".into(),
        command,
        vec!["web01".into()],
        &analyze("tee /etc/prometheus/prometheus.yml"),
        Vec::new(),
    );
    request.diff = Some(
        "--- a/etc/prometheus/prometheus.yml\n+++ b/etc/prometheus/prometheus.yml\n@@ -1,6 +1,6 @@\n global:\n-  scrape_interval: 60s # default\n+  scrape_interval: 15s\n   evaluation_interval: 30s\n scrape_configs:\n   - job_name: \"node\"\n"
            .into(),
    );
    request.post_check = Some("promtool check config /etc/prometheus/prometheus.yml".into());
    request.rollback = Some("cp /etc/prometheus/prometheus.yml.bak /etc/prometheus/prometheus.yml".into());
    queue_approval(&mut m, request);
    m
}

/// A Terraform plan awaiting approval: the resource summary first (a destroy called out), then the
/// per-resource diff with a sensitive value masked.
pub fn fixture_with_terraform_approval() -> Model {
    use crate::approval::ApprovalRequest;
    use crate::safety::{Analysis, Class};
    let plan = crate::pipeline::terraform_plan::parse(
        r#"{"format_version": "1.2", "resource_changes": [
          {"address": "terraform_data.web", "change": {"actions": ["update"], "before": {"input": "v1", "id": "7f3a"},
            "after": {"input": "v2", "id": "7f3a"}, "after_unknown": {}, "before_sensitive": {}, "after_sensitive": {}}},
          {"address": "terraform_data.token", "change": {"actions": ["create"], "before": null,
            "after": {"input": "hunter2"}, "after_unknown": {"id": true}, "after_sensitive": {"input": true}}},
          {"address": "terraform_data.legacy", "change": {"actions": ["delete"], "before": {"input": "old", "id": "19c2"},
            "after": null}}]}"#,
    )
    .unwrap_or_default();
    let mut m = fixture_with_output();
    let command = "terraform apply -input=false -no-color /root/.merlya/pipelines/20261122-104207-3fa1c/change.tfplan";
    let analysis = Analysis {
        class: Class::Dangerous,
        reasons: vec!["destroys terraform_data.legacy".into(), "applies exactly the saved plan shown here".into()],
        commands: vec![command.into()],
        rule_keys: None,
    };
    let summary = format!("terraform /srv/infra: {} — DESTROYS terraform_data.legacy", plan.line());
    let mut request = ApprovalRequest::new(summary, command, vec!["/srv/infra".into()], &analysis, Vec::new());
    request.diff = Some(plan.render());
    request.post_check = Some("terraform plan -detailed-exitcode (expects no change)".into());
    request.rollback = Some(
        "plan and apply the configuration of change 20261121-093011-a01b2 (shown and approved again before it applies)"
            .into(),
    );
    queue_approval(&mut m, request);
    m
}

/// A change whose summary and command carry escape sequences a host or the
/// model could send: an OSC 52 clipboard write, a screen clear, and a `\r`
/// plus erase-line that would show only "echo harmless" on a terminal.
pub fn fixture_with_hostile_approval() -> Model {
    use crate::approval::ApprovalRequest;
    use crate::safety::analyze;
    let mut m = fixture_with_output();
    let command = "rm -rf /srv/data #\r\x1b[2Kecho harmless \x1b]52;c;cm0gLXJmIC8=\x07";
    let request = ApprovalRequest::new(
        "tidy logs\x1b]52;c;cm0gLXJmIC8=\x07\x1b[2J".into(),
        command,
        vec!["web01".into()],
        &analyze(command),
        Vec::new(),
    );
    queue_approval(&mut m, request);
    m
}

/// A fleet of twelve web servers and a database, with one `uptime` run fed
/// through `update` as the worker would: ten identical answers, one odd load,
/// one host whose key changed, and one still running.
pub fn fixture_fleet_run() -> Model {
    use crate::exec::{ExecEvent, HostFailure, HostResult};
    let mut hosts = vec![Host::localhost()];
    for i in 1..=12 {
        let mut h = Host::new(format!("web{i:02}"), format!("10.20.0.{}", 10 + i));
        h.add_tag("web");
        hosts.push(h);
    }
    let mut m = Model::new(hosts, false, 1000, Theme::dark());
    m.inventory.marked = m.hosts.iter().skip(1).map(|h| h.name.clone()).collect();
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char('!'))));
    m.input.set_text("!uptime -p");
    update(&mut m, Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter)));
    update(&mut m, Msg::RunStarted { run: 1 });
    for i in 1..=12 {
        let host = format!("web{i:02}");
        update(&mut m, Msg::Exec { run: 1, event: ExecEvent::Started { host: host.clone() } });
        let (line, result) = match i {
            7 => (
                "up 2 hours, 3 minutes",
                Some(HostResult { exit_code: Some(0), duration_ms: 180, ..Default::default() }),
            ),
            9 => (
                "",
                Some(HostResult {
                    failure: Some(HostFailure::HostKey),
                    error: Some(
                        "the host key of web09 changed (ED25519 SHA256:9q…); if expected, remove the old key".into(),
                    ),
                    duration_ms: 40,
                    ..Default::default()
                }),
            ),
            12 => ("up 41 days, 3 hours", None),
            _ => (
                "up 41 days, 3 hours",
                Some(HostResult { exit_code: Some(0), duration_ms: 200 + i, ..Default::default() }),
            ),
        };
        if !line.is_empty() {
            let event = ExecEvent::Line { host: host.clone(), stream: crate::exec::Stream::Stdout, line: line.into() };
            update(&mut m, Msg::Exec { run: 1, event });
        }
        if let Some(mut result) = result {
            result.host = host.clone();
            if let (Some(failure), Some(error)) = (result.failure, result.error.clone()) {
                let at = "2026-11-23T09:14:02Z".into();
                update(&mut m, Msg::HostFailed { host: host.clone(), failure, error, at });
            }
            update(&mut m, Msg::Exec { run: 1, event: ExecEvent::Finished(result) });
        }
    }
    m.focus = Pane::Output;
    m
}

/// Two hosts that printed forty numbered lines each, interleaved, one of them long enough to wrap.
pub fn fixture_long_output() -> Model {
    let mut m = fixture_model();
    m.output.push(LineKind::Header, "$ seq 40 · 2 hosts: web01, web02");
    for i in 1..=40 {
        for host in ["web01", "web02"] {
            let text = if i == 20 && host == "web02" {
                format!("{host} line {i:02} {}", "long ".repeat(30))
            } else {
                format!("{host} line {i:02}")
            };
            m.output.push(LineKind::Output { host: host.into(), stream: Stream::Stdout }, text);
        }
    }
    m.focus = Pane::Output;
    m
}

/// A Drift pane with both sources: three resources (no drift, drifted, missing) and host findings.
pub fn fixture_drift() -> Model {
    use crate::baseline::Section;
    use crate::baseline::compare::{Kind, Row};
    use crate::store::resources::{Drift, Lifecycle, Resource};
    let mut m = fixture_model();
    let resource = |name: &str, status: Lifecycle, drift: Drift, detail: &str| Resource {
        id: format!("res-{name}"),
        name: name.into(),
        template: "data-marker:1.0.0".into(),
        provider: "local".into(),
        backend: "terraform".into(),
        answers: serde_json::Value::Null,
        expected: serde_json::Value::Null,
        actual: serde_json::Value::Null,
        previous: serde_json::Value::Null,
        outputs: serde_json::Value::Null,
        tags: serde_json::Value::Null,
        status,
        drift,
        drift_detail: detail.into(),
        last_checked_at: Some("2026-11-26T03:10:00Z".into()),
        tf_serial: Some(3),
        tf_lineage: None,
        workdir: String::new(),
        operation: String::new(),
        observe_only: false,
        accepted: Vec::new(),
        config_digest: None,
        updated_at: "2026-11-26T03:00:00Z".into(),
    };
    m.dashboard.drift.resources = vec![
        resource("cache-marker", Lifecycle::Active, Drift::NoDrift, ""),
        Resource {
            expected: serde_json::json!({"terraform_data.a": {"input": {"message": "primary", "size": 2}}}),
            actual: serde_json::json!({"terraform_data.a": {"input": {"message": "edited by hand", "size": 2}}}),
            ..resource(
                "db-pair",
                Lifecycle::Active,
                Drift::Drifted,
                "terraform_data.a: changed outside Terraform (update)",
            )
        },
        resource("web-marker", Lifecycle::Unknown, Drift::Missing, "terraform_data.marker: missing from the state"),
    ];
    let row = |section, key: &str, kind, expected: Option<&str>, found: Option<&str>| Row {
        section,
        key: key.into(),
        kind,
        expected: expected.map(str::to_string),
        found: found.map(str::to_string),
        hosts: vec!["web07".into()],
        agree: None,
    };
    m.dashboard.drift.hosts = vec![
        (
            "web07".into(),
            "2026-11-26T03:10:00Z".into(),
            row(Section::Packages, "nginx", Kind::Changed, Some("1.22.1-9"), Some("1.24.0-1")),
        ),
        (
            "web07".into(),
            "2026-11-26T03:10:00Z".into(),
            row(
                Section::Files,
                "/etc/nginx/nginx.conf",
                Kind::Changed,
                Some("9a0364b9e99bb480dd25e1f0284c8555"),
                Some("0c2b8a4c1d7e3f6a9b2d4e6f8a1c3e5b"),
            ),
        ),
        (
            "web07".into(),
            "2026-11-26T03:10:00Z".into(),
            row(Section::UnitsEnabled, "debug-shell.service", Kind::Added, None, Some("enabled")),
        ),
    ];
    m.dashboard.drift.checked_hosts = 12;
    m.set_focus(Pane::Drift);
    m.drift_cursor = 1;
    m
}

/// Three unknown host keys waiting (hosts connected in parallel) and an approval behind them.
pub fn fixture_host_keys() -> (Model, Vec<oneshot::Receiver<crate::app::msg::PromptAnswer>>) {
    let mut m = fixture_model();
    let mut answers = Vec::new();
    for (name, port, fp) in [
        ("web01", 42001, "SHA256:7u2hL0Lk3c1lq6zY2m0a5b4QJ0Y2mN8x1R9rK0aFq1E"),
        ("web02", 42002, "SHA256:Qm3y0dW2Vw8s1F4tH6jK9lZ2xC5vB7nM0pL3kJ8hG6f"),
        ("db01", 42003, "SHA256:aB9cD8eF7gH6iJ5kL4mN3oP2qR1sT0uV9wX8yZ7a6bC"),
    ] {
        let (tx, rx) = oneshot::channel();
        answers.push(rx);
        let host = format!("{name} ([127.0.0.1]:{port})");
        let body = crate::i18n::Text::key(
            "prompt.hostkey_body",
            &[("host", host.as_str()), ("type", "ssh-ed25519"), ("fingerprint", fp)],
        );
        let prompt = PromptRequest {
            title: crate::i18n::Text::key("prompt.hostkey_title", &[]),
            body,
            kind: PromptKind::HostKey,
            approval: None,
            reply: Some(tx),
        };
        update(&mut m, Msg::Prompt(prompt));
    }
    (m, answers)
}

/// A watch of `df -h /` on web01 and web02 in its second round: web01's use went from 41% to 47%.
pub fn fixture_watch() -> Model {
    use crate::exec::{ExecEvent, HostResult};
    let mut m = fixture_model();
    m.inventory.marked = ["web01", "web02"].into_iter().map(String::from).collect();
    update(&mut m, Msg::Typed(":watch 5 -- df -h /".into()));
    let rounds = [
        ["/dev/vda1  40G  16G  24G  41% /", "/dev/vda1  40G  30G  10G  75% /"],
        ["/dev/vda1  40G  19G  21G  47% /", "/dev/vda1  40G  30G  10G  75% /"],
    ];
    for lines in rounds {
        update(&mut m, Msg::WatchTick { watch: 1 });
        let run = m.next_run - 1;
        update(&mut m, Msg::RunStarted { run });
        let mut results = Vec::new();
        for (host, line) in ["web01", "web02"].into_iter().zip(lines) {
            for text in ["Filesystem  Size  Used Avail Use% Mounted on", line] {
                let event = ExecEvent::Line { host: host.into(), stream: Stream::Stdout, line: text.into() };
                update(&mut m, Msg::Exec { run, event });
            }
            let result = HostResult { host: host.into(), exit_code: Some(0), duration_ms: 40, ..Default::default() };
            update(&mut m, Msg::Exec { run, event: ExecEvent::Finished(result.clone()) });
            results.push(result);
        }
        update(&mut m, Msg::RunDone { run, results });
    }
    m.flash = None;
    m
}

/// The inventory filling the screen with health columns from a triage (web02's disk critical, its
/// load past the warning), ordered by disk, fullest first; cache01 never read.
pub fn fixture_inventory_health() -> Model {
    use crate::store::host_health::{HealthCheck, HealthLevel, HealthReading};
    let mut m = fixture_detailed_inventory();
    m.inventory.details = false;
    m.inventory.cursor = 0;
    m.zoomed = true;
    let at = "2026-11-26T10:00:00Z";
    let mut readings = Vec::new();
    for (host, load, disk, memory) in [
        ("localhost", 0.12, 41.0, 37.0),
        ("web01", 0.31, 62.0, 48.0),
        ("web02", 1.48, 97.0, 71.0),
        ("db01", 0.72, 88.0, 91.0),
    ] {
        let level = |v: f64, warn: f64, crit: f64| match v {
            v if v >= crit => HealthLevel::Crit,
            v if v >= warn => HealthLevel::Warn,
            _ => HealthLevel::Ok,
        };
        for (check, value, warn, crit) in [
            (HealthCheck::Load, load, 1.0, 2.0),
            (HealthCheck::Disk, disk, 85.0, 95.0),
            (HealthCheck::Memory, memory, 85.0, 95.0),
        ] {
            let reading =
                HealthReading { host: host.into(), check, value, level: level(value, warn, crit), at: at.into() };
            readings.push(reading);
        }
    }
    update(&mut m, Msg::Health(readings));
    crate::app::inventory::set_sort(
        &mut m,
        Some(crate::app::inventory::Sort { column: crate::inventory::columns::Column::Disk, descending: true }),
    );
    m
}

/// The Pipeline pane on a team store: a teammate's change waiting for a second person, one of this
/// operator's own, and a teammate's run in flight with each host's state.
pub fn fixture_team_pipeline() -> Model {
    use crate::app::boards::PendingReview;
    use crate::store::team_runs::{HostRunState, TeamRun};
    let mut m = fixture_pipelines();
    m.operator = "bob@laptop".into();
    let review = |id: i64, who: &str, why: &str, summary: &str| PendingReview {
        id,
        requested_by: who.into(),
        why: why.into(),
        summary: summary.into(),
        expires_at: "2026-11-26T23:10:00.000Z".into(),
    };
    m.dashboard.reviews = vec![
        review(7, "alice@bastion", "@prod", "restart nginx on web01, web02"),
        review(8, "bob@laptop", "terraform", "terraform apply in /srv/infra: 1 to add"),
    ];
    m.dashboard.team_runs = vec![TeamRun {
        session_id: "s-alice".into(),
        who: "alice@bastion".into(),
        command: "systemctl restart nginx".into(),
        started_at: "2026-11-26T22:40:00.000Z".into(),
        hosts: vec![
            ("web01".into(), HostRunState::Ok),
            ("web02".into(), HostRunState::Running),
            ("web03".into(), HostRunState::Failed),
        ],
    }];
    m
}

/// The team store went away: the status bar says so and a command typed meanwhile was not started.
pub fn fixture_store_lost() -> Model {
    let mut m = fixture_model();
    update(&mut m, Msg::StoreLost("the store at postgres://ops@db:5432/merlya cannot be reached".into()));
    update(&mut m, Msg::Typed("!uptime".into()));
    m.toasts.clear();
    m.focus = Pane::Chat;
    m
}
