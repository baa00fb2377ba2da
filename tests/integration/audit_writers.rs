//! Eight processes append 500 audit entries each to one store, through the library's own API: on
//! PostgreSQL and on SQLite the chain ends with 4000 more entries, no fork, no gap, and it verifies.
//! The control: the same eight processes appending with an unlocked read-then-insert into a scratch
//! table without the unique constraints do fork it — the lock is what keeps the chain one.
//!
//! Processes, not tasks: the test re-runs its own binary (`current_exe()`) on its own name with
//! `MERLYA_TEST_WORKER` set; in that mode the test body is one writer and exits.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use merlya::store::Store;
use merlya::store::audit::{AuditOutcome, AuditRequest};

use crate::support::postgres::Postgres;
use crate::support::text;

const WRITERS: usize = 8;
const ENTRIES: usize = 500;

/// What a re-run of this binary does: append through merlya's store, or the unlocked control.
fn worker_mode() -> Option<String> {
    std::env::var("MERLYA_TEST_WORKER").ok()
}

fn request(command: &str) -> AuditRequest {
    AuditRequest::local("writers", "tester", command, "not required", None)
}

/// Opens the store a worker was given: a PostgreSQL URL, else the SQLite file.
async fn open(home: &Path) -> Store {
    let database = home.join("merlya.db");
    match std::env::var("MERLYA_TEST_WORKER_URL") {
        Ok(url) => Store::open_postgres(&database, &url, None).await.expect("open the PostgreSQL store"),
        Err(_) => Store::open(&database).await.expect("open the SQLite store"),
    }
}

/// One writer: 500 entries through the normal append.
fn append_worker(name: &str) {
    let home = std::env::var("MERLYA_TEST_WORKER_HOME").expect("the worker's home");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let store = open(Path::new(&home)).await;
        for i in 0..ENTRIES {
            store
                .audit_refused(&request(&format!("{name} {i}")), AuditOutcome::Refused, "writers test")
                .await
                .unwrap_or_else(|e| panic!("{name}: append {i}: {e}"));
        }
        store.close().await;
    });
}

/// One writer of the control: read the newest row, then insert after it, with no lock between.
fn unlocked_worker(name: &str) {
    let url = std::env::var("MERLYA_TEST_WORKER_URL").expect("the control's database");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let pool = sqlx::postgres::PgPoolOptions::new().max_connections(1).connect(&url).await.expect("connect");
        for i in 0..ENTRIES {
            let last: Option<(i64, String)> =
                sqlx::query_as("SELECT id, hash FROM scratch_chain ORDER BY id DESC LIMIT 1")
                    .fetch_optional(&pool)
                    .await
                    .expect("read the newest row");
            let (id, prev) = last.unwrap_or((0, "genesis".to_string()));
            sqlx::query("INSERT INTO scratch_chain (id, prev_hash, hash) VALUES ($1, $2, $3)")
                .bind(id + 1)
                .bind(&prev)
                .bind(format!("{name}-{i}"))
                .execute(&pool)
                .await
                .expect("insert");
        }
    });
}

/// Starts the eight writers: this binary, on `test`, as workers of `mode`.
fn spawn_writers(test: &str, mode: &str, home: &Path, url: Option<&str>) -> Vec<Child> {
    let exe = std::env::current_exe().expect("the test binary");
    (0..WRITERS)
        .map(|w| {
            let mut command = Command::new(&exe);
            command.args([test, "--exact", "--nocapture", "--test-threads=1"]);
            command.env("MERLYA_TEST_WORKER", mode).env("MERLYA_TEST_WORKER_NAME", format!("w{w}"));
            command.env("MERLYA_TEST_WORKER_HOME", home).env("USER", "tester");
            if let Some(url) = url {
                command.env("MERLYA_TEST_WORKER_URL", url);
            }
            command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start a writer")
        })
        .collect()
}

fn wait_all(children: Vec<Child>) {
    for child in children {
        let out = child.wait_with_output().expect("a writer");
        assert!(out.status.success(), "a writer failed: {}\n{}", text(&out.stdout), text(&out.stderr));
    }
}

/// Runs the worker this process was started as, if it was; true when it was.
fn ran_as_worker() -> bool {
    let Some(mode) = worker_mode() else { return false };
    let name = std::env::var("MERLYA_TEST_WORKER_NAME").unwrap_or_default();
    match mode.as_str() {
        "append" => append_worker(&name),
        "unlocked" => unlocked_worker(&name),
        other => panic!("unknown worker mode {other}"),
    }
    true
}

/// Eight processes on `url` (PostgreSQL) or on the home's SQLite file; the chain after them.
fn eight_processes_keep_one_chain(test: &str, url: Option<&str>) {
    let home = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // The first entry creates the home's audit key, which the writers share.
    let store = runtime.block_on(async {
        let store = match url {
            Some(url) => Store::open_postgres(&home.path().join("merlya.db"), url, None).await.unwrap(),
            None => Store::open(&home.path().join("merlya.db")).await.unwrap(),
        };
        store.audit_refused(&request("seed"), AuditOutcome::Refused, "seed").await.unwrap();
        store.settle_audit().await;
        store
    });
    wait_all(spawn_writers(test, "append", home.path(), url));
    runtime.block_on(async {
        let report = store.verify_audit().await.unwrap();
        assert!(report.broken.is_none(), "{}", report.describe());
        let total = 1 + WRITERS * ENTRIES;
        assert_eq!(report.entries, total);
        let entries = store.audit_entries().await.unwrap();
        let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
        assert_eq!(ids, (1..=i64::try_from(total).unwrap()).collect::<Vec<_>>(), "no gap");
        let mut prev: Vec<&str> = entries.iter().map(|e| e.prev_hash.as_str()).collect();
        prev.sort_unstable();
        prev.dedup();
        assert_eq!(prev.len(), total, "no fork: no two entries follow the same one");
        for w in 0..WRITERS {
            let mine = entries.iter().filter(|e| e.command.starts_with(&format!("w{w} "))).count();
            assert_eq!(mine, ENTRIES, "every entry of writer {w} is in the chain");
        }
        store.close().await;
    });
}

#[test]
fn eight_processes_append_500_entries_each_to_one_postgres_chain() {
    if ran_as_worker() {
        return;
    }
    let pg = Postgres::start();
    pg.value("CREATE DATABASE writers");
    let url = format!("postgres://postgres@127.0.0.1:{}/writers", pg.port);
    eight_processes_keep_one_chain(
        "audit_writers::eight_processes_append_500_entries_each_to_one_postgres_chain",
        Some(&url),
    );
}

#[test]
fn eight_processes_append_500_entries_each_to_one_sqlite_chain() {
    if ran_as_worker() {
        return;
    }
    eight_processes_keep_one_chain("audit_writers::eight_processes_append_500_entries_each_to_one_sqlite_chain", None);
}

#[test]
fn without_the_lock_eight_processes_fork_a_chain() {
    if ran_as_worker() {
        return;
    }
    let pg = Postgres::start();
    let home = tempfile::tempdir().unwrap();
    let mut forks = 0;
    for attempt in 0..3 {
        let database = format!("control{attempt}");
        pg.value(&format!("CREATE DATABASE {database}"));
        let created = pg.psql_on(
            &database,
            "CREATE TABLE scratch_chain (id BIGINT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)",
        );
        assert!(created.status.success(), "{}", text(&created.stderr));
        let url = format!("postgres://postgres@127.0.0.1:{}/{database}", pg.port);
        let test = "audit_writers::without_the_lock_eight_processes_fork_a_chain";
        wait_all(spawn_writers(test, "unlocked", home.path(), Some(&url)));
        let out = pg.psql_on(
            &database,
            "SELECT count(*) FROM (SELECT prev_hash FROM scratch_chain GROUP BY prev_hash HAVING count(*) > 1) AS forked",
        );
        assert!(out.status.success(), "{}", text(&out.stderr));
        forks = text(&out.stdout).trim().parse::<i64>().unwrap();
        let rows = pg.psql_on(&database, "SELECT count(*) FROM scratch_chain");
        assert_eq!(text(&rows.stdout).trim(), (WRITERS * ENTRIES).to_string(), "every insert was stored");
        if forks > 0 {
            break;
        }
    }
    assert!(forks > 0, "eight unlocked writers never forked the chain in three runs: the control proves nothing");
}
