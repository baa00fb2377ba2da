//! The store on PostgreSQL against SQLite (issue 28, ADR 0032), same machine, same run:
//! - audit appends per second with 8 concurrent writer processes (each opens the store through
//!   merlya's API, waits until all are ready, then appends BENCH_APPENDS entries), and the ratio;
//! - the start of a command that opens the store, `merlya hosts list`, median of BENCH_RUNS runs
//!   (goal: on PostgreSQL within 20 ms of SQLite);
//! - change-notification latency between two stores on one server, as two consoles have it: from a
//!   committed inventory change in one to its doorbell's ring in the other, and to the re-read of the
//!   inventory version that follows (BENCH_RINGS changes; goal ≤ 200 ms on loopback). The console
//!   folds rings for 15 ms more before it re-reads (src/app/store_worker.rs).
//!
//! The PostgreSQL server is a private one from Debian's packages (initdb in a temporary folder, a
//! free loopback port, default settings: fsync and synchronous_commit on), as the tests start.
//! Run: `cargo bench --bench store` (BENCH_APPENDS=500, BENCH_RUNS=21 by default).

#[path = "common/mod.rs"]
mod common;
#[path = "../tests/integration/support/postgres.rs"]
mod postgres;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use merlya::store::Store;
use merlya::store::audit::{AuditOutcome, AuditRequest};

const WRITERS: usize = 8;

fn appends() -> usize {
    std::env::var("BENCH_APPENDS").ok().and_then(|v| v.parse().ok()).unwrap_or(500)
}

fn request(command: &str) -> AuditRequest {
    AuditRequest::local("bench", "bench", command, "not required", None)
}

async fn open(home: &Path, url: Option<&str>) -> Store {
    let database = home.join("merlya.db");
    match url {
        Some(url) => Store::open_postgres(&database, url, None).await.expect("open the PostgreSQL store"),
        None => Store::open(&database).await.expect("open the SQLite store"),
    }
}

/// A writer process: open, say ready, wait for the word, append, close.
fn writer(home: &str, url: Option<String>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let store = open(Path::new(home), url.as_deref()).await;
        println!("ready");
        std::io::stdout().flush().unwrap();
        let mut go = String::new();
        std::io::stdin().read_line(&mut go).unwrap();
        let name = std::process::id();
        for i in 0..appends() {
            store.audit_refused(&request(&format!("{name} {i}")), AuditOutcome::Refused, "bench").await.unwrap();
        }
        store.close().await;
    });
}

/// Appends per second of 8 writer processes on one store (`url`: PostgreSQL, else SQLite).
fn appends_per_second(url: Option<&str>) -> f64 {
    let home = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let store = runtime.block_on(async {
        let store = open(home.path(), url).await;
        store.audit_refused(&request("seed"), AuditOutcome::Refused, "seed").await.unwrap();
        store.settle_audit().await;
        store
    });
    let exe = std::env::current_exe().unwrap();
    let mut children: Vec<_> = (0..WRITERS)
        .map(|_| {
            let mut command = Command::new(&exe);
            command.env("MERLYA_BENCH_WRITER", home.path()).stdin(Stdio::piped()).stdout(Stdio::piped());
            if let Some(url) = url {
                command.env("MERLYA_BENCH_URL", url);
            }
            command.spawn().unwrap()
        })
        .collect();
    for child in &mut children {
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "ready");
    }
    let started = Instant::now();
    for child in &mut children {
        child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a writer failed");
    }
    let elapsed = started.elapsed().as_secs_f64();
    runtime.block_on(async {
        let report = store.verify_audit().await.unwrap();
        assert!(report.broken.is_none(), "{}", report.describe());
        assert_eq!(report.entries, 1 + WRITERS * appends());
        store.close().await;
    });
    (WRITERS * appends()) as f64 / elapsed
}

/// Median wall time of `merlya hosts list` on a home (and a store URL), after one warm-up run.
fn start_time(home: &Path, url: Option<&str>) -> f64 {
    let runs: usize = std::env::var("BENCH_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(21);
    let bin = env!("CARGO_BIN_EXE_merlya");
    let run = || {
        let mut command = Command::new(bin);
        command.args(["hosts", "list"]).env("MERLYA_HOME", home).stdout(Stdio::null()).stderr(Stdio::null());
        if let Some(url) = url {
            command.env("MERLYA_STORE_URL", url);
        }
        let t = Instant::now();
        assert!(command.status().unwrap().success(), "merlya hosts list");
        t.elapsed().as_secs_f64()
    };
    run();
    common::median((0..runs).map(|_| run()).collect())
}

fn main() {
    if let Ok(home) = std::env::var("MERLYA_BENCH_WRITER") {
        writer(&home, std::env::var("MERLYA_BENCH_URL").ok());
        return;
    }
    let pg = postgres::Postgres::start();
    pg.value("CREATE DATABASE appends");
    pg.value("CREATE DATABASE starts");
    pg.value("CREATE DATABASE rings");
    let url = |db: &str| format!("postgres://postgres@127.0.0.1:{}/{db}", pg.port);
    let version = pg.value("SHOW server_version");
    println!("PostgreSQL {version} (private server on loopback), SQLite in WAL mode; {WRITERS} writer processes");

    let sqlite = appends_per_second(None);
    let postgres = appends_per_second(Some(&url("appends")));
    println!("\n{:<44} {:>12}", format!("audit appends, {WRITERS} writers x {}", appends()), "appends/s");
    println!("{:<44} {:>12.0}", "SQLite (merlya.db, BEGIN IMMEDIATE)", sqlite);
    println!("{:<44} {:>12.0}", "PostgreSQL (head row locked per append)", postgres);
    println!("{:<44} {:>12.2}", "PostgreSQL / SQLite", postgres / sqlite);

    let (sqlite_home, pg_home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on_sqlite = start_time(sqlite_home.path(), None);
    let on_postgres = start_time(pg_home.path(), Some(&url("starts")));
    println!("\n{:<44} {:>12}", "merlya hosts list (opens the store), median", "ms");
    println!("{:<44} {:>12.1}", "SQLite", on_sqlite * 1000.0);
    println!("{:<44} {:>12.1}", "PostgreSQL", on_postgres * 1000.0);
    println!("{:<44} {:>12.1}", "difference (goal: within 20 ms)", (on_postgres - on_sqlite) * 1000.0);

    let (ring, reread) = notification_latency(&url("rings"));
    println!("\n{:<44} {:>12}", "change notification between two stores, median / p95", "ms");
    println!("{:<44} {:>5.1} / {:>4.1}", "commit → ring (LISTEN/NOTIFY doorbell)", ring.0, ring.1);
    println!("{:<44} {:>5.1} / {:>4.1}", "commit → ring → inventory re-read", reread.0, reread.1);
    println!("{:<44} {:>12}", "goal", "≤ 200 ms");
}

/// Median and 95th percentile (ms) of commit → ring, and of commit → ring → re-read.
fn notification_latency(url: &str) -> ((f64, f64), (f64, f64)) {
    use merlya::store::doorbell::{Ring, Topic};
    let rings: usize = std::env::var("BENCH_RINGS").ok().and_then(|v| v.parse().ok()).unwrap_or(101);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let writer = open(one.path(), Some(url)).await;
        let reader = open(two.path(), Some(url)).await;
        let mut bell = reader.doorbell().expect("a PostgreSQL store has a doorbell");
        bell.connect().await.expect("listen");
        let (mut ring_ms, mut reread_ms) = (Vec::new(), Vec::new());
        for i in 0..rings {
            let host = merlya::inventory::Host::new(format!("web{i:03}"), "10.0.0.1");
            let t = Instant::now();
            writer.upsert_hosts(&[host]).await.expect("write a host");
            loop {
                match bell.next().await {
                    Ring::Changed(Topic::Inventory) => break,
                    Ring::Changed(_) => {}
                    other => panic!("the doorbell said {other:?}"),
                }
            }
            ring_ms.push(t.elapsed().as_secs_f64() * 1000.0);
            reader.inventory_version().await.expect("re-read");
            reread_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        // The doorbell holds a connection of the reader's pool: let it go before the pool closes.
        drop(bell);
        writer.close().await;
        reader.close().await;
        (median_p95(ring_ms), median_p95(reread_ms))
    })
}

fn median_p95(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95))
}
