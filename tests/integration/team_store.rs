//! Operators' homes on one PostgreSQL store (ADR 0032), with a real server from Debian's packages:
//! an inventory change made in one home is read in the other, the audit entries of both operators
//! form one chain with no fork on the server, each signed with its operator's own key and verified in
//! both homes, a history rewritten by the database's superuser is "audit rewritten" in the homes that
//! verified it, and a URL holding a password or naming a server that is down is refused with an
//! error that names it without the password.

use std::process::Output;

use crate::support::postgres::Postgres;
use crate::support::tmux::Tmux;
use crate::support::{TestEnv, text};

fn on(env: &TestEnv, url: &str, args: &[&str]) -> Output {
    env.merlya(args).env("MERLYA_STORE_URL", url).output().expect("run merlya")
}

fn ok(env: &TestEnv, url: &str, args: &[&str]) -> String {
    let out = on(env, url, args);
    assert!(out.status.success(), "merlya {args:?}: {}\n{}", out.status, text(&out.stderr));
    text(&out.stdout)
}

/// `merlya args` in `env`, signing as operator `name`.
fn as_operator(env: &TestEnv, url: &str, name: &str, args: &[&str]) -> Output {
    env.merlya(args).env("MERLYA_STORE_URL", url).env("MERLYA_OPERATOR_NAME", name).output().expect("run merlya")
}

fn ok_as(env: &TestEnv, url: &str, name: &str, args: &[&str]) -> String {
    let out = as_operator(env, url, name, args);
    assert!(out.status.success(), "{name}: merlya {args:?}: {}\n{}", out.status, text(&out.stderr));
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

    // The chain on the server: both operators append, each signing with a key of their own; every
    // entry follows exactly one other, by sequence.
    for _ in 0..2 {
        ok_as(&alice, &url, "alice", &["exec", "localhost", "--", "true"]);
        ok_as(&bob, &url, "bob", &["exec", "localhost", "--", "true"]);
    }
    let count: i64 = pg_value(&pg, "SELECT count(*) FROM audit_log").parse().unwrap();
    for (env, name) in [(&alice, "alice"), (&bob, "bob")] {
        let verified = ok_as(env, &url, name, &["audit", "verify"]);
        let all_signed = format!("{count} entries, {count} signed by their operators (alice, bob");
        assert!(verified.contains(&all_signed), "{name}: {verified}");
    }
    let runs: i64 = pg_value(&pg, "SELECT count(*) FROM audit_log WHERE command = 'true'").parse().unwrap();
    assert_eq!(runs, 8, "four executions, a start and a finish each");
    let signers = pg_value(&pg, "SELECT string_agg(DISTINCT signer, ',') FROM audit_log WHERE command = 'true'");
    assert_eq!(signers, "alice,bob");
    assert_eq!(pg_value(&pg, "SELECT count(*) FROM audit_log WHERE chain <> 'ed25519'"), "0", "every entry signed");
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

    // The private keys stay in their homes: not in the database.
    for env in [&alice, &bob] {
        let key = std::fs::read(env.merlya_home().join("operator.key")).unwrap();
        assert_eq!(key.len(), 32);
        let seed = hex::encode(&key);
        let found = pg_value(
            &pg,
            &format!(
                "SELECT count(*) FROM (SELECT row_to_json(a)::text AS t FROM audit_log a
                 UNION ALL SELECT row_to_json(o)::text FROM operators o) AS rows WHERE t LIKE '%{seed}%'"
            ),
        );
        assert_eq!(found, "0", "a private key reached the database");
    }
    // A third home claiming alice's name with a key of its own is refused, naming her; nothing runs.
    let impostor = TestEnv::new();
    let out = as_operator(&impostor, &url, "alice", &["exec", "localhost", "--", "true"]);
    let err = text(&out.stderr);
    assert!(!out.status.success() && err.contains("\"alice\"") && err.contains("another key"), "{err}");
    assert_eq!(pg_value(&pg, "SELECT count(*) FROM audit_log"), count.to_string());

    // The superuser cuts the chain back and a new history is signed on top (every entry valid): the
    // homes that verified the old head say "audit rewritten" and exit 5.
    let cut = count - 3;
    let rewrite = format!(
        "SET session_replication_role = replica;
         DELETE FROM audit_log WHERE id > {cut};
         UPDATE audit_head SET last_id = {cut}, count = {cut}, hash = (SELECT hash FROM audit_log WHERE id = {cut});"
    );
    let out = pg.psql_on("team", &rewrite);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let carol = TestEnv::new();
    for _ in 0..2 {
        ok_as(&carol, &url, "carol", &["exec", "localhost", "--", "true"]);
    }
    ok_as(&carol, &url, "carol", &["audit", "verify"]);
    // Alice's console says it at start-up, from the head her home verified.
    let extra = format!("MERLYA_STORE_URL='{url}' MERLYA_OPERATOR_NAME=alice");
    let console = Tmux::start_with("team-rewritten", &alice, &extra, 160, 40);
    let screen = console.wait_for("audit rewritten");
    assert!(screen.contains("Audit log:") && screen.contains("FAIL audit"), "{screen}");
    drop(console);
    for (env, name) in [(&alice, "alice"), (&bob, "bob")] {
        let out = as_operator(env, &url, name, &["audit", "verify"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{name}: {err}");
        assert!(err.contains("audit rewritten") && err.contains(&format!("verified entry {count}")), "{name}: {err}");
    }
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
