//! Safety of what runs and what is shown, against real OpenSSH daemons on
//! loopback: the sudo password reaches only sudo (after its own prompt),
//! commands cut off by a timeout or a cancellation are stopped on the host,
//! and escape sequences from hosts never reach a terminal as they are.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use merlya::config::HostKeyPolicy;
use merlya::exec::Executor;
use merlya::prompt::NoPrompter;
use support::executor::{cleared, host_for, pooled_executor};
use support::{Sshd, SshdOptions, TEST_PASSWORD, TestEnv, TestKey, json_lines, text};

/// An executor that logs in with `key` and trusts only `known_hosts`.
fn executor_for(key: &TestKey, known_hosts: std::path::PathBuf) -> Executor {
    pooled_executor(key, known_hosts, HostKeyPolicy::Strict, Arc::new(NoPrompter), 50, Duration::from_secs(300))
}

/// Creates (once) a login user whose sudo timestamp is shared by all its
/// sessions, so a second run finds sudo's credentials already cached.
fn ensure_cached_sudo_user() -> &'static str {
    const USER: &str = "merlyacache";
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        support::sshd::ensure_test_user();
        let exists = std::process::Command::new("id").arg(USER).output().map(|o| o.status.success());
        if !exists.unwrap_or(false) {
            let made = std::process::Command::new("useradd").args(["-m", "-s", "/bin/sh", USER]).status();
            assert!(made.map(|s| s.success()).unwrap_or(false), "useradd {USER}");
        }
        let mut chpasswd =
            std::process::Command::new("chpasswd").stdin(std::process::Stdio::piped()).spawn().expect("chpasswd");
        if let Some(mut stdin) = chpasswd.stdin.take() {
            use std::io::Write;
            let _ = writeln!(stdin, "{USER}:{TEST_PASSWORD}");
        }
        let _ = chpasswd.wait();
        let path = format!("/etc/sudoers.d/{USER}");
        std::fs::write(&path, format!("Defaults:{USER} timestamp_type=global\n{USER} ALL=(ALL:ALL) ALL\n")).unwrap();
        support::set_mode(std::path::Path::new(&path), 0o440);
    });
    USER
}

/// Runs `merlya exec HOST --format json -- CMD` for each command in one
/// keyring session after storing `password` as the host's sudo password.
fn exec_with_sudo_password(env: &TestEnv, host: &str, password: &str, commands: &[&str]) -> Vec<serde_json::Value> {
    exec_with_sudo_password_and(env, host, password, "", commands)
}

/// [`exec_with_sudo_password`] with more `exec` options (`--timeout 2`).
fn exec_with_sudo_password_and(
    env: &TestEnv,
    host: &str,
    password: &str,
    options: &str,
    commands: &[&str],
) -> Vec<serde_json::Value> {
    let merlya = env!("CARGO_BIN_EXE_merlya");
    let mut script = format!("printf '%s\\n' '{password}' | '{merlya}' secret set sudo:{host}:password >/dev/null");
    for command in commands {
        script.push_str(&format!(" ; '{merlya}' exec {host} {options} --yes --format json -- '{command}'"));
    }
    let out = env.keyring_session(&script).output().expect("keyctl (scripts/test.sh installs keyutils)");
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), commands.len(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    records
}

/// One trusted host `name` with `elevation`, on an sshd whose sessions see a private /etc (`setup`).
fn host_with_private_etc(
    name: &str,
    elevation: &str,
    setup: impl FnOnce(&mut support::SshdOptions),
) -> (support::Sshd, support::TestEnv) {
    let key = support::TestKey::generate("");
    let mut options = support::SshdOptions::allowing(&key);
    setup(&mut options);
    let sshd = support::Sshd::start(options);
    let env = support::TestEnv::new();
    env.install_default_key(&key);
    env.trust(&sshd);
    env.add_host(name, &sshd, &["--elevation", elevation]);
    (sshd, env)
}

#[test]
fn su_elevation_feeds_the_root_password_to_su_only_after_its_prompt() {
    const ROOT_PW: &str = "merlya-Root-pw-7";
    let (_sshd, env) = host_with_private_etc("suhost", "su", |o| o.root_password = Some(ROOT_PW.into()));
    let merlya = env!("CARGO_BIN_EXE_merlya");
    let mut script = format!("printf '%s\\n' '{ROOT_PW}' | '{merlya}' secret set su:suhost:password >/dev/null");
    for command in ["sudo id -u", "sudo cat; echo read-nothing", "sudo -u merlyatest id -un"] {
        script.push_str(&format!(" ; '{merlya}' exec suhost --yes --format json -- '{command}'"));
    }
    let out = env.keyring_session(&script).output().expect("keyctl");
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), 3, "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(records[0]["stdout"], "0\n", "su ran the command as root: {records:?}");
    assert_eq!(records[1]["stdout"], "read-nothing\n", "the command under su reads nothing: {records:?}");
    assert_eq!(records[2]["stdout"], "merlyatest\n", "{records:?}");
    for r in &records {
        assert_eq!(r["exit_code"], 0, "{r}");
        let shown = r.to_string();
        assert!(
            !shown.contains(ROOT_PW) && !shown.contains("Password"),
            "neither the password nor su's prompt is shown: {r}"
        );
    }
    // A wrong password: su refuses, the command never runs, and the password is not shown.
    let script = format!(
        "printf '%s\\n' 'wrong-on-purpose' | '{merlya}' secret set su:suhost:password >/dev/null; \
         '{merlya}' exec suhost --yes --format json -- 'sudo id -u'"
    );
    let out = env.keyring_session(&script).output().expect("keyctl");
    let records = json_lines(&text(&out.stdout));
    assert_ne!(records[0]["exit_code"], 0, "{records:?}");
    assert_eq!(records[0]["stdout"], "", "{records:?}");
    assert!(!records[0].to_string().contains("wrong-on-purpose"), "{records:?}");
}

#[test]
fn passwordless_doas_runs_doas_not_sudo() {
    let (_sshd, env) = host_with_private_etc("bsd01", "doas", |o| {
        o.doas_conf = Some(format!("permit nopass {} as root\n", support::TEST_USER))
    });
    let out = env.run(&["exec", "bsd01", "--yes", "--format", "json", "--", "sudo id -u"]);
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records[0]["stdout"], "0\n", "doas -n ran it as root: {records:?}");
    assert_eq!(records[0]["exit_code"], 0, "{records:?}");
}

#[test]
fn doas_with_a_password_is_fed_on_a_terminal_after_its_prompt_only() {
    let (_sshd, env) = host_with_private_etc("doashost", "doas_password", |o| {
        o.doas_conf = Some(format!("permit {} as root\n", support::TEST_USER))
    });
    let merlya = env!("CARGO_BIN_EXE_merlya");
    let mut script =
        format!("printf '%s\\n' '{TEST_PASSWORD}' | '{merlya}' secret set doas:doashost:password >/dev/null");
    for command in ["sudo id -u", "sudo cat; echo read-nothing"] {
        script.push_str(&format!(" ; '{merlya}' exec doashost --yes --format json -- '{command}'"));
    }
    let out = env.keyring_session(&script).output().expect("keyctl");
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), 2, "{}\n{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(records[0]["stdout"], "0\n", "doas ran the command as root: {records:?}");
    assert_eq!(records[1]["stdout"], "read-nothing\n", "the command under doas reads nothing: {records:?}");
    for r in &records {
        assert_eq!(r["exit_code"], 0, "{r}");
        assert!(!r.to_string().contains(TEST_PASSWORD) && !r.to_string().contains("password:"), "{r}");
    }
}

#[test]
fn sudo_password_reaches_only_sudo_after_its_prompt() {
    let (_key, sshd, env) = support::one_trusted_host("web01", &["--elevation", "sudo_password"]);
    let records = exec_with_sudo_password(
        &env,
        "web01",
        TEST_PASSWORD,
        &[
            "sudo id -u",
            "sudo cat",
            "sudo head -c 100",
            "sudo -u root sh -c \"cat; echo read-nothing\"",
            "sudo id -u; cat; echo end",
        ],
    );
    let stdout: Vec<&str> = records.iter().map(|r| r["stdout"].as_str().unwrap_or("?")).collect();
    let marker = regex::Regex::new("[0-9a-f]{16}[PS]").unwrap();
    assert_eq!(stdout, ["0\n", "", "", "read-nothing\n", "0\nend\n"], "{records:?}");
    for r in &records {
        assert_eq!(r["exit_code"], 0, "{r}");
        let shown = r.to_string();
        assert!(!shown.contains(TEST_PASSWORD) && !shown.contains("***"), "the password reached a command: {r}");
        // The prompt and start markers are stripped from what is shown.
        assert!(!marker.is_match(r["stderr"].as_str().unwrap_or("")), "{r}");
    }
    // The marker was the prompt: sudo's command line on the host carried it, the password never.
    assert!(!sshd.log_text().contains(TEST_PASSWORD));

    // A wrong password: sudo asks again and gets end-of-file, nothing hangs.
    let records = exec_with_sudo_password(&env, "web01", "not-the-password", &["sudo id -u"]);
    assert_ne!(records[0]["exit_code"], 0, "{:?}", records[0]);
    assert!(records[0]["error"].is_null(), "it ended, not timed out: {:?}", records[0]);
}

#[test]
fn cached_sudo_credentials_mean_the_password_is_never_sent() {
    let user = ensure_cached_sudo_user();
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&sshd);
    let port = sshd.port.to_string();
    env.ok(&[
        "hosts",
        "add",
        "cached",
        "--hostname",
        "127.0.0.1",
        "--port",
        &port,
        "--user",
        user,
        "--elevation",
        "sudo_password",
    ]);
    let first = exec_with_sudo_password(&env, "cached", TEST_PASSWORD, &["sudo id -u"]);
    assert_eq!(first[0]["stdout"], "0\n", "{first:?}");
    // Now a wrong password is stored: sudo must not ask (cached), so the run succeeds, and
    // nothing is written to stdin, so `cat` after sudo reads end-of-file, not the password.
    let second =
        exec_with_sudo_password(&env, "cached", "wrong-on-purpose", &["sudo id -u; cat; echo end", "sudo cat"]);
    assert_eq!(second[0]["stdout"], "0\nend\n", "{second:?}");
    assert_eq!(second[1]["stdout"], "", "the command under sudo reads nothing: {second:?}");
    for r in &second {
        assert_eq!(r["exit_code"], 0, "{r}");
        assert!(!r.to_string().contains("***") && !r.to_string().contains("wrong-on-purpose"), "{r}");
    }
}

/// Whether a process whose command line contains `pattern` runs on this machine.
fn running(pattern: &str) -> bool {
    std::process::Command::new("pgrep").args(["-f", pattern]).output().map(|o| o.status.success()).unwrap_or(false)
}

#[test]
fn a_timed_out_command_is_stopped_on_the_host() {
    let (_key, sshd, env) = support::one_trusted_host("slow", &[]);
    let remote = format!("sleep {}", 100_000 + u32::from(sshd.port));
    let local = format!("sleep {}", 200_000 + u32::from(sshd.port));
    // `; echo` keeps the shell alive as sleep's parent: the whole process group must go.
    let out = env.run(&["exec", "slow", "--timeout", "2", "--format", "json", "--", &format!("{remote}; echo never")]);
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records[0]["error"], "timed out after 2s", "{records:?}");
    let out =
        env.run(&["exec", "localhost", "--timeout", "1", "--format", "json", "--", &format!("{local}; echo never")]);
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records[0]["error"], "timed out after 1s", "{records:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while (running(&remote) || running(&local)) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(&remote), "`{remote}` still runs on the host after the timeout");
    assert!(!running(&local), "`{local}` still runs on localhost after the timeout");

    // Under sudo, as root: sudo relays the signal to its command.
    env.add_host("slowroot", &sshd, &["--elevation", "sudo_password"]);
    let root = format!("sleep {}", 400_000 + u32::from(sshd.port));
    let records =
        exec_with_sudo_password_and(&env, "slowroot", TEST_PASSWORD, "--timeout 2", &[&format!("sudo {root}")]);
    assert_eq!(records[0]["error"], "timed out after 2s", "{records:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(&root) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!running(&root), "`sudo {root}` still runs on the host after the timeout");
}

#[test]
fn exec_on_a_terminal_shows_escape_sequences_unless_raw() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let command = r"printf '\033]0;pwned\007\033]52;c;cm0gLXJmIC8=\007ok\r\033[2Jfake\n'";
    let shown = env.on_a_pty(&["exec", "web01", "--", command], "", &[]);
    let text = String::from_utf8_lossy(&shown);
    assert!(!shown.contains(&0x1b) && !shown.contains(&0x07), "an escape reached the terminal: {text:?}");
    assert!(text.contains("web01 | ^[]0;pwned^G^[]52;c;cm0gLXJmIC8=^Gok^M^[[2Jfake"), "{text:?}");
    let raw = env.on_a_pty(&["exec", "web01", "--raw", "--", command], "", &[]);
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIC8=\x07ok"), "--raw passes bytes through: {text:?}");
    // Not a terminal (a pipe): unchanged, as scripts expect; JSON escapes by itself.
    let piped = env.ok(&["exec", "web01", "--", command]);
    assert!(piped.contains("\x1b]0;pwned\x07"), "{piped:?}");
}

#[tokio::test]
async fn a_cancelled_command_is_stopped_on_the_host() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line() + "\n").unwrap();
    let executor = Arc::new(executor_for(&key, known));
    let pattern = format!("sleep {}", 300_000 + u32::from(sshd.port));
    let (task_executor, host, command) = (executor.clone(), host_for("web01", &sshd), format!("{pattern}; echo never"));
    let run = tokio::spawn(async move {
        let tx = merlya::exec::no_events();
        task_executor.run(&host, &cleared(&command), Duration::from_secs(120), &tx).await
    });
    let started = std::time::Instant::now() + Duration::from_secs(10);
    while !running(&pattern) && std::time::Instant::now() < started {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(running(&pattern), "the command started");
    // The console dropping a run (or the whole task being aborted) must not leave it behind.
    run.abort();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while running(&pattern) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!running(&pattern), "`{pattern}` still runs on the host after the run was cancelled");
}

#[test]
fn secret_values_stay_out_of_the_hosts_process_list_and_are_masked_when_encoded() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let secret = "tok-argv-5309-zz";
    // Polls the host's process list (the sshd is on this machine) while the command runs.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poller = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut seen = Vec::new();
            let mut polls = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let ps = std::process::Command::new("ps").args(["-eo", "args"]).output().unwrap();
                seen.extend(text(&ps.stdout).lines().filter(|l| l.contains(secret)).map(String::from));
                polls += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            (seen, polls)
        })
    };
    let merlya = env!("CARGO_BIN_EXE_merlya");
    // The shell stays alive for the whole run, so a value in its command line would show in `ps`.
    let command = "t=@api:web01:token; sleep 1; echo \"$t\" | rev; echo \"$t\" | base64; printf %s \"$t\" | od -An -tx1 | tr -d \" \\n\"; echo; echo done";
    // The value reaches `secret set` on stdin: no process of this test holds it in argv either.
    let script = format!(
        "'{merlya}' secret set api:web01:token >/dev/null && '{merlya}' exec --yes web01 --format json -- '{}'",
        command.replace('\'', r"'\''")
    );
    let mut child = env
        .keyring_session(&script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("keyctl (scripts/test.sh installs keyutils)");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(secret.as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (seen, polls) = poller.join().unwrap();
    let result = &json_lines(&text(&out.stdout))[0];
    assert!(result["stdout"].as_str().unwrap().ends_with("done\n"), "{result}\n{}", text(&out.stderr));
    assert!(polls > 10, "the process list was polled during the run ({polls} times)");
    assert!(seen.is_empty(), "the secret appeared in a process's argv: {seen:?}");
    let stdout = result["stdout"].as_str().unwrap();
    let reversed: String = secret.chars().rev().collect();
    assert!(!stdout.contains(&reversed) && !stdout.contains("dG9rLWFyZ3Yt"), "encoded forms are masked: {stdout}");
    assert!(!stdout.contains("746f6b2d61726776"), "hex is masked: {stdout}");
    assert!(stdout.matches("***").count() >= 3, "{stdout}");
    // Nothing merlya wrote (database, WAL, logs, audit key and checkpoint) holds the value.
    for file in support::walk(&env.merlya_home()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "{} holds the secret", file.display());
    }
}

/// A proven read that elevates runs in the read-only sandbox too, set up as root inside sudo:
/// `sudo git status` would rewrite a root-owned index (a write the proof misses); in the sandbox
/// the write fails and the answer still comes, and `sudo id -u` is still root. With the sandbox
/// off (the control) the index is rewritten.
#[test]
fn an_elevated_read_runs_in_the_read_only_sandbox_as_root() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &["--elevation", "sudo_password"]);
    let dir = tempfile::tempdir().unwrap();
    let (repo, index, stale) = support::repo_with_a_stale_index(dir.path());
    support::set_mode(dir.path(), 0o755);
    let status = format!("sudo git -C {} status --porcelain", repo.display());

    let before = stale();
    let records = exec_with_sudo_password(&env, "web01", TEST_PASSWORD, &[&status, "sudo id -u"]);
    assert_eq!(records[0]["exit_code"], 0, "the diagnostic still works: {records:?}");
    assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), before, "the index was written as root");
    assert_eq!(records[1]["stdout"], "0\n", "still root inside: {records:?}");

    let config = env.merlya_home().join("config.yaml");
    let old = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(&config, format!("{old}\npolicy:\n  readonly_sandbox: off\n")).unwrap();
    let before = stale();
    let records = exec_with_sudo_password(&env, "web01", TEST_PASSWORD, &[&status]);
    assert_eq!(records[0]["exit_code"], 0, "{records:?}");
    assert_ne!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        before,
        "control: without the sandbox git writes"
    );
}
