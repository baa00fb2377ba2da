//! Two consoles on one PostgreSQL store (ADR 0032), with a real server: a change made by one
//! operator is on the other's screen without a reload (the store's doorbell), and a server that
//! stops mid-session leaves the console read-only, saying so, until it is back; a command cut off by
//! the stop is a clear error and what was written before it stays.

use std::time::Duration;

use crate::support::postgres::Postgres;
use crate::support::tmux::Tmux;
use crate::support::{TestEnv, text};

fn team(pg: &Postgres, database: &str) -> String {
    pg.value(&format!("CREATE DATABASE {database}"));
    format!("postgres://postgres@127.0.0.1:{}/{database}", pg.port)
}

#[test]
fn a_teammates_change_reaches_the_console_and_a_lost_store_makes_it_read_only_until_back() {
    let pg = Postgres::start();
    let url = team(&pg, "oncall");
    let (alice, bob) = (TestEnv::new(), TestEnv::new());
    // Two homes of one account on one machine: each names its operator (ADR 0032).
    let with_store = format!("MERLYA_STORE_URL='{url}' MERLYA_OPERATOR_NAME=alice");
    let console = Tmux::start_with("team-alice", &alice, &with_store, 130, 30);
    console.wait_for("localhost");

    // Bob adds a host from his own home: it appears in Alice's inventory with no key pressed.
    let added = bob.merlya(&["hosts", "add", "web07", "--hostname", "10.0.0.7"]).env("MERLYA_STORE_URL", &url).output();
    let added = added.expect("run merlya");
    assert!(added.status.success(), "{}", text(&added.stderr));
    console.wait_for("web07");

    // Bob's run in progress shows in Alice's Pipeline pane with its host's state, then its end.
    let mut running = bob
        .merlya(&["exec", "localhost", "--", "sleep 3; echo done"])
        .env("MERLYA_STORE_URL", &url)
        .env("MERLYA_OPERATOR_NAME", "bob")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run merlya");
    console.command(":pipeline");
    console.wait_for("Teammates' runs:");
    console.wait_for("bob $ sleep 3; echo done · 0/1 done, 0 failed ▶ localhost");
    assert!(running.wait().unwrap().success());
    console.wait_for("$ sleep 3; echo done · 1/1 done, 0 failed ✓ localhost");

    // The server goes away: the console says so and refuses to start work it could not audit.
    pg.stop();
    console.wait_for("store unreachable · read-only");
    console.keys(&["!"]);
    console.type_text("uptime");
    console.keys(&["Enter"]);
    console.wait_for("Not started: the store cannot be reached");

    // Back: the console says so, reads everything again (a host added meanwhile by psql shows).
    pg.start_again();
    let rows = pg.psql_on(
        "oncall",
        "INSERT INTO hosts (name, hostname, created_at, updated_at) VALUES ('db09', '10.0.0.9', 'now', 'now')",
    );
    assert!(rows.status.success(), "{}", text(&rows.stderr));
    let status_line = |s: &str| s.lines().rfind(|l| !l.trim().is_empty()).unwrap_or_default().to_string();
    console.wait_until("the store back and db09 listed", |s| {
        !status_line(s).contains("store unreachable") && s.contains("db09")
    });
    console.keys(&["!"]);
    console.type_text("true");
    console.keys(&["Enter"]);
    console.wait_for("1/1 hosts succeeded");
    // Quitting closes the store while the doorbell listens: the console ends.
    console.keys(&["q"]);
    console.wait_for("EXITED 0");
}

#[test]
fn a_command_cut_off_by_a_stopped_store_is_a_clear_error_and_its_start_entry_stays() {
    let pg = Postgres::start();
    let url = team(&pg, "ops");
    let env = TestEnv::new();
    let child = env
        .merlya(&["exec", "localhost", "--", "sleep 2; echo finished"])
        .env("MERLYA_STORE_URL", &url)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run merlya");
    // The start entry is written before the command runs; stop the server while it sleeps.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let started = || {
        let out = pg.psql_on("ops", "SELECT count(*) FROM audit_log WHERE outcome = 'started'");
        text(&out.stdout).trim() == "1"
    };
    while !started() {
        assert!(std::time::Instant::now() < deadline, "the start entry was never written");
        std::thread::sleep(Duration::from_millis(50));
    }
    pg.stop();
    let out = child.wait_with_output().expect("merlya ends");
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "a finish that cannot be recorded is not a success: {said}");
    assert!(said.contains("its outcome could not be written to the audit log"), "{said}");
    assert!(said.contains("cannot be reached") && said.contains("127.0.0.1"), "{said}");

    // Nothing written is lost: the start entry is there, listed as unfinished, and the chain verifies.
    pg.start_again();
    let verified = env.merlya(&["audit", "verify"]).env("MERLYA_STORE_URL", &url).output().expect("run merlya");
    assert!(verified.status.success(), "{}{}", text(&verified.stdout), text(&verified.stderr));
    let listed = env.merlya(&["audit", "list"]).env("MERLYA_STORE_URL", &url).output().expect("run merlya");
    let listed = text(&listed.stdout);
    assert!(listed.contains("unfinished") && listed.contains("sleep 2"), "{listed}");
}

#[test]
fn a_console_open_while_the_chain_is_rewritten_says_audit_rewritten_at_the_next_append() {
    let pg = Postgres::start();
    let url = team(&pg, "rota");
    let run_as = |env: &TestEnv, name: &str, args: &[&str]| {
        let out = env
            .merlya(args)
            .env("MERLYA_STORE_URL", &url)
            .env("MERLYA_OPERATOR_NAME", name)
            .output()
            .expect("run merlya");
        assert!(out.status.success(), "{name} {args:?}: {}", text(&out.stderr));
    };
    let (alice, bob, mallory) = (TestEnv::new(), TestEnv::new(), TestEnv::new());
    for _ in 0..2 {
        run_as(&bob, "bob", &["exec", "localhost", "--", "true"]);
    }
    let extra = format!("MERLYA_STORE_URL='{url}' MERLYA_OPERATOR_NAME=alice");
    let console = Tmux::start_with("team-live-audit", &alice, &extra, 150, 36);
    console.wait_for("localhost");
    // Alice's console verified the chain at start: the head it saw is kept in her home.
    let verified = alice.merlya_home().join("audit.verified");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !verified.exists() {
        assert!(std::time::Instant::now() < deadline, "the console never recorded the head it verified");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The superuser cuts the chain back and a new history is signed on top; each entry is valid.
    let rewrite = "SET session_replication_role = replica;
         DELETE FROM audit_log WHERE id > 2;
         UPDATE audit_head SET last_id = 2, count = 2, hash = (SELECT hash FROM audit_log WHERE id = 2);";
    let out = pg.psql_on("rota", rewrite);
    assert!(out.status.success(), "{}", text(&out.stderr));
    run_as(&mallory, "mallory", &["exec", "localhost", "--", "true"]);
    // The append rings Alice's console, which checks it against the head it verified.
    let screen = console.wait_for("audit rewritten");
    assert!(screen.contains("Audit log:"), "{screen}");
}

#[test]
fn an_always_rule_one_operator_stores_covers_the_same_change_for_a_teammate() {
    let pg = Postgres::start();
    let url = team(&pg, "rules");
    let (alice, bob) = (TestEnv::new(), TestEnv::new());
    let work = tempfile::tempdir().unwrap();
    let (one, two) = (work.path().join("one"), work.path().join("two"));
    // Alice approves `mkdir -p` on localhost "always", on a terminal.
    let first = format!("mkdir -p {}", one.display());
    let env = [("MERLYA_STORE_URL", url.as_str()), ("MERLYA_OPERATOR_NAME", "alice")];
    let screen = alice.answering_on_a_pty(&["exec", "localhost", "--", &first], &env, || {}, "a\n");
    assert!(one.is_dir(), "{}", text(&screen));
    // Bob, on his terminal, runs the same prefix: the team's rule approves it, nobody is asked.
    let second = format!("mkdir -p {}", two.display());
    let env = [("MERLYA_STORE_URL", url.as_str()), ("MERLYA_OPERATOR_NAME", "bob")];
    let screen = text(&bob.on_a_pty(&["exec", "localhost", "--", &second], "", &env));
    assert!(!screen.contains("[o]nce"), "Bob was asked: {screen}");
    assert!(two.is_dir(), "the rule stored by Alice covered Bob's run");
    let approved = pg.value_on("rules", "SELECT approved_by FROM audit_log WHERE signer = 'bob' AND event = 'start'");
    assert!(approved.starts_with("rule #1"), "{approved}");
}
