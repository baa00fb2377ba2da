//! Run control against real sshd daemons: cancelling a fan-out from the
//! console (Ctrl-C) and from `merlya exec` (SIGINT) leaves no process behind
//! on the hosts; quitting with a run in flight asks first and stops it;
//! identical outputs fold into one group; a host whose key changed shows why
//! in the inventory.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::tmux::Tmux;
use support::{Sshd, SshdOptions, TestEnv, TestKey, text};

/// A `sleep` only this test runs (GNU sleep takes fractions), so other tests' sleeps are not counted.
fn unique_sleep(sshd: &Sshd) -> String {
    format!("sleep 600.{}{}", sshd.port, std::process::id() % 1000)
}

/// How many processes run `command` (on the hosts: they are all this machine).
fn running(command: &str) -> usize {
    let out = Command::new("pgrep").args(["-f", "-x", command]).output().expect("pgrep");
    text(&out.stdout).lines().count()
}

fn wait_until(what: &str, limit: Duration, check: impl Fn() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Five inventory hosts (`node1`…`node5`, tag `fleet`) on one trusted sshd.
fn fleet() -> (TestKey, Sshd, TestEnv) {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&sshd);
    for i in 1..=5 {
        env.add_host(&format!("node{i}"), &sshd, &["--tag", "fleet"]);
    }
    (key, sshd, env)
}

/// Marks the fleet in the console and runs `command` on it.
fn run_on_fleet(tmux: &Tmux, command: &str) {
    tmux.wait_for("Inventory · 6");
    tmux.keys(&["/"]);
    tmux.type_text("@fleet");
    tmux.keys(&["Enter", "a", "!"]);
    tmux.type_text(command);
    tmux.keys(&["Enter"]);
}

#[test]
fn ctrl_c_cancels_a_five_host_run_and_nothing_is_left_on_the_hosts() {
    let (_key, sshd, env) = fleet();
    let sleep = unique_sleep(&sshd);
    let tmux = Tmux::start("cancel", &env, 130, 34);
    run_on_fleet(&tmux, &sleep);
    wait_until("five remote sleeps", Duration::from_secs(20), || running(&sleep) == 5);
    let screen = tmux.wait_for("0/5 done, 0 failed, 5 running");
    assert!(screen.contains("▶ running"), "the inventory shows each host's state:\n{screen}");
    tmux.keys(&["C-c"]);
    let screen = tmux.wait_for("0/5 hosts succeeded · cancelled");
    assert!(!screen.contains("Quit"), "the first Ctrl-C cancels, it does not ask to quit:\n{screen}");
    assert_eq!(running(&sleep), 0, "the remote sleeps were stopped before the run reported");
    assert!(screen.contains("⊘ cancelled"), "{screen}");
    // With nothing running, Ctrl-C asks before quitting.
    tmux.keys(&["C-c"]);
    tmux.wait_for("Quit merlya?");
    tmux.keys(&["y"]);
    tmux.wait_for("EXITED 0");
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert_eq!(audit.len(), 5);
    assert!(audit.iter().all(|e| e["outcome"] == "failed" || e["outcome"] == "cancelled"), "{audit:?}");
}

#[test]
fn quitting_with_a_run_in_flight_asks_then_stops_it_on_the_hosts() {
    let (_key, sshd, env) = fleet();
    let sleep = unique_sleep(&sshd);
    let tmux = Tmux::start("quit", &env, 130, 34);
    run_on_fleet(&tmux, &sleep);
    wait_until("five remote sleeps", Duration::from_secs(20), || running(&sleep) == 5);
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("Quit and stop them on their hosts?");
    assert!(screen.contains(&format!("#1 $ {sleep} (5)")), "{screen}");
    tmux.keys(&["n"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(running(&sleep), 5, "no keeps the run going");
    tmux.keys(&["q"]);
    tmux.wait_for("Quit and stop them on their hosts?");
    tmux.keys(&["y"]);
    tmux.wait_for("EXITED 0");
    assert_eq!(running(&sleep), 0, "nothing is left running on a host after the console exits");
}

#[test]
fn exec_on_sigint_stops_the_hosts_and_exits_130_with_a_summary() {
    let (_key, sshd, env) = fleet();
    let sleep = unique_sleep(&sshd);
    let child =
        env.merlya(&["exec", "@fleet", "--", &sleep]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_until("five remote sleeps", Duration::from_secs(20), || running(&sleep) == 5);
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let rows = stdout.lines().filter(|l| l.starts_with("node") && l.contains("cancelled")).count();
    assert_eq!(rows, 5, "a summary row per host, each cancelled:\n{stdout}");
    assert!(stdout.contains("0/5 hosts succeeded"), "{stdout}");
    assert_eq!(running(&sleep), 0, "the remote sleeps were stopped");
}

#[test]
fn identical_outputs_fold_into_one_group_and_the_odd_host_stands_alone() {
    let key = TestKey::generate("");
    let (a, b) = (Sshd::start(SshdOptions::allowing(&key)), Sshd::start(SshdOptions::allowing(&key)));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&a);
    env.trust(&b);
    for i in 1..=4 {
        env.add_host(&format!("web{i:02}"), &a, &["--tag", "fleet"]);
    }
    env.add_host("odd01", &b, &["--tag", "fleet"]);
    let tmux = Tmux::start("group", &env, 130, 34);
    tmux.wait_for("Inventory · 6");
    // Each host prints the port of the sshd it reached: four say one thing, one another.
    tmux.command(":exec @fleet -- echo $SSH_CONNECTION | cut -d' ' -f4");
    tmux.wait_for("5/5 hosts succeeded");
    tmux.keys(&["2", "="]);
    let screen = tmux.wait_for("4 hosts identical: web01–web04 ✓ ok");
    assert!(screen.contains(&format!("│ {}", a.port)) && screen.contains(&format!("│ {}", b.port)), "{screen}");
    assert!(screen.contains("═ odd01 ✓ ok"), "{screen}");
    tmux.command(":diff web01 odd01");
    let screen = tmux.wait_for("+++ odd01");
    assert!(screen.contains(&format!("-{}", a.port)) && screen.contains(&format!("+{}", b.port)), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn a_host_whose_key_changed_shows_the_reason_in_the_inventory() {
    let key = TestKey::generate("");
    let (real, other) = (Sshd::start(SshdOptions::allowing(&key)), Sshd::start(SshdOptions::allowing(&key)));
    let env = TestEnv::new();
    env.install_default_key(&key);
    // known_hosts holds another server's key for this address: the key "changed".
    let forged = other.known_hosts_line().replace(&format!(":{} ", other.port), &format!(":{} ", real.port));
    std::fs::write(env.home().join(".ssh/known_hosts"), format!("{forged}\n")).unwrap();
    env.add_host("moved", &real, &[]);
    let tmux = Tmux::start("hostkey", &env, 140, 34);
    tmux.wait_for("Inventory · 2");
    tmux.keys(&["j", "c"]);
    // The column is cut to the pane ("host key refuse…"); the details below say it whole.
    let screen = tmux.wait_for("host key refuse");
    assert!(screen.contains("last error"), "the last-error column says why:\n{screen}");
    tmux.keys(&["Enter"]);
    // "last error" is already a column header and the toast also says CHANGED: wait for the details.
    let screen = tmux.wait_for("host key refused ·");
    assert!(screen.contains("host key refused ·") && screen.contains("last error"), "the details name it:\n{screen}");
    assert_eq!(real.accepted_logins(), 0, "nothing logged in to a server with a changed key");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    // The last error is kept: `hosts list` shows it, and so does the next console.
    let list = env.ok(&["hosts", "list"]);
    assert!(list.contains("LAST ERROR") && list.contains("host key"), "{list}");
    drop(tmux);
    let tmux = Tmux::start("hostkey-again", &env, 140, 34);
    tmux.wait_for("host key refuse");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn run_on_sigint_cancels_the_agents_command_on_its_host_and_exits_130() {
    use serde_json::json;
    use support::agent::{KEY, configured, fleet, is_main};
    use support::llm::{ScriptedLlm, openai};
    let key = TestKey::generate("");
    let sleep = format!("sleep 600.{}", std::process::id() % 100_000);
    let remote = sleep.clone();
    let llm = ScriptedLlm::start(move |r| {
        if is_main(r) {
            openai::sse_tool_call("delegate_diagnostic", json!({"target": "web01", "task": "wait a while"}))
        } else {
            openai::tool_call("run_command", json!({"command": remote}))
        }
    });
    let env = configured(&llm, "openai", "");
    let _fleet = fleet(1, &key, &env);
    let child = env
        .merlya(&["run", "why is web01 slow?"])
        .env("MERLYA_TEST_LLM_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the agent's remote sleep", Duration::from_secs(30), || running(&sleep) == 1);
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cancelled by the operator"), "{stderr}");
    assert!(stderr.contains("web01") && stderr.contains(&sleep), "the summary lists the command:\n{stderr}");
    assert_eq!(running(&sleep), 0, "the agent's command was stopped on its host");
}

#[test]
fn the_timeout_bounds_the_whole_run_and_hosts_that_never_got_a_slot_are_not_started() {
    let (_key, sshd, env) = fleet();
    let sleep = unique_sleep(&sshd);
    // One host at a time and two seconds for the run: the first is stopped at the deadline, the
    // others never get a slot in time: reported and audited as not started (nothing ran there).
    let out =
        env.run(&["exec", "node1,node2,node3", "--parallel", "1", "--timeout", "2", "--format", "json", "--", &sleep]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let results = support::json_lines(&text(&out.stdout));
    assert_eq!(results.len(), 3);
    // Which host gets the one slot is the scheduler's choice: one timed out, the others never ran.
    let failures = |v: &[serde_json::Value], key: &str| {
        let mut f: Vec<String> = v.iter().map(|r| r[key].as_str().unwrap_or_default().to_string()).collect();
        f.sort();
        f
    };
    assert_eq!(failures(&results, "failure"), ["not_started", "not_started", "timed_out"], "{results:?}");
    for r in results.iter().filter(|r| r["failure"] == "not_started") {
        assert!(r["exit_code"].is_null(), "{r}");
        assert!(r["error"].as_str().unwrap().starts_with("not started: no free slot before the run's 2s timeout"));
    }
    let audit: serde_json::Value = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let rows: Vec<serde_json::Value> =
        audit.as_array().unwrap().iter().filter(|e| e["command"] == sleep.as_str()).cloned().collect();
    assert_eq!(failures(&rows, "outcome"), ["not_started", "not_started", "timed_out"], "{rows:?}");
    assert_eq!(running(&sleep), 0);
}

#[test]
fn hosts_added_and_removed_in_another_terminal_appear_without_reload() {
    let env = TestEnv::new();
    let tmux = Tmux::start("live-inventory", &env, 120, 30);
    tmux.wait_for("Inventory · 1");
    env.ok(&["hosts", "add", "added-elsewhere", "--hostname", "10.9.9.9", "--tag", "late"]);
    let screen = tmux.wait_for("Inventory · 2");
    assert!(screen.contains("added-elsewhere"), "{screen}");
    env.ok(&["hosts", "rm", "added-elsewhere"]);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn fifty_megabytes_from_a_host_stream_through_and_the_cut_is_reported() {
    let (_key, _sshd, env) = fleet();
    let flood = "head -c 50000000 /dev/zero | tr '\\0' x | fold -w 99";
    let out = env.merlya(&["exec", "node1", "--format", "json", "--", flood]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = &support::json_lines(&text(&out.stdout))[0];
    let kept = result["stdout"].as_str().unwrap().len() as u64;
    let cut = result["output_cut_bytes"].as_u64().unwrap();
    assert!(kept <= (1 << 20) + 100, "the result keeps at most 1 MiB per stream: {kept}");
    assert_eq!(kept + cut, 50_000_000 + 50_000_000 / 99 + 1, "every byte is kept or counted as cut");
    // What the result does not keep is on disk, private, whole.
    let spilled = result["output_spill"].as_array().unwrap();
    assert_eq!(spilled.len(), 1, "{result}");
    let file = std::path::Path::new(spilled[0].as_str().unwrap());
    assert!(file.starts_with(env.merlya_home().join("logs/output")), "{}", file.display());
    assert_eq!(std::fs::metadata(file).unwrap().len(), cut);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(file).unwrap().permissions().mode() & 0o777, 0o600);
    // In text mode the lines stream through and the summary says what was not kept.
    let out = env.merlya(&["exec", "node1", "--", flood]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("node1 |")).count(), 50_000_000 / 99 + 1);
    assert!(
        stdout.contains("output past 1024 KiB per stream was shown live and kept in "),
        "{}",
        &stdout[stdout.len() - 400..]
    );
}

#[test]
fn an_approval_for_thirty_hosts_at_80x24_shows_its_choices() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&sshd);
    for i in 1..=30 {
        env.add_host(&format!("app{i:02}"), &sshd, &["--tag", "fleet"]);
    }
    let marker = format!("/tmp/merlya-approval-{}", sshd.port);
    let tmux = Tmux::start("approval-30", &env, 80, 24);
    tmux.wait_for("Inventory · 31");
    tmux.command(&format!(":exec @fleet -- touch {marker}"));
    let screen = tmux.wait_for("[a] always");
    assert!(screen.contains("[y/o] once") && screen.contains("30 hosts"), "the choices show:\n{screen}");
    assert!(screen.contains("[n/d]"), "the deny choice shows:\n{screen}");
    assert!(screen.contains("app01–app30"), "the host list is summarised:\n{screen}");
    assert!(screen.contains("awaiting approval"), "the status line says what the run waits for:\n{screen}");
    tmux.keys(&["n"]);
    tmux.wait_for("denied");
    assert!(!std::path::Path::new(&marker).exists(), "nothing ran");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn a_terraform_change_started_in_the_console_is_approved_in_the_modal() {
    let env = TestEnv::new();
    let infra = env.dir.path().join("infra");
    std::fs::create_dir_all(&infra).unwrap();
    std::fs::write(
        infra.join("main.tf"),
        "resource \"terraform_data\" \"console\" {\n  input = \"from the console\"\n}\n",
    )
    .unwrap();
    let rc = env.dir.path().join("terraformrc");
    std::fs::write(&rc, "").unwrap();
    let tmux = Tmux::start_with("change", &env, &format!("TF_CLI_CONFIG_FILE='{}'", rc.display()), 120, 40);
    tmux.wait_for("Inventory · 1");
    tmux.command(&format!(":change terraform {}", infra.display()));
    // The plan ran at once; the modal shows its summary and the resource diff before anything applies.
    let screen = tmux.wait_for("[y/o] once");
    assert!(
        screen.contains("1 to add, 0 to change, 0 to destroy") && screen.contains("terraform_data.console"),
        "{screen}"
    );
    assert!(!infra.join("terraform.tfstate").exists(), "nothing applied before the decision");
    tmux.keys(&["o"]);
    let screen = tmux.wait_for("change on");
    assert!(screen.contains("succeeded") && screen.contains("terraform"), "{screen}");
    assert!(infra.join("terraform.tfstate").exists(), "applied after the approval");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}
