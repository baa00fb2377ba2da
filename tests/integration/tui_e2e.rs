//! Drives the real `merlya` binary in tmux against real sshd daemons: run
//! commands from the console, answer an unknown-host-key prompt, quit, and
//! find every execution in the audit log.

use crate::support;

use std::process::Command;

use support::tmux::Tmux;
use support::{Sshd, SshdOptions, TestEnv, TestKey, text};

#[test]
fn console_runs_commands_answers_a_host_key_prompt_and_audits() {
    let key = TestKey::generate("");
    let trusted = Sshd::start(SshdOptions::allowing(&key));
    let untrusted = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&trusted);
    env.add_host("web01", &trusted, &["--tag", "web"]);
    env.add_host("web02", &untrusted, &["--tag", "web"]);

    // An MCP server that cannot start: the start-up check names it.
    env.ok(&["mcp", "add", "broken", "--command", "/nonexistent/mcp-server"]);

    let tmux = Tmux::start("main", &env, 120, 34);
    let screen = tmux.wait_for("Inventory · 3");
    assert!(screen.contains("No model is configured"), "the no-model banner is shown:\n{screen}");
    // The start-up check names what is not ready (this test has no ssh-agent) and where the fixes are.
    let screen = tmux.wait_for("Start-up check:");
    assert!(screen.contains("WARN ssh-agent"), "{screen}");
    let screen = tmux.wait_for("mcp:broken");
    assert!(!screen.contains("database"), "the database is fine, so it is not flagged: {screen}");

    // !CMD on the host under the cursor (localhost).
    tmux.command("!echo hello-from-the-console");
    tmux.wait_for("│ hello-from-the-console");
    tmux.wait_for("✓ localhost · exit 0");

    // :exec on a trusted SSH host.
    tmux.command(":exec web01 -- whoami");
    tmux.wait_for("│ merlyatest");

    // An unknown host key opens the prompt; answering y records it and the command runs.
    tmux.command(":exec web02 -- echo second-host");
    let screen = tmux.wait_for("Unknown host key");
    assert!(screen.contains("SHA256:") && screen.contains(&format!("[127.0.0.1]:{}", untrusted.port)), "{screen}");
    assert!(screen.contains(&format!("web02 ([127.0.0.1]:{})", untrusted.port)), "named by the inventory: {screen}");
    tmux.keys(&["y"]);
    tmux.wait_for("│ second-host");
    let recorded = std::fs::read_to_string(env.merlya_home().join("known_hosts")).unwrap();
    assert!(recorded.contains(&untrusted.known_hosts_line()), "{recorded}");

    // Filter the inventory, mark both web hosts, run on the selection.
    tmux.keys(&["/"]);
    tmux.type_text("web");
    tmux.keys(&["Enter", "a", "!"]);
    tmux.type_text("echo fleet");
    tmux.keys(&["Enter"]);
    tmux.wait_for("echo fleet: 2/2 hosts succeeded");

    // A change opens the approval modal; approving once runs it.
    let marker = format!("/tmp/merlya-e2e-approved-{}", trusted.port);
    let _ = std::fs::remove_file(&marker);
    let touch = format!("touch {marker}");
    tmux.command(&format!(":exec web01 -- {touch}"));
    let screen = tmux.wait_for("once   [a] always");
    assert!(screen.contains("risk") && screen.contains("mutating") && screen.contains("always `touch"), "{screen}");
    assert!(!std::path::Path::new(&marker).exists(), "nothing runs before the decision");
    tmux.keys(&["o"]);
    tmux.wait_for(&format!("{touch}: 1/1 hosts succeeded"));
    assert!(std::path::Path::new(&marker).exists());
    let _ = std::fs::remove_file(&marker);

    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");

    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let mut commands: Vec<(&str, &str)> =
        audit.iter().map(|e| (e["host"].as_str().unwrap(), e["command"].as_str().unwrap())).collect();
    commands.sort();
    let mut expected = vec![
        ("localhost", "echo hello-from-the-console"),
        ("web01", "whoami"),
        ("web02", "echo second-host"),
        ("web01", "echo fleet"),
        ("web02", "echo fleet"),
        ("web01", touch.as_str()),
    ];
    expected.sort();
    assert_eq!(commands, expected);
    assert_eq!(audit.len(), 6);
    // A start entry before each run and its outcome after: twelve keyed entries.
    assert!(env.ok(&["audit", "verify"]).contains("intact: 12 entries"));
    assert!(audit.iter().all(|e| e["outcome"] == "ok" && e["requested_by"] == "tester"), "{audit:?}");
    assert_eq!(audit[5]["approved_by"], "tester (console)");
    // The console recorded reachability.
    let hosts: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
    assert!(hosts.iter().filter(|h| h["name"] != "localhost").all(|h| h["reachable"] == true), "{hosts:?}");
}

/// One sshd whose login key (protected by `passphrase`) is the default key, a host `name` for it (its host key
/// trusted or not), and the console open in tmux.
fn console_with_one_host(name: &str, passphrase: &str, trusted: bool) -> (Sshd, TestEnv, Tmux) {
    let key = TestKey::generate(passphrase);
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    if trusted {
        env.trust(&sshd);
    }
    env.add_host(name, &sshd, &[]);
    let tmux = Tmux::start(name, &env, 120, 34);
    (sshd, env, tmux)
}

#[test]
fn console_declines_an_unknown_key_with_escape() {
    let (sshd, env, tmux) = console_with_one_host("stranger", "", false);
    tmux.wait_for("Inventory · 2");
    tmux.command(":exec stranger -- cat /etc/hostname");
    tmux.wait_for("Unknown host key");
    tmux.keys(&["Escape"]);
    let screen = tmux.wait_for("unknown host key for");
    assert!(screen.contains("refused under"), "{screen}");
    assert!(screen.contains("✗ stranger"), "{screen}");
    assert_eq!(sshd.accepted_logins(), 0);
    assert!(!env.merlya_home().join("known_hosts").exists());
    // Ctrl-C with nothing running asks before quitting.
    tmux.keys(&["C-c"]);
    tmux.wait_for("Quit merlya?");
    tmux.keys(&["y"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn console_asks_for_a_key_passphrase_in_a_modal() {
    let (_sshd, env, tmux) = console_with_one_host("locked", "open sesame", true);
    tmux.wait_for("Inventory · 2");
    tmux.command(":exec locked -- echo unlocked");
    let screen = tmux.wait_for("passphrase for");
    assert!(screen.contains("Key for locked"), "{screen}");
    tmux.type_text("open sesame");
    let screen = tmux.wait_for("•••••••••••");
    assert!(!screen.contains("open sesame"), "the passphrase is not echoed:\n{screen}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("│ unlocked");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    let logs = std::fs::read_dir(env.merlya_home().join("logs")).unwrap();
    for entry in logs {
        let content = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!content.contains("open sesame"), "the passphrase is not logged");
    }
}

#[test]
fn cli_exec_asks_for_a_passphrase_on_the_terminal() {
    let (_key, _sshd, env) = support::one_trusted_host_with_passphrase("locked", "open sesame", &[]);
    let socket = format!("merlya-e2e-cli-{}", std::process::id());
    let cmd = format!(
        "MERLYA_HOME='{}' HOME='{}' USER=tester '{}' exec locked -- echo cli-unlocked; echo EXITED $?; sleep 60",
        env.merlya_home().display(),
        env.home().display(),
        env!("CARGO_BIN_EXE_merlya"),
    );
    let tmux = Tmux::attach(socket, &cmd, 120, 30);
    tmux.wait_for("passphrase for");
    tmux.type_text("open sesame");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("EXITED 0");
    assert!(screen.contains("locked | cli-unlocked"), "{screen}");
    assert!(!screen.contains("open sesame"));
}

#[test]
fn cli_approval_prompt_stores_an_always_rule() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let merlya = env!("CARGO_BIN_EXE_merlya");
    let cmd = format!(
        "export MERLYA_HOME='{}' HOME='{}' USER=tester; '{merlya}' exec web01 -- mkdir -p /tmp/merlya-rule-a; echo FIRST $?; \
         '{merlya}' exec web01 -- mkdir -p /tmp/merlya-rule-b; echo SECOND $?; sleep 60",
        env.merlya_home().display(),
        env.home().display(),
    );
    let tmux = Tmux::attach(format!("merlya-e2e-rule-{}", std::process::id()), &cmd, 120, 30);
    let screen = tmux.wait_for("[o]nce, [a]lways `mkdir [-p]` on these hosts");
    assert!(screen.contains("APPROVAL NEEDED") && screen.contains("risk:    mutating"), "{screen}");
    tmux.type_text("a");
    tmux.keys(&["Enter"]);
    // The second command shares the prefix `mkdir -p` on the same host: no question.
    let screen = tmux.wait_for("SECOND 0");
    assert!(screen.contains("FIRST 0"), "{screen}");
    assert_eq!(screen.matches("APPROVAL NEEDED").count(), 1, "{screen}");
    let rules: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["approvals", "list", "--format", "json"])).unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0]["prefix"], "mkdir [-p]");
    assert_eq!(rules[0]["hosts"], serde_json::json!(["web01"]));
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert!(audit[1]["approved_by"].as_str().unwrap().starts_with("rule #1"), "{audit:?}");
    env.ok(&["approvals", "revoke", "1"]);
    assert_eq!(env.run(&["exec", "web01", "--", "mkdir -p /tmp/merlya-rule-c"]).status.code(), Some(3));
}

#[test]
fn cli_approval_prompt_speaks_the_chosen_language() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let merlya = env!("CARGO_BIN_EXE_merlya");
    let target = format!("/tmp/merlya-rule-fr-{}", std::process::id());
    let cmd = format!(
        "export MERLYA_HOME='{}' HOME='{}' USER=tester MERLYA_UI_LANGUAGE=fr; '{merlya}' exec web01 -- mkdir -p {target}; echo FIRST $?; sleep 60",
        env.merlya_home().display(),
        env.home().display(),
    );
    let tmux = Tmux::attach(format!("merlya-e2e-rule-fr-{}", std::process::id()), &cmd, 120, 30);
    let screen = tmux.wait_for("[o] une fois, [a] toujours `mkdir [-p]` sur ces hôtes, [d] refuser ?");
    assert!(screen.contains("APPROBATION REQUISE") && screen.contains("risque :   mutating"), "{screen}");
    tmux.type_text("d");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("FIRST ");
    assert!(!screen.contains("FIRST 0"), "denied: {screen}");
    assert!(!std::path::Path::new(&target).exists());
}

#[test]
fn console_chat_runs_the_agent_with_streaming_and_an_approval() {
    use serde_json::json;
    use support::llm::{ScriptedLlm, openai};
    let dir = tempfile::tempdir().unwrap();
    let _ = Command::new("chown").args(["-R", support::TEST_USER]).arg(dir.path()).status();
    let marker = dir.path().join("approved-by-console").display().to_string();
    let change_marker = marker.clone();
    let llm = ScriptedLlm::start(move |r| {
        let main = r.system().contains("You are merlya, an SRE");
        let asked_change = r.raw.contains("create the marker");
        let results = r.tool_results();
        match (main, asked_change, results.first()) {
            (true, false, None) => {
                openai::sse_tool_call("delegate_diagnostic", json!({"target": "web01", "task": "disk"}))
            }
            (true, false, Some(_)) => openai::sse_text(&["Disk on web01 ", "is fine."]),
            (true, true, None) => {
                openai::sse_tool_call("delegate_execution", json!({"target": "web01", "task": "create the marker"}))
            }
            (true, true, Some(_)) => openai::sse_text(&["Marker created."]),
            (false, false, None) => openai::sse_tool_call("run_command", json!({"command": "df -h /"})),
            (false, true, None) => openai::sse_tool_call(
                "propose_change",
                json!({"summary": "create the marker", "command": format!("touch {change_marker}")}),
            ),
            (false, _, Some(_)) => openai::sse_text(&["done"]),
        }
    });
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let tmux = Tmux::start_with_llm("agent", &env, &llm.url, 140, 40);
    let screen = tmux.wait_for("Inventory · 2");
    assert!(!screen.contains("no model"), "a model is configured:\n{screen}");
    tmux.chat("how is web01 doing?");
    let screen = tmux.wait_for("Disk on web01 is fine.");
    assert!(screen.contains("diagnostic@web01 $ df -h / → exit 0"), "the tool cell:\n{screen}");
    assert!(screen.contains("│ Filesystem"), "df output streamed into the output pane:\n{screen}");
    // The tool cell selected and expanded (k, space): the next question and what follows it still
    // come into view (the chat follows again once a question is sent).
    tmux.escape();
    tmux.keys(&["3", "k", "Space"]);

    tmux.chat("please create the marker");
    let screen = tmux.wait_for("once   [a] always");
    assert!(screen.contains("Approve: create the marker") && screen.contains("mutating"), "{screen}");
    assert!(!std::path::Path::new(&marker).exists());
    tmux.keys(&["o"]);
    tmux.wait_for("Marker created.");
    assert!(std::path::Path::new(&marker).exists(), "the approved change ran on the host");

    // The pipeline pane shows the change stage by stage; metrics count the commands (the input,
    // open for the next question, is left first).
    tmux.escape();
    tmux.keys(&["4"]);
    tmux.wait_for("change on web01: succeeded");
    // Once the toast has faded, the whole row and the stages show.
    let screen = tmux.wait_for("✓ Apply");
    assert!(
        screen.contains("succeeded") && screen.contains("create the marker") && screen.contains("✓ Approval"),
        "{screen}"
    );
    tmux.keys(&["5"]);
    let screen = tmux.wait_for("Circuit breaker");
    assert!(screen.contains("✓ 2 succeeded") && screen.contains("gpt-test"), "{screen}");

    // /model switches a role live and saves it.
    tmux.chat("/model fast openai/gpt-mini");
    tmux.wait_for("model.fast is now openai/gpt-mini (saved to config.yaml)");
    let saved = std::fs::read_to_string(env.merlya_home().join("config.yaml")).unwrap();
    assert!(saved.contains("fast: openai/gpt-mini") && saved.contains("brain: openai/gpt-test"), "{saved}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert_eq!(audit.len(), 2);
    assert_eq!(audit[1]["approved_by"], "tester (console)");
}

#[test]
fn a_user_keymap_overrides_and_a_broken_one_stops_start_up() {
    let env = TestEnv::new();
    let dir = env.merlya_home().join("keymaps");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("default.yaml"), "global:\n  quit: [ctrl-q]\n").unwrap();
    let tmux = Tmux::start("keymap", &env, 120, 34);
    let screen = tmux.wait_for("Inventory · 1");
    assert!(screen.contains("Ctrl-q quit"), "hints follow the keymap:\n{screen}");
    tmux.keys(&["q"]);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!tmux.screen().contains("EXITED"), "q is no longer bound");
    tmux.keys(&["C-q"]);
    tmux.wait_for("EXITED 0");

    std::fs::write(dir.join("default.yaml"), "inventory:\n  mark: [a]\n").unwrap();
    let out = env.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: inventory: key a is bound to both mark and mark_all",
            dir.join("default.yaml").display()
        )),
        "{err}"
    );
}

#[test]
fn a_broken_user_theme_stops_start_up_naming_the_field() {
    let env = TestEnv::new();
    let dir = env.merlya_home().join("themes");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dark.yaml"), "accent: { fg: chartreuse }\n").unwrap();
    let out = env.run(&[]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{}: accent.fg: unknown colour \"chartreuse\"", dir.join("dark.yaml").display())),
        "{err}"
    );
    // A valid override is used, and other themes are selectable.
    std::fs::write(dir.join("dark.yaml"), "accent: { fg: \"#ff8800\" }\n").unwrap();
    std::fs::write(env.merlya_home().join("config.yaml"), "ui:\n  theme: high-contrast\n").unwrap();
    let tmux = Tmux::start("theme", &env, 100, 30);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn ctrl_z_suspends_to_the_shell_and_fg_resumes() {
    let env = TestEnv::new();
    let socket = format!("merlya-e2e-suspend-{}", std::process::id());
    // An interactive shell, so job control (Ctrl-Z, fg) works as it does for a person.
    let tmux = Tmux::attach(socket, "env PS1='$ ' bash --norc -i", 100, 30);
    tmux.type_text(&format!(
        "MERLYA_HOME='{}' HOME='{}' LANG=C.UTF-8 MERLYA_SETUP=skip '{}'",
        env.merlya_home().display(),
        env.home().display(),
        env!("CARGO_BIN_EXE_merlya")
    ));
    tmux.keys(&["Enter"]);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["C-z"]);
    let screen = tmux.wait_for("Stopped");
    assert!(!screen.contains("Inventory · 1"), "the shell has the screen back:\n{screen}");
    tmux.type_text("fg");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["q"]);
    tmux.wait_alternate_screen(false);
    tmux.type_text("echo code=$?");
    tmux.keys(&["Enter"]);
    tmux.wait_for("code=0");
}

#[test]
fn sigterm_and_sighup_restore_the_terminal_as_q_does_and_exit_128_plus_n() {
    for (signal, status) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let env = TestEnv::new();
        let tmux = Tmux::start(&format!("signal-{signal}"), &env, 100, 30);
        tmux.wait_for("Inventory · 1");
        let modes =
            |tmux: &Tmux| tmux.tmux(&["display", "-p", "-t", "0", "#{alternate_on} #{cursor_flag} #{mouse_any_flag}"]);
        assert_eq!(
            modes(&tmux).trim(),
            "1 0 1",
            "the console holds the alternate screen, hides the cursor, tracks the mouse"
        );
        let shell = tmux.tmux(&["display", "-p", "-t", "0", "#{pane_pid}"]);
        let out = Command::new("pgrep").args(["-P", shell.trim(), "merlya"]).output().unwrap();
        let pid = text(&out.stdout).trim().to_string();
        assert!(!pid.is_empty(), "the console's pid");
        assert!(Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
        // The shell sees a program ended by the signal (128 + N), not a clean quit.
        tmux.wait_for(&format!("EXITED {status}"));
        assert_eq!(modes(&tmux).trim(), "0 1 0", "SIG{signal}: screen, cursor and mouse are given back");
    }
}

#[test]
fn a_broken_config_file_starts_the_console_with_defaults_and_says_where() {
    let env = TestEnv::new();
    std::fs::write(env.merlya_home().join("config.yaml"), "ui:\n  max_fps: [not a number\n").unwrap();
    let tmux = Tmux::start("broken-config", &env, 140, 34);
    let screen = tmux.wait_for("Inventory · 1");
    assert!(screen.contains("started with the defaults"), "{screen}");
    assert!(screen.contains("config.yaml") && screen.contains("line"), "the banner names the file and line:\n{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    // The CLI still refuses to run on a config it cannot read.
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn hosts_import_from_the_chat_adds_a_file_and_a_bad_file_says_which_line() {
    let env = TestEnv::new();
    let good = env.dir.path().join("inventory.ini");
    std::fs::write(&good, "[web]\nweb[01:03] ansible_host=10.1.0.1\n").unwrap();
    let bad = env.dir.path().join("broken.csv");
    std::fs::write(&bad, "name,hostname,port\nok1,10.0.0.1,22\nbad,10.0.0.2,ssh\n").unwrap();
    let tmux = Tmux::start("import", &env, 140, 34);
    let screen = tmux.wait_for("Inventory · 1");
    assert!(screen.contains("/hosts import"), "the first screen says how to add hosts:\n{screen}");
    tmux.chat(&format!("/hosts import {}", bad.display()));
    let screen = tmux.wait_for("nothing was imported");
    assert!(screen.contains("line 3"), "{screen}");
    tmux.chat(&format!("/hosts import {}", good.display()));
    tmux.wait_for("Imported 3 host(s)");
    tmux.wait_for("Inventory · 4");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

/// The drift worker in the real console: a resource whose state lost its object outside merlya is
/// shown `missing` in the Drift pane by the interval check, with a toast, without a key press.
#[test]
fn the_drift_worker_shows_a_missing_resource_without_a_key_press() {
    let env = TestEnv::new();
    let created = env.run(&["provision", "create", "data-marker", "--var", "message=hi", "--name", "m1", "--yes"]);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let dir = env.merlya_home().join("resources/m1");
    let removed = std::process::Command::new("terraform")
        .args(["state", "rm", "terraform_data.marker"])
        .current_dir(&dir)
        .env("TF_IN_AUTOMATION", "1")
        .status()
        .unwrap();
    assert!(removed.success());
    std::fs::write(env.merlya_home().join("config.yaml"), "drift:\n  interval_secs: 10\n").unwrap();
    let tmux = Tmux::start("drift", &env, 120, 34);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["6"]);
    let before = tmux.wait_for("Resources (1)");
    assert!(before.contains("unknown"), "{before}");
    let after = tmux.wait_until("the interval check", |s| s.contains("missing") && s.contains("Drift check"));
    assert!(after.contains("m1"), "{after}");
    // `r` reconciles the selected resource: the change's approval opens in the modal; `n` denies it.
    tmux.keys(&["r"]);
    let asked = tmux.wait_for("Approve");
    assert!(asked.contains("terraform_data.marker"), "{asked}");
    tmux.keys(&["n"]);
    tmux.wait_for("reconcile ended");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("denied"), "the denial is audited: {audit}");
    // `a` accepts it as it is: the approval names what it accepts; approved, the row is no longer drift.
    tmux.keys(&["a"]);
    let asked =
        tmux.wait_until("the accept's approval", |s| s.contains("Approve") && s.contains("accept what is there"));
    assert!(asked.contains("missing from the state"), "{asked}");
    tmux.keys(&["y"]);
    tmux.wait_until("the accepted row", |s| s.contains("active") && s.contains("no_drift"));
    let shown = env.ok(&["state", "show", "m1"]);
    assert!(shown.contains("accepted as it is"), "{shown}");
}

#[test]
fn watch_reruns_a_read_on_a_host_highlights_what_changed_and_stops() {
    let (sshd, _env, tmux) = console_with_one_host("watched", "", true);
    tmux.wait_for("Inventory · 2");
    let file = format!("/tmp/merlya-e2e-watch-{}.txt", sshd.port);
    let write = |content: &str| {
        std::fs::write(&file, content).unwrap();
        // The sshd's own user reads it.
        std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    };
    write("disk 41% used\nsteady line\n");

    // A watch of a change is refused at once, never asked, and nothing runs.
    tmux.keys(&["j"]);
    tmux.command(&format!(":watch 1 -- rm -f {file}"));
    let screen = tmux.wait_for("watch refused");
    assert!(screen.contains("not proven read-only"), "{screen}");
    assert!(!screen.contains("once   [a] always"), "no approval is asked:\n{screen}");
    assert!(std::path::Path::new(&file).exists());

    // A read: one round per second on the host under the cursor.
    tmux.command(&format!(":watch 1 -- cat {file}"));
    tmux.wait_for("│ disk 41% used");
    tmux.wait_until("a third round", |s| s.contains("watch 1s · round 3"));
    write("disk 47% used\nsteady line\n");
    tmux.wait_for("│ disk 47% used");
    // Only the characters that changed are marked (bold: NO_COLOR has no colours); the rest is not.
    let styled = tmux.styled_screen();
    // The attributes inside a line's text (after the host, before the pane's bold border).
    let bold_in = |line: &str| -> usize {
        let text = line.split_once("watched").map_or("", |(_, t)| t);
        let text = text.rsplit_once('┃').map_or(text, |(t, _)| t).trim_end_matches("\u{1b}[1m");
        text.matches("\u{1b}[1m").count() + text.matches(";1m").count()
    };
    // The round after the change marks its 7; rounds before and after it (same as their previous) do not.
    let disk: Vec<&str> = styled.lines().filter(|l| l.contains("disk 4")).collect();
    let marked: Vec<&&str> = disk.iter().filter(|l| bold_in(l) > 0).collect();
    assert_eq!(marked.len(), 1, "one round saw the change: {disk:?}");
    assert!(marked[0].contains("\u{1b}[1m7") && bold_in(marked[0]) == 1, "only the 7 is marked: {marked:?}");
    let same = styled.lines().filter(|l| l.contains("steady line")).collect::<Vec<_>>();
    assert!(!same.is_empty() && same.iter().all(|l| bold_in(l) == 0), "an unchanged line is not marked: {same:?}");

    // Ctrl-C stops it: no more rounds, even when the file changes again.
    tmux.keys(&["C-c"]);
    tmux.wait_for("watch stopped after");
    write("disk 99% used\nsteady line\n");
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let screen = tmux.screen();
    assert!(!screen.contains("99%") && !screen.contains("watch 1s"), "{screen}");
    assert!(!screen.contains("Quit merlya?"), "Ctrl-C stopped the watch, it did not ask to quit:\n{screen}");
    let _ = std::fs::remove_file(&file);
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn retry_sends_the_last_question_again_and_esc_twice_edits_it() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use support::llm::{ScriptedLlm, openai};
    let turns = Arc::new(AtomicUsize::new(0));
    let counted = turns.clone();
    let llm = ScriptedLlm::start(move |r| {
        // The start-up check lists the models too: only questions are counted.
        let chat = r.path.ends_with("/chat/completions");
        let n = if chat { counted.fetch_add(1, Ordering::SeqCst) + 1 } else { 0 };
        openai::sse_text(&[&format!("Answer number {n}.")])
    });
    let env = TestEnv::new();
    let tmux = Tmux::start_with_llm("retry", &env, &llm.url, 130, 40);
    tmux.wait_for("Inventory · 1");
    tmux.chat("how full is the disk?");
    tmux.wait_for("Answer number 1.");
    let questions = || -> Vec<String> {
        llm.requests()
            .into_iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .filter_map(|r| {
                let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
                let last = messages.iter().rev().find(|m| m["role"] == "user")?;
                last["content"].as_str().map(str::to_string)
            })
            .collect()
    };
    // r in the chat (the input left): the same question, sent again.
    tmux.escape();
    tmux.keys(&["r"]);
    tmux.wait_for("Answer number 2.");
    assert_eq!(questions(), ["how full is the disk?", "how full is the disk?"]);

    // Esc twice: the question is back in the input line, to change and send.
    tmux.escape();
    tmux.wait_for("Esc again");
    tmux.escape();
    tmux.wait_for("❯ how full is the disk?");
    tmux.type_text(" on web01");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Answer number 3.");
    assert_eq!(questions().last().map(String::as_str), Some("how full is the disk? on web01"));
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn s_opens_an_interactive_ssh_session_and_exit_brings_the_console_back() {
    let (_sshd, env, tmux) = console_with_one_host("web1", "", true);
    tmux.wait_for("Inventory · 2");
    // localhost first: the host is the second row.
    tmux.keys(&["j", "s"]);
    tmux.wait_alternate_screen(false);
    let screen = tmux.wait_for("merlya: ssh web1");
    assert!(!screen.contains("Inventory · 2"), "the console gave the terminal to ssh:\n{screen}");
    // The remote shell, on the inventory's port and user, trusting merlya's known hosts.
    tmux.wait_until("a shell prompt", |s| s.lines().any(|l| l.trim_end().ends_with('$')));
    tmux.type_text("echo MARK-$((6*7)) $(whoami)");
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!("MARK-42 {}", support::TEST_USER));
    tmux.type_text("exit");
    tmux.keys(&["Enter"]);
    tmux.wait_alternate_screen(true);
    let back = tmux.wait_for("Inventory · 2");
    assert!(back.contains("web1"), "the console is back, redrawn:\n{back}");
    tmux.wait_for("ssh session to web1 ended (exit 0)");
    // Keys go to the console again.
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let session: Vec<&serde_json::Value> =
        audit.iter().filter(|e| e["command"] == "interactive ssh session to web1").collect();
    assert_eq!(session.len(), 1, "one audit entry for the session:\n{audit:#?}");
    assert_eq!(session[0]["host"], "web1");
    assert_eq!(session[0]["login_user"], support::TEST_USER);
}

#[test]
fn the_inventory_orders_by_health_read_by_a_triage_with_an_arrow_in_the_header() {
    let key = TestKey::generate("");
    let env = TestEnv::new();
    env.install_default_key(&key);
    // busy1's load is 7.5 per whatever core count this machine has (its /proc/loadavg is its own);
    // calm1's is 0.
    let with_load = |load: &str| {
        let options = SshdOptions {
            files: vec![("/proc/loadavg".into(), format!("{load} {load} {load} 1/100 4242\n"))],
            ..SshdOptions::allowing(&key)
        };
        Sshd::start(options)
    };
    let (busy, calm) = (with_load("64.00"), with_load("0.00"));
    for (name, sshd) in [("calm1", &calm), ("busy1", &busy)] {
        env.trust(sshd);
        env.add_host(name, sshd, &[]);
    }
    // A triage outside the console: its readings are stored and shown when the console starts.
    let _ = env.run(&["skill", "run", "incident_triage", "--targets", "calm1,busy1"]);
    let tmux = Tmux::start("health", &env, 200, 30);
    tmux.wait_for("Inventory · 3");
    tmux.keys(&["z"]);
    let screen = tmux.wait_for("load");
    let row = |screen: &str, name: &str| screen.lines().find(|l| l.contains(&format!(" {name} "))).map(String::from);
    let calm_row = row(&screen, "calm1").expect("calm1 listed");
    assert!(calm_row.contains("0.00"), "calm1's load per core:\n{screen}");
    assert!(row(&screen, "localhost").is_some_and(|r| r.contains('–')), "never read:\n{screen}");
    assert!(screen.contains('%'), "disk and memory in %:\n{screen}");
    // o, then the load row (inventory order, name, address, state, load), Enter; again: descending.
    tmux.keys(&["o", "g", "j", "j", "j", "j", "Enter"]);
    tmux.wait_for("load▲");
    tmux.keys(&["o", "Enter"]);
    let sorted = tmux.wait_for("load▼");
    let position = |name: &str| sorted.lines().position(|l| l.contains(&format!(" {name} ")));
    assert!(position("busy1") < position("calm1"), "the busiest first:\n{sorted}");
    assert!(position("calm1") < position("localhost"), "never read last:\n{sorted}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}
