//! `merlya store migrate --to postgres://…` with the real binary and a real PostgreSQL (ADR 0032):
//! a home's hosts, rules, executions and a change are copied into a new database, the audit chain
//! verifies there with the same hashes and the old head pinned, a teammate's home sees the inventory,
//! a database that already holds something is refused and left unchanged, and a server that is down
//! or a URL holding a password is named without the password.

use std::process::Output;

use crate::support::postgres::Postgres;
use crate::support::{TestEnv, text};

fn on(env: &TestEnv, url: &str, args: &[&str]) -> Output {
    env.merlya(args).env("MERLYA_STORE_URL", url).output().expect("run merlya")
}

fn ok_on(env: &TestEnv, url: &str, args: &[&str]) -> String {
    let out = on(env, url, args);
    assert!(out.status.success(), "merlya {args:?}: {}\n{}", out.status, text(&out.stderr));
    text(&out.stdout)
}

/// A value from `database`.
fn value(pg: &Postgres, database: &str, sql: &str) -> String {
    let out = pg.psql_on(database, sql);
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

/// Adds an "always allow" rule the way the console stores one (the CLI has no command for it).
fn add_rule(env: &TestEnv, prefix: &str) {
    let db = env.merlya_home().join("merlya.db");
    let insert = format!(
        "import sqlite3; c = sqlite3.connect('{}'); c.execute(\"INSERT INTO approval_rules (prefix, hosts, created_by, created_at) VALUES (?, 'web01', 'tester', '2026-11-27T00:00:00Z')\", ('{prefix}',)); c.commit()",
        db.display()
    );
    let status = std::process::Command::new("python3").args(["-c", &insert]).status().expect("python3");
    assert!(status.success(), "insert a rule");
}

#[test]
fn a_home_migrates_into_a_new_database_and_its_chain_verifies_there_identically() {
    let pg = Postgres::start();
    pg.value("CREATE DATABASE team");
    pg.value("CREATE DATABASE other");
    let url = format!("postgres://postgres@127.0.0.1:{}/team", pg.port);
    let alice = TestEnv::new();
    alice.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.5", "--tag", "web", "--tag", "prod"]);
    alice.ok(&["hosts", "add", "db01", "--hostname", "10.0.0.6", "--port", "2222"]);
    add_rule(&alice, "systemctl restart nginx");
    for _ in 0..2 {
        alice.ok(&["exec", "localhost", "--", "true"]);
    }
    let marker = alice.dir.path().join("changed");
    let touch = format!("touch {}", marker.display());
    alice.ok(&["pipeline", "run", "bash", "--targets", "localhost", "--yes", "--", &touch]);
    assert!(marker.exists(), "the change ran");
    let exported = alice.ok(&["audit", "export", "--format", "jsonl"]);
    let before: Vec<&str> = exported.lines().collect();
    assert!(before.len() >= 6, "{exported}");
    let changes = alice.ok(&["pipeline", "list", "--format", "json"]);

    let out = alice.run(&["store", "migrate", "--to", &url]);
    let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{said}");
    assert!(said.contains("pinned in the new chain") && said.contains("audit chain intact"), "{said}");

    // Every row, with its id; the identity sequences past them; the chain and its head as they were,
    // then the migration's own entries naming the old head.
    assert_eq!(value(&pg, "team", "SELECT string_agg(name, ',' ORDER BY id) FROM hosts"), "localhost,web01,db01");
    assert_eq!(value(&pg, "team", "SELECT string_agg(tag, ',' ORDER BY tag) FROM host_tags"), "prod,web");
    assert_eq!(value(&pg, "team", "SELECT prefix FROM approval_rules"), "systemctl restart nginx");
    assert_eq!(value(&pg, "team", "SELECT count(*) FROM pipeline_runs"), "1");
    let entries: usize = value(&pg, "team", "SELECT count(*) FROM audit_log").parse().unwrap();
    assert_eq!(entries, before.len() + 2, "the copied entries and the migration's start and finish");
    let head = value(&pg, "team", "SELECT last_id || ' ' || count FROM audit_head");
    assert_eq!(head, format!("{entries} {entries}"));
    let pin = value(&pg, "team", &format!("SELECT reason FROM audit_log WHERE id = {entries}"));
    let old_hash = serde_json::from_str::<serde_json::Value>(before[before.len() - 1]).unwrap()["hash"].clone();
    assert!(pin.contains("store migrated from") && pin.contains(old_hash.as_str().unwrap()), "{pin}");
    assert!(pin.contains(&format!("of {}", before.len())), "{pin}");

    // From this home on the team store: the same entries with the same hashes, and all of it verifies.
    let there = ok_on(&alice, &url, &["audit", "export", "--format", "jsonl"]);
    let there: Vec<&str> = there.lines().collect();
    assert_eq!(&there[..before.len()], &before[..], "the copied entries are the same rows");
    let verified = ok_on(&alice, &url, &["audit", "verify"]);
    assert!(verified.contains("intact"), "{verified}");
    assert_eq!(ok_on(&alice, &url, &["pipeline", "list", "--format", "json"]), changes);
    ok_on(&alice, &url, &["exec", "localhost", "--", "true"]);
    assert!(ok_on(&alice, &url, &["audit", "verify"]).contains("intact"));

    // A teammate's home sees the inventory and the rules, and adds a host past the copied ids.
    let bob = TestEnv::new();
    let listed = ok_on(&bob, &url, &["hosts", "list"]);
    assert!(listed.contains("web01") && listed.contains("db01"), "{listed}");
    assert!(ok_on(&bob, &url, &["approvals", "list"]).contains("systemctl restart nginx"));
    ok_on(&bob, &url, &["hosts", "add", "cache01", "--hostname", "10.0.0.7"]);
    assert_eq!(value(&pg, "team", "SELECT id FROM hosts WHERE name = 'cache01'"), "4");

    // A database that holds anything is refused and left as it was.
    let rows =
        |db: &str| value(&pg, db, "SELECT (SELECT count(*) FROM hosts) || ' ' || (SELECT count(*) FROM audit_log)");
    let team_before = rows("team");
    let out = alice.run(&["store", "migrate", "--to", &url]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not empty") && err.contains(&url) && err.contains("left unchanged"), "{err}");
    assert_eq!(rows("team"), team_before, "nothing was written");
    // A teammate who only added a host to a new database: refused too, naming what is there.
    let other = format!("postgres://postgres@127.0.0.1:{}/other", pg.port);
    ok_on(&bob, &other, &["hosts", "add", "x01", "--hostname", "10.0.0.9"]);
    let out = alice.run(&["store", "migrate", "--to", &other]);
    let err = text(&out.stderr);
    assert!(err.contains("hosts: 1 rows") && err.contains("not empty"), "{err}");
    assert_eq!(value(&pg, "other", "SELECT count(*) FROM hosts"), "2");

    // A failure mid-copy (a value the target's column cannot hold) leaves the new database empty.
    pg.value("CREATE DATABASE third");
    let third = format!("postgres://postgres@127.0.0.1:{}/third", pg.port);
    let carol = TestEnv::new();
    carol.ok(&["exec", "localhost", "--", "true"]);
    let db = carol.merlya_home().join("merlya.db");
    let insert = format!(
        "import sqlite3; c = sqlite3.connect('{}'); c.execute(\"INSERT INTO hosts (name, hostname, port, elevation, created_at, updated_at) VALUES ('odd', 'h', 'twenty-two', 'none', 'now', 'now')\"); c.commit()",
        db.display()
    );
    assert!(std::process::Command::new("python3").args(["-c", &insert]).status().unwrap().success());
    let out = carol.run(&["store", "migrate", "--to", &third]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("hosts.port") && err.contains("nothing was copied"), "{err}");
    assert_eq!(rows("third"), "1 0", "only the new database's localhost, no audit entry");
}

#[test]
fn a_migration_to_a_server_that_is_down_or_a_url_with_a_password_names_it_without_the_password() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.5"]);
    let out = env.run(&["store", "migrate", "--to", "postgres://ops:hunter2@127.0.0.1:5/team"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("store.password") && err.contains("ops:***@127.0.0.1:5/team"), "{err}");
    assert!(!err.contains("hunter2"), "the password is never shown: {err}");

    let port = crate::support::sshd::free_port();
    let down = format!("postgres://ops@127.0.0.1:{port}/team");
    let out = env.run(&["store", "migrate", "--to", &down]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot be reached") && err.contains(&down), "names the store: {err}");
    let out = env.run(&["store", "migrate", "--to", "sqlite:///tmp/elsewhere.db"]);
    assert!(text(&out.stderr).contains("postgres://"), "{}", text(&out.stderr));
    // The source is untouched by a refused migration.
    assert!(env.ok(&["audit", "verify"]).contains("intact"));
}
