//! Operators' homes on one PostgreSQL store (ADR 0032), with a real server from Debian's packages:
//! an inventory change made in one home is read in the other, the audit entries form one chain
//! with no fork on the server, and a URL holding a password or naming a server that is down is refused
//! with an error that names it without the password.

use std::process::Output;

use crate::support::postgres::Postgres;
use crate::support::{TestEnv, text};

fn on(env: &TestEnv, url: &str, args: &[&str]) -> Output {
    env.merlya(args).env("MERLYA_STORE_URL", url).output().expect("run merlya")
}

fn ok(env: &TestEnv, url: &str, args: &[&str]) -> String {
    let out = on(env, url, args);
    assert!(out.status.success(), "merlya {args:?}: {}\n{}", out.status, text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn two_homes_on_one_postgres_share_the_inventory_and_the_chain_is_kept_by_the_server() {
    let pg = Postgres::start();
    pg.value("CREATE DATABASE team");
    let url = format!("postgres://postgres@127.0.0.1:{}/team", pg.port);
    let (alice, bob) = (TestEnv::new(), TestEnv::new());
    ok(&alice, &url, &["hosts", "add", "web01", "--hostname", "10.0.0.5", "--tag", "web"]);
    let listed = ok(&bob, &url, &["hosts", "list"]);
    assert!(listed.contains("web01") && listed.contains("localhost"), "{listed}");
    ok(&bob, &url, &["hosts", "tag", "web01", "prod"]);
    let shown = ok(&alice, &url, &["hosts", "show", "web01", "--format", "json"]);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(shown["tags"], serde_json::json!(["prod", "web"]));
    assert!(!alice.merlya_home().join("merlya.db").exists(), "no SQLite file beside a PostgreSQL store");

    // The chain on the server: every entry follows exactly one other, by sequence. (Entries signed by
    // each operator's own key, so several homes append to one chain, are the next step: ADR 0032.)
    for _ in 0..3 {
        ok(&alice, &url, &["exec", "localhost", "--", "true"]);
    }
    ok(&alice, &url, &["audit", "verify"]);
    let count: i64 = pg_value(&pg, "SELECT count(*) FROM audit_log").parse().unwrap();
    let runs: i64 = pg_value(&pg, "SELECT count(*) FROM audit_log WHERE command = 'true'").parse().unwrap();
    assert_eq!(runs, 6, "three executions, a start and a finish each");
    let linked: i64 =
        pg_value(&pg, "SELECT count(*) FROM audit_log a JOIN audit_log b ON b.id = a.id + 1 AND b.prev_hash = a.hash")
            .parse()
            .unwrap();
    assert_eq!(linked, count - 1, "each entry after the first follows the one before it");
    let head = pg_value(&pg, "SELECT last_id || ' ' || count FROM audit_head");
    assert_eq!(head, format!("{count} {count}"));
    // The log stays append-only for the database's own users too.
    let refused = pg.psql_on("team", "UPDATE audit_log SET command = 'x'");
    assert!(!refused.status.success() && text(&refused.stderr).contains("append-only"), "{}", text(&refused.stderr));
}

/// A value from the `team` database.
fn pg_value(pg: &Postgres, sql: &str) -> String {
    let out = pg.psql_on("team", sql);
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    text(&out.stdout).trim().to_string()
}

#[test]
fn a_password_in_the_url_or_a_server_that_is_down_is_a_clear_error() {
    let env = TestEnv::new();
    let out = on(&env, "postgres://ops:hunter2@127.0.0.1:5/team", &["hosts", "list"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("MERLYA_STORE_URL") && err.contains("store.password") && err.contains("***"), "{err}");
    assert!(!err.contains("hunter2"), "the password is never shown: {err}");

    let port = crate::support::sshd::free_port();
    let down = format!("postgres://ops@127.0.0.1:{port}/team");
    let out = on(&env, &down, &["hosts", "list"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot be reached") && err.contains(&down), "names the store: {err}");
}
