//! `merlya exec` and the SSH layer against real OpenSSH daemons on loopback.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use merlya::config::HostKeyPolicy;
use merlya::exec::Executor;
use merlya::exec::fanout::fan_out;
use merlya::i18n::Text;
use merlya::inventory::Host;
use merlya::prompt::{NoPrompter, Prompter};
use support::executor::{cleared, host_for, pooled_executor};
use support::{Sshd, SshdOptions, TEST_PASSWORD, TEST_USER, TestEnv, TestKey, json_lines, text};

#[test]
fn default_key_auth_runs_command_as_the_login_user() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let out = env.run(&["exec", "web01", "--format", "json", "--", "whoami; echo err >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(4), "a non-zero exit makes exec exit 4: {}", text(&out.stderr));
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), 1);
    assert_eq!(records[0]["host"], "web01");
    assert_eq!(records[0]["stdout"], format!("{TEST_USER}\n"));
    assert_eq!(records[0]["stderr"], "err\n");
    assert_eq!(records[0]["exit_code"], 3);
    assert!(records[0]["error"].is_null());
    assert!(records[0]["duration_ms"].is_u64());
}

#[test]
fn host_identity_file_is_used_and_text_output_streams_with_summary() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.trust(&sshd);
    let key_path = key.private.display().to_string();
    env.add_host("web01", &sshd, &["--identity-file", &key_path]);
    let out = env.ok(&["exec", "web01", "--", "echo out; echo warn >&2"]);
    assert!(out.contains("web01 | out\n"), "{out}");
    assert!(out.contains("web01 ! warn\n"), "stderr is marked: {out}");
    assert!(out.contains("HOST   EXIT  DURATION"), "summary table: {out}");
    assert!(out.contains("1/1 hosts succeeded"), "{out}");
}

#[test]
fn agent_auth_works_without_key_files() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.trust(&sshd);
    env.add_host("web01", &sshd, &[]);
    let sock = env.dir.path().join("agent.sock");
    let agent = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut agent = scopeguard(agent);
    for _ in 0..100 {
        if sock.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let added = std::process::Command::new("ssh-add").arg(&key.private).env("SSH_AUTH_SOCK", &sock).output().unwrap();
    assert!(added.status.success(), "{}", text(&added.stderr));
    let out = env.merlya(&["exec", "web01", "--", "echo via-agent"]).env("SSH_AUTH_SOCK", &sock).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("web01 | via-agent"));
    let _ = agent.0.kill();
}

struct Guard(std::process::Child);
impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
fn scopeguard(child: std::process::Child) -> Guard {
    Guard(child)
}

#[test]
fn wrong_key_is_refused_with_what_was_tried() {
    let allowed = TestKey::generate("");
    let other = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&allowed));
    let env = TestEnv::new();
    env.install_default_key(&other);
    env.trust(&sshd);
    env.add_host("web01", &sshd, &[]);
    let out = env.run(&["exec", "web01", "--format", "json", "--", "echo never"]);
    assert_eq!(out.status.code(), Some(4));
    let records = json_lines(&text(&out.stdout));
    let error = records[0]["error"].as_str().unwrap();
    assert!(error.contains("authentication failed for merlyatest@web01"), "{error}");
    assert!(error.contains("id_ed25519"), "names the key tried: {error}");
    assert!(records[0]["exit_code"].is_null());
}

#[test]
fn encrypted_key_without_a_terminal_fails_cleanly() {
    let (_key, _sshd, env) = support::one_trusted_host_with_passphrase("web01", "correct horse", &[]);
    let out = env.run(&["exec", "web01", "--format", "json", "--", "true"]);
    let records = json_lines(&text(&out.stdout));
    let error = records[0]["error"].as_str().unwrap();
    assert!(error.contains("encrypted, no passphrase given"), "{error}");
}

#[test]
fn jump_host_carries_the_connection() {
    let key = TestKey::generate("");
    let bastion = Sshd::start(SshdOptions::allowing(&key));
    let target = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&bastion);
    env.trust(&target);
    env.add_host("bastion", &bastion, &[]);
    env.add_host("inner", &target, &["--jump", "bastion"]);
    let out = env.ok(&["exec", "inner", "--", "echo through"]);
    assert!(out.contains("inner | through"), "{out}");
    assert_eq!(bastion.accepted_logins(), 1, "the bastion saw the jump login:\n{}", bastion.log_text());
    assert_eq!(target.accepted_logins(), 1);

    // A bastion that forbids forwarding cannot carry the connection: proof that the route goes through it.
    let closed = Sshd::start(SshdOptions { allow_forwarding: false, ..SshdOptions::allowing(&key) });
    env.trust(&closed);
    env.add_host("closed-bastion", &closed, &[]);
    env.add_host("inner2", &target, &["--jump", "closed-bastion"]);
    let out = env.run(&["exec", "inner2", "--format", "json", "--", "echo never"]);
    let records = json_lines(&text(&out.stdout));
    let error = records[0]["error"].as_str().unwrap();
    assert!(error.contains("jump host could not open a tunnel"), "{error}");
}

#[test]
fn unknown_host_key_under_each_policy() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.add_host("web01", &sshd, &[]);

    // Without a terminal the default is strict.
    let out = env.run(&["exec", "web01", "--format", "json", "--", "true"]);
    let error = json_lines(&text(&out.stdout))[0]["error"].as_str().unwrap().to_string();
    assert!(error.contains("unknown host key") && error.contains("strict"), "{error}");
    assert!(error.contains("SHA256:"), "shows the fingerprint: {error}");

    // ask with nobody to answer refuses too.
    let out = env
        .merlya(&["exec", "web01", "--format", "json", "--", "true"])
        .env("MERLYA_SSH_HOST_KEY_POLICY", "ask")
        .output()
        .unwrap();
    let error = json_lines(&text(&out.stdout))[0]["error"].as_str().unwrap().to_string();
    assert!(error.contains("refused under host_key_policy ask"), "{error}");

    // accept-new records the key in merlya's known_hosts and connects.
    let out = env
        .merlya(&["exec", "web01", "--", "echo hi"])
        .env("MERLYA_SSH_HOST_KEY_POLICY", "accept-new")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stdout));
    let own = std::fs::read_to_string(env.merlya_home().join("known_hosts")).unwrap();
    assert!(own.contains(&format!("[127.0.0.1]:{}", sshd.port)), "{own}");

    // Now known: strict accepts it.
    env.ok(&["exec", "web01", "--", "true"]);
}

#[test]
fn changed_host_key_is_refused_even_under_accept_new() {
    let key = TestKey::generate("");
    let first = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    // known_hosts holds a different key of the same type for this host and port.
    let impostor = Sshd::start(SshdOptions::allowing(&key));
    let recorded = impostor.known_hosts_line().replace(&impostor.port.to_string(), &first.port.to_string());
    std::fs::write(env.home().join(".ssh/known_hosts"), format!("{recorded}\n")).unwrap();
    env.add_host("web01", &first, &[]);
    let out = env
        .merlya(&["exec", "web01", "--yes", "--format", "json", "--", "touch /tmp/should-not-run"])
        .env("MERLYA_SSH_HOST_KEY_POLICY", "accept-new")
        .output()
        .unwrap();
    let error = json_lines(&text(&out.stdout))[0]["error"].as_str().unwrap().to_string();
    assert!(error.contains("HOST KEY CHANGED"), "{error}");
    assert!(error.contains("known_hosts:1"), "names file and line: {error}");
    assert_eq!(first.accepted_logins(), 0, "no login happened");
}

#[test]
fn fan_out_to_five_daemons_with_a_down_host() {
    let key = TestKey::generate("");
    let daemons: Vec<Sshd> = (0..5).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let env = TestEnv::new();
    env.install_default_key(&key);
    for (i, d) in daemons.iter().enumerate() {
        env.trust(d);
        env.add_host(&format!("node{i}"), d, &["--tag", "fleet"]);
    }
    // A host whose port nobody listens on.
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    env.ok(&["hosts", "add", "down", "--hostname", "127.0.0.1", "--port", &dead_port, "--tag", "fleet"]);
    let out = env.run(&["exec", "@fleet", "--parallel", "3", "--format", "json", "--", "echo 42"]);
    assert_eq!(out.status.code(), Some(4), "one host down makes the run fail");
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), 6);
    for r in records.iter().filter(|r| r["host"] != "down") {
        assert_eq!(r["stdout"], "42\n", "{r}");
        assert_eq!(r["exit_code"], 0);
    }
    let down = records.iter().find(|r| r["host"] == "down").unwrap();
    assert!(down["error"].as_str().unwrap().contains("cannot reach"), "{down}");
    // Every execution is in the history and the audit log.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    let entries: Vec<serde_json::Value> = serde_json::from_str(&audit).unwrap();
    assert_eq!(entries.len(), 6);
    assert!(entries.iter().all(|e| e["command"] == "echo 42" && e["approved_by"] == "not required"));
}

#[test]
fn a_command_that_outlives_the_timeout_is_cut_off() {
    let (_key, _sshd, env) = support::one_trusted_host("slow", &[]);
    let out = env.run(&["exec", "slow,localhost", "--timeout", "1", "--format", "json", "--", "sleep 30"]);
    assert_eq!(out.status.code(), Some(4));
    let records = json_lines(&text(&out.stdout));
    assert_eq!(records.len(), 2);
    for r in &records {
        assert_eq!(r["error"], "timed out after 1s", "{r}");
        assert!(r["duration_ms"].as_u64().unwrap() < 30_000);
    }
    let audit: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--outcome", "timed_out", "--format", "json"])).unwrap();
    assert_eq!(audit.len(), 2, "{audit:?}");
}

fn executor_for(
    key: &TestKey,
    known_hosts: std::path::PathBuf,
    policy: HostKeyPolicy,
    prompter: Arc<dyn Prompter>,
) -> Executor {
    pooled_executor(key, known_hosts, policy, prompter, 50, Duration::from_secs(300))
}

#[tokio::test]
async fn pool_reuses_the_connection_and_redials_a_dead_one() {
    let key = TestKey::generate("");
    let mut sshd = Sshd::start(SshdOptions::allowing(&key));
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line() + "\n").unwrap();
    let executor = executor_for(&key, known, HostKeyPolicy::Strict, Arc::new(NoPrompter));
    let host = host_for("web01", &sshd);
    let tx = merlya::exec::no_events();
    let first = executor.run(&host, &cleared("echo one"), Duration::from_secs(10), &tx).await;
    let second = executor.run(&host, &cleared("echo two"), Duration::from_secs(10), &tx).await;
    assert_eq!((first.stdout.as_str(), second.stdout.as_str()), ("one\n", "two\n"));
    assert_eq!(executor.pool().handshakes(), 1, "the second command rode the pooled connection");
    assert_eq!(sshd.accepted_logins(), 1, "sshd saw one login:\n{}", sshd.log_text());

    // Restart the daemon on the same port with the same key: the pooled connection is dead.
    let options = SshdOptions { host_key: Some(sshd.host_key.clone()), port: Some(sshd.port), ..sshd.options.clone() };
    sshd.stop();
    let restarted = Sshd::start(options);
    let third = executor.run(&host, &cleared("echo three"), Duration::from_secs(10), &tx).await;
    assert!(third.success(), "{third:?}");
    assert_eq!(third.stdout, "three\n");
    assert_eq!(executor.pool().handshakes(), 2, "redialled exactly once");
    assert_eq!(restarted.accepted_logins(), 1);
}

/// A prompter that answers like a person who trusts the key.
struct Yes;
#[async_trait::async_trait]
impl Prompter for Yes {
    async fn confirm(&self, _: &Text, body: &Text) -> bool {
        body.english().contains("SHA256:")
    }
    async fn secret(&self, _: &Text, _: &Text) -> Option<String> {
        None
    }
}

#[tokio::test]
async fn ask_policy_records_the_key_when_the_person_agrees() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    let executor = Arc::new(executor_for(&key, known.clone(), HostKeyPolicy::Ask, Arc::new(Yes)));
    let tx = merlya::exec::no_events();
    let results = fan_out(
        executor,
        vec![host_for("a", &sshd)],
        cleared("echo ok"),
        4,
        Duration::from_secs(10),
        Default::default(),
        tx,
    )
    .await;
    assert!(results[0].success(), "{:?}", results[0]);
    let recorded = std::fs::read_to_string(&known).unwrap();
    assert_eq!(recorded.trim(), sshd.known_hosts_line());
}

#[test]
fn ssh_config_is_honoured_for_hosts_not_in_the_inventory() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.trust(&sshd);
    let config = format!(
        "Host adhoc-box\n  HostName 127.0.0.1\n  Port {}\n  User {TEST_USER}\n  IdentityFile {}\n",
        sshd.port,
        key.private.display()
    );
    std::fs::write(env.home().join(".ssh/config"), config).unwrap();
    let out = env.ok(&["exec", "adhoc-box", "--", "whoami"]);
    assert!(out.contains(&format!("adhoc-box | {TEST_USER}")), "{out}");
    // It is not added to the inventory by being used.
    assert!(!env.ok(&["hosts", "list"]).contains("adhoc-box"));
}

#[test]
fn chained_jump_hosts_are_followed_in_order() {
    let key = TestKey::generate("");
    let outer = Sshd::start(SshdOptions::allowing(&key));
    let inner = Sshd::start(SshdOptions::allowing(&key));
    let target = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    for d in [&outer, &inner, &target] {
        env.trust(d);
    }
    env.add_host("outer", &outer, &[]);
    env.add_host("inner", &inner, &["--jump", "outer"]);
    env.add_host("deep", &target, &["--jump", "inner"]);
    let out = env.ok(&["exec", "deep", "--", "echo three-hops"]);
    assert!(out.contains("deep | three-hops"), "{out}");
    for d in [&outer, &inner, &target] {
        assert_eq!(d.accepted_logins(), 1, "{}", d.log_text());
    }
}

/// A host that logs in and then hangs (its sshd frozen after the login) gives its slot back after
/// the connect timeout, reported as hung, instead of holding it to the run's deadline; the next
/// run dials afresh and healthy hosts are not held up.
#[tokio::test]
async fn a_host_that_hangs_after_login_gives_up_within_the_connect_timeout() {
    let key = TestKey::generate("");
    let daemons: Vec<Sshd> = (0..2).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, daemons.iter().map(|d| d.known_hosts_line() + "\n").collect::<String>()).unwrap();
    let executor = support::executor::pooled_executor_timed(
        &key,
        known,
        HostKeyPolicy::Strict,
        Arc::new(NoPrompter),
        (8, Duration::from_secs(600)),
        Duration::from_secs(1),
    );
    let hosts: Vec<Host> = daemons.iter().enumerate().map(|(i, d)| host_for(&format!("h{i}"), d)).collect();
    let tx = merlya::exec::no_events();
    let probe = cleared("true");
    for host in &hosts {
        let result = executor.run(host, &probe, Duration::from_secs(10), &tx).await;
        assert!(result.success(), "{result:?}");
    }
    let frozen = daemons[0].freeze_connections();
    // The run may take 10 minutes: only the connect phase bounds the wait for a hung host.
    let hung = executor.run(&hosts[0], &probe, Duration::from_secs(600), &tx).await;
    assert_eq!(hung.failure, Some(merlya::exec::HostFailure::Refused), "{hung:?}");
    let said = hung.error.clone().unwrap_or_default();
    assert!(said.contains("did not start the command within 1s") && said.contains("hung"), "{said}");
    let healthy = executor.run(&hosts[1], &probe, Duration::from_secs(10), &tx).await;
    assert!(healthy.success(), "{healthy:?}");
    drop(frozen);
    // The hung connection was dropped, not pooled: the host, alive again, gets a fresh login.
    let again = executor.run(&hosts[0], &probe, Duration::from_secs(10), &tx).await;
    assert!(again.success(), "{again:?}");
    assert_eq!(daemons[0].accepted_logins(), 2, "{}", daemons[0].log_text());
}

#[tokio::test]
async fn pool_evicts_the_least_recently_used_and_closes_idle_connections() {
    let key = TestKey::generate("");
    let daemons: Vec<Sshd> = (0..3).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, daemons.iter().map(|d| d.known_hosts_line() + "\n").collect::<String>()).unwrap();
    let executor =
        pooled_executor(&key, known, HostKeyPolicy::Strict, Arc::new(NoPrompter), 2, Duration::from_millis(400));
    let hosts: Vec<Host> = daemons.iter().enumerate().map(|(i, d)| host_for(&format!("h{i}"), d)).collect();
    let tx = merlya::exec::no_events();
    let probe = cleared("true");
    let run = |i: usize| executor.run(&hosts[i], &probe, Duration::from_secs(10), &tx);
    run(0).await;
    run(1).await;
    run(0).await; // h0 is now the most recently used
    assert_eq!(executor.pool().handshakes(), 2);
    run(2).await; // the pool is full: h1 goes
    assert_eq!(executor.pool().open_connections(), 2);
    run(0).await;
    assert_eq!(executor.pool().handshakes(), 3, "h0 was kept");
    run(1).await;
    assert_eq!(executor.pool().handshakes(), 4, "h1 had been evicted");

    tokio::time::sleep(Duration::from_millis(600)).await;
    executor.pool().reap_idle();
    assert_eq!(executor.pool().open_connections(), 0, "idle connections are closed");
    assert!(run(2).await.success());
    assert_eq!(executor.pool().handshakes(), 5);
}

/// Answers keyboard-interactive prompts like a person typing the password, and remembers what was asked.
struct Typist(std::sync::Mutex<Vec<String>>);
#[async_trait::async_trait]
impl Prompter for Typist {
    async fn confirm(&self, _: &Text, _: &Text) -> bool {
        false
    }
    async fn secret(&self, title: &Text, prompt: &Text) -> Option<String> {
        self.0.lock().unwrap().push(format!("{}: {}", title.english(), prompt.english()));
        Some(TEST_PASSWORD.to_string())
    }
}

#[tokio::test]
async fn key_then_keyboard_interactive_mfa_through_pam() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions { mfa: true, ..SshdOptions::allowing(&key) });
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line() + "\n").unwrap();
    let typist = Arc::new(Typist(std::sync::Mutex::new(Vec::new())));
    let executor = executor_for(&key, known.clone(), HostKeyPolicy::Strict, typist.clone());
    let tx = merlya::exec::no_events();
    let result =
        executor.run(&host_for("mfa", &sshd), &cleared("echo second-factor-ok"), Duration::from_secs(15), &tx).await;
    assert_eq!(result.stdout, "second-factor-ok\n", "{result:?}\n{}", sshd.log_text());
    let asked = typist.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("Password"), "the server's prompt is shown: {asked:?}");
    assert!(sshd.log_text().contains("Accepted keyboard-interactive/pam"), "{}", sshd.log_text());

    // Without a person to answer, the second factor fails cleanly.
    let refused = executor_for(&key, known, HostKeyPolicy::Strict, Arc::new(NoPrompter));
    let result = refused.run(&host_for("mfa", &sshd), &cleared("true"), Duration::from_secs(15), &tx).await;
    assert!(result.error.as_deref().unwrap_or("").contains("keyboard-interactive"), "{result:?}");
}

#[test]
fn encrypted_key_passphrase_comes_from_the_kernel_keyring() {
    let (_key, _sshd, env) = support::one_trusted_host_with_passphrase("locked", "from the keyring", &[]);
    let key_path = env.home().join(".ssh/id_ed25519");
    let secret = format!("ssh-key:{}:passphrase", key_path.display());
    let merlya = env!("CARGO_BIN_EXE_merlya");
    // One session keyring shared by the two merlya processes, as a login session would provide.
    let script = format!(
        "printf '%s\\n' 'from the keyring' | '{merlya}' secret set '{secret}' && '{merlya}' exec locked --format json -- echo keyring-ok"
    );
    let out = env.keyring_session(&script).output().expect("keyctl is installed (scripts/test.sh installs keyutils)");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("stored") && stdout.contains("kernel keyring"), "{stdout}{}", text(&out.stderr));
    let records = json_lines(&stdout);
    assert_eq!(records[0]["stdout"], "keyring-ok\n", "{stdout}");
    // The value is nowhere on disk: not in the database, config or logs.
    for entry in support::walk(&env.merlya_home()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("from the keyring"),
            "{} holds the passphrase",
            entry.display()
        );
    }
}

#[test]
fn exec_of_a_change_needs_an_approval_decision() {
    let (_key, sshd, env) = support::one_trusted_host("web01", &[]);
    let marker = format!("/tmp/merlya-approval-{}", sshd.port);
    let _ = std::fs::remove_file(&marker);
    let touch = format!("touch {marker}");

    // No terminal, no --yes: refused, nothing runs, nothing connects.
    let out = env.run(&["exec", "web01", "--", &touch]);
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out.stderr).contains("was not approved; pass --yes"), "{}", text(&out.stderr));
    assert!(!std::path::Path::new(&marker).exists(), "the command did not run on the host");
    assert_eq!(sshd.accepted_logins(), 0);

    // --yes approves it, and the audit log says who approved.
    env.ok(&["exec", "web01", "--yes", "--", &touch]);
    assert!(std::path::Path::new(&marker).exists(), "the command ran on the host");
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert_eq!(audit.len(), 2, "the denied attempt and the approved run: {audit:?}");
    assert_eq!(
        (audit[0]["outcome"].as_str(), audit[0]["approved_by"].as_str()),
        (Some("denied"), Some("nobody (no terminal)"))
    );
    assert_eq!(audit[1]["outcome"], "ok");
    assert_eq!(audit[1]["approved_by"], "tester (--yes)");
    assert_eq!(audit[1]["address"], "127.0.0.1");
    assert_eq!(audit[1]["port"], sshd.port);
    let _ = std::fs::remove_file(&marker);

    // Paranoid mode asks even for read-only commands.
    let out = env.merlya(&["exec", "web01", "--", "uptime"]).env("MERLYA_POLICY_CONFIRM_ALL", "true").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn detect_elevation_tells_no_sudo_rights_from_sudo_with_a_password() {
    // Two hosts where the same user's password is asked by sudo: on one, the user has sudo rights;
    // on the other, this daemon's sessions see an empty sudoers entry (a private mount), so sudo
    // refuses the user after the password. `sudo -n` answers both the same.
    let key = TestKey::generate("");
    let with_rights = Sshd::start(SshdOptions::allowing(&key));
    let mut options = SshdOptions::allowing(&key);
    options.files.push((format!("/etc/sudoers.d/{TEST_USER}"), "# no sudo rights on this host\n".into()));
    let without = Sshd::start(options);
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&with_rights);
    env.trust(&without);
    // Names of this run's own: the kernel keyring's user keyring outlives a test, so a password
    // stored by an earlier run must not answer for this one.
    let (rights, norights) = (format!("rights{}", with_rights.port), format!("norights{}", without.port));
    env.add_host(&rights, &with_rights, &[]);
    env.add_host(&norights, &without, &[]);
    let merlya = env!("CARGO_BIN_EXE_merlya");

    // Without a password to give, the answer says it is unchecked and how to check it.
    let unchecked = env.keyring_session(&format!("'{merlya}' hosts detect-elevation {norights}")).output().unwrap();
    let shown = text(&unchecked.stdout);
    assert!(shown.contains("sudo_password") && shown.contains("unchecked"), "{shown}{}", text(&unchecked.stderr));
    assert!(shown.contains(&format!("sudo:{norights}:password")), "names the secret to store: {shown}");

    let script = format!(
        "printf '%s\\n' '{pw}' | '{merlya}' secret set sudo:{norights}:password >/dev/null && \
         printf '%s\\n' '{pw}' | '{merlya}' secret set sudo:{rights}:password >/dev/null && \
         '{merlya}' hosts detect-elevation {rights},{norights}",
        pw = TEST_PASSWORD
    );
    let out = env.keyring_session(&script).output().unwrap();
    let shown = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{shown}{}", text(&out.stderr));
    let row = |name: &str| shown.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_default().to_string();
    assert!(row(&norights).contains("none") && row(&norights).contains("no sudo rights"), "{shown}");
    assert!(row(&rights).contains("sudo_password") && row(&rights).contains("(checked)"), "{shown}");
    // What was found is remembered.
    let show: serde_json::Value =
        serde_json::from_str(&env.ok(&["hosts", "show", &norights, "--format", "json"])).unwrap();
    assert_eq!(show["elevation"], "none");
    // Leave no password behind in the user keyring.
    let _ = env
        .keyring_session(&format!(
            "'{merlya}' secret rm sudo:{rights}:password; '{merlya}' secret rm sudo:{norights}:password"
        ))
        .output();
}

#[test]
fn sudo_password_reaches_sudo_on_stdin_and_nowhere_else() {
    let (_key, sshd, env) = support::one_trusted_host("web01", &["--elevation", "sudo_password"]);
    let merlya = env!("CARGO_BIN_EXE_merlya");

    // Detection finds sudo with a password, and remembers it.
    env.ok(&[
        "hosts",
        "add",
        "probe",
        "--hostname",
        "127.0.0.1",
        "--port",
        &sshd.port.to_string(),
        "--user",
        TEST_USER,
    ]);
    let detected = env.ok(&["hosts", "detect-elevation", "probe,localhost"]);
    assert!(detected.contains("probe      sudo_password"), "{detected}");
    assert!(detected.contains("localhost  sudo"), "root on localhost: {detected}");
    let show: serde_json::Value =
        serde_json::from_str(&env.ok(&["hosts", "show", "probe", "--format", "json"])).unwrap();
    assert_eq!(show["elevation"], "sudo_password");

    // A host whose elevation is unknown is probed on its first sudo command, and it is remembered.
    env.ok(&[
        "hosts",
        "add",
        "fresh",
        "--hostname",
        "127.0.0.1",
        "--port",
        &sshd.port.to_string(),
        "--user",
        TEST_USER,
    ]);
    let out = env.run(&["exec", "fresh", "--format", "json", "--", "sudo id -u"]);
    let error = json_lines(&text(&out.stdout))[0]["error"].as_str().unwrap_or("").to_string();
    assert!(error.contains("fresh needs a sudo password"), "detected sudo_password, then asked for it: {error}");
    // The probe went through the one audited door: its row names the script that ran.
    let audit: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let probed = audit
        .iter()
        .any(|e| e["host"] == "fresh" && e["command"].as_str().is_some_and(|c| c.starts_with("if sudo -n true")));
    assert!(probed, "the elevation probe is audited: {audit:?}");
    let show: serde_json::Value =
        serde_json::from_str(&env.ok(&["hosts", "show", "fresh", "--format", "json"])).unwrap();
    assert_eq!(show["elevation"], "sudo_password", "cached on the host");

    // Without the password and without a person: fails at once with the three fixes.
    let logins_before = sshd.accepted_logins();
    let out = env.run(&["exec", "web01", "--format", "json", "--", "sudo id -u"]);
    let records = json_lines(&text(&out.stdout));
    let error = records[0]["error"].as_str().unwrap_or("");
    assert!(error.contains("(1) store it: `merlya secret set sudo:web01:password`"), "{error}");
    assert_eq!(sshd.accepted_logins(), logins_before, "nothing was attempted");

    // A file on the host that holds the password, to show output is masked too.
    let leak_file = format!("/tmp/merlya-pw-{}", sshd.port);
    std::fs::write(&leak_file, format!("{TEST_PASSWORD}\n")).unwrap();
    support::set_mode(std::path::Path::new(&leak_file), 0o644);
    let script = format!(
        "printf '%s\\n' '{TEST_PASSWORD}' | '{merlya}' secret set sudo:web01:password >/dev/null && \
         '{merlya}' exec web01 --format json -- 'sudo id -u; cat {leak_file}'"
    );
    let out = env.keyring_session(&script).output().expect("keyctl (scripts/test.sh installs keyutils)");
    let stdout = text(&out.stdout);
    let records = json_lines(&stdout);
    assert_eq!(records.len(), 1, "{stdout}{}", text(&out.stderr));
    let lines: Vec<&str> = records[0]["stdout"].as_str().unwrap().lines().collect();
    assert_eq!(lines[0], "0", "sudo ran as root with the password from the keyring: {stdout}");
    assert_eq!(lines[1], "***", "the password is masked even when a command prints it");
    assert!(!stdout.contains(TEST_PASSWORD));
    let _ = std::fs::remove_file(&leak_file);

    // The password is in no database row, log line or audit entry.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(!audit.contains(TEST_PASSWORD) && audit.contains("sudo id -u"), "{audit}");
    for file in support::walk(&env.merlya_home()) {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(TEST_PASSWORD), "{} holds the password", file.display());
    }
}

/// `git status` is proven read-only, yet it rewrites `.git/index` when a file only looks changed: a
/// write the proof misses. On a real sshd host (a user without root, so a user namespace), the
/// read-only sandbox makes that write fail while the diagnostic still answers; without it (`off`,
/// the control) the index is rewritten.
#[tokio::test]
async fn a_write_that_slips_past_the_proof_fails_in_the_read_only_sandbox() {
    let key = TestKey::generate("");
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let dir = tempfile::tempdir().unwrap();
    let known = dir.path().join("known_hosts");
    std::fs::write(&known, sshd.known_hosts_line() + "\n").unwrap();
    let (repo, index, stale) = support::repo_with_a_stale_index(dir.path());
    support::give_to_test_user(dir.path());
    let host = host_for("web01", &sshd);
    let tx = merlya::exec::no_events();
    let status = cleared(&format!("git -C {} status --porcelain", repo.display()));

    let sandboxed = executor_for(&key, known.clone(), HostKeyPolicy::Strict, Arc::new(NoPrompter));
    assert_eq!(sandboxed.readonly_sandbox(), merlya::exec::sandbox::SandboxMode::Prefer, "the default");
    let before = stale();
    let result = sandboxed.run(&host, &status, Duration::from_secs(20), &tx).await;
    assert!(result.success(), "the diagnostic still works: {result:?}");
    assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), before, "the index was written");
    let df = sandboxed.run(&host, &cleared("df -h / && id -un"), Duration::from_secs(20), &tx).await;
    assert!(df.success() && df.stdout.contains(TEST_USER), "reads work, as the login user: {df:?}");

    let plain = executor_for(&key, known, HostKeyPolicy::Strict, Arc::new(NoPrompter))
        .with_readonly_sandbox(merlya::exec::sandbox::SandboxMode::Off);
    let before = stale();
    let result = plain.run(&host, &status, Duration::from_secs(20), &tx).await;
    assert!(result.success(), "{result:?}");
    assert_ne!(
        std::fs::metadata(&index).unwrap().modified().unwrap(),
        before,
        "control: without the sandbox git writes"
    );
}
