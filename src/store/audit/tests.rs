//! Each tampering of the audit log, done to a real SQLite file through a
//! separate connection (as an attacker with write access to merlya.db would),
//! must be named by `verify_audit`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sqlx::Connection;

use super::keys::AuditKey;
use super::*;
use crate::store::db::sqlite_query;

struct Fixture {
    _dir: tempfile::TempDir,
    db: PathBuf,
    store: Store,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("home").join("merlya.db");
    let store = Store::open(&db).await.unwrap();
    Fixture { _dir: dir, db, store }
}

/// A request as a person at a console makes it (shared with the backend tests).
pub(crate) fn request(host: &str, command: &str) -> AuditRequest {
    AuditRequest {
        session_id: "s1".into(),
        requested_by: "alice".into(),
        host: host.into(),
        address: "10.0.0.1".into(),
        port: Some(2222),
        login_user: "deploy".into(),
        command: command.into(),
        approved_by: "alice (prompt)".into(),
        approval_ref: None,
    }
}

/// Three executions: six entries (start + finish each).
async fn three_runs(store: &Store) {
    for i in 0..3 {
        let ticket = store.audit_start(request("web01", &format!("echo {i}"))).await.unwrap();
        ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    }
    store.settle_audit().await;
}

/// A raw connection to the database file, with the append-only triggers dropped.
async fn attacker(db: &Path) -> sqlx::SqliteConnection {
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.unwrap();
    for sql in ["DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"] {
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }
    conn
}

async fn exec(db: &Path, sql: &str) {
    let mut conn = attacker(db).await;
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

/// Rewrites every row with a consistent chain computed by `hash`, and the
/// head in `audit_head` to match: what someone without the key can do.
async fn recompute(f: &Fixture, chain: &str, hash: impl Fn(&AuditEntry, &str) -> String) {
    let entries = f.store.audit_entries().await.unwrap();
    let mut conn = attacker(&f.db).await;
    sqlx::query("DELETE FROM audit_log").execute(&mut conn).await.unwrap();
    let mut prev = GENESIS.to_string();
    for mut e in entries.clone() {
        e.chain = chain.to_string();
        e.prev_hash = prev.clone();
        e.hash = hash(&e, &prev);
        sqlite_query(insert(&e, INSERT_ENTRY)).execute(&mut conn).await.unwrap();
        prev = e.hash.clone();
    }
    let last = entries.last().unwrap().id;
    sqlx::query("UPDATE audit_head SET hash = ?, last_id = ?").bind(&prev).bind(last).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
}

async fn broken(store: &Store) -> BrokenLink {
    let report = store.verify_audit().await.unwrap();
    report.broken.clone().unwrap_or_else(|| panic!("tampering not detected: {}", report.describe()))
}

#[tokio::test]
async fn an_intact_chain_matches_the_checkpoint() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let report = f.store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert_eq!((report.entries, report.keyed, report.beyond_checkpoint), (6, 6, 0));
    let text = report.describe();
    assert!(
        text.contains("audit chain intact: 6 entries") && text.contains("matches the checkpoint written at"),
        "{text}"
    );
    let entries = f.store.audit_entries().await.unwrap();
    assert_eq!(entries[1].ref_id, Some(entries[0].id), "the finish names its start");
    assert_eq!(entries[0].chain, CHAIN_HMAC);
    assert_eq!(
        (entries[0].address.as_str(), entries[0].port, entries[0].login_user.as_str()),
        ("10.0.0.1", Some(2222), "deploy")
    );
}

#[tokio::test]
async fn an_edited_row_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    exec(&f.db, "UPDATE audit_log SET command = 'echo innocent' WHERE id = 3").await;
    let b = broken(&f.store).await;
    assert_eq!(b.id, 3);
    assert!(b.reason.contains("altered"), "{}", b.reason);
}

#[tokio::test]
async fn a_deleted_middle_row_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    exec(&f.db, "DELETE FROM audit_log WHERE id = 3").await;
    let b = broken(&f.store).await;
    assert_eq!(b.id, 4);
    assert!(b.reason.contains("removed"), "{}", b.reason);
}

#[tokio::test]
async fn an_appended_forged_row_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let mut forged = f.store.audit_entries().await.unwrap().pop().unwrap();
    forged.prev_hash = forged.hash.clone();
    forged.id += 1;
    forged.command = "echo forged".into();
    forged.hash = forged.legacy_hash(&forged.prev_hash);
    let mut conn = attacker(&f.db).await;
    sqlite_query(insert(&forged, INSERT_ENTRY)).execute(&mut conn).await.unwrap();
    sqlx::query("UPDATE audit_head SET hash = ?, last_id = ?, count = count + 1")
        .bind(&forged.hash)
        .bind(forged.id)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let b = broken(&f.store).await;
    assert_eq!(b.id, 7);
    assert!(b.reason.contains("forged"), "{}", b.reason);
}

#[tokio::test]
async fn a_chain_recomputed_with_plain_sha256_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    recompute(&f, CHAIN_HMAC, |e, prev| e.legacy_hash(prev)).await;
    let b = broken(&f.store).await;
    assert_eq!(b.id, 1);
    assert!(b.reason.contains("recomputed without the key"), "{}", b.reason);
}

#[tokio::test]
async fn a_chain_relabelled_as_unkeyed_and_recomputed_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    recompute(&f, CHAIN_SHA256, |e, prev| e.legacy_hash(prev)).await;
    let b = broken(&f.store).await;
    assert!(b.reason.contains("differs from the checkpoint"), "{}", b.reason);
}

#[tokio::test]
async fn a_chain_recomputed_with_another_key_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let other = AuditKey::from_bytes([7; 32]);
    recompute(&f, CHAIN_HMAC, |e, prev| e.keyed_hash(&other, prev)).await;
    let b = broken(&f.store).await;
    assert_eq!(b.id, 1);
    assert!(b.reason.contains("another key"), "{}", b.reason);
}

#[tokio::test]
async fn a_checkpoint_signed_with_another_key_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let other = AuditKey::from_bytes([7; 32]);
    let fake = keys::Checkpoint::signed(&other, 99, GENESIS, 99);
    std::fs::write(f.store.audit.checkpoint_path(), serde_json::to_string(&fake).unwrap()).unwrap();
    let b = broken(&f.store).await;
    assert!(b.reason.contains("forged or written with another key"), "{}", b.reason);
}

#[tokio::test]
async fn wiping_the_tables_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    exec(&f.db, "DELETE FROM audit_log").await;
    exec(&f.db, "DELETE FROM audit_head").await;
    let b = broken(&f.store).await;
    assert!(b.reason.contains("wiped") && b.reason.contains("names 6 entries"), "{}", b.reason);
}

#[tokio::test]
async fn truncating_the_newest_rows_is_detected_even_with_the_head_fixed() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let entries = f.store.audit_entries().await.unwrap();
    exec(&f.db, "DELETE FROM audit_log WHERE id > 4").await;
    exec(&f.db, &format!("UPDATE audit_head SET last_id = 4, count = 4, hash = '{}'", entries[3].hash)).await;
    let b = broken(&f.store).await;
    assert_eq!(b.id, 6);
    assert!(b.reason.contains("newest entries were removed"), "{}", b.reason);
}

#[tokio::test]
async fn a_missing_key_or_checkpoint_is_detected_and_no_new_chain_is_started() {
    let f = fixture().await;
    three_runs(&f.store).await;
    std::fs::remove_file(f.store.audit.checkpoint_path()).unwrap();
    assert!(broken(&f.store).await.reason.contains("audit.checkpoint is missing"));

    let f = fixture().await;
    three_runs(&f.store).await;
    std::fs::remove_file(f.store.audit.key_path()).unwrap();
    let reopened = Store::open(&f.db).await.unwrap();
    assert!(broken(&reopened).await.reason.contains("audit.key is missing"));
    let refused = reopened.audit_start(request("web01", "echo after")).await;
    assert!(refused.is_err(), "no new key over a keyed log");
    assert!(!f.store.audit.key_path().exists());
}

#[tokio::test]
async fn a_lagging_checkpoint_is_accepted_and_said() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let saved = std::fs::read(f.store.audit.checkpoint_path()).unwrap();
    let ticket = f.store.audit_start(request("web01", "uptime")).await.unwrap();
    ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    f.store.settle_audit().await;
    // A writer killed between its commit and its checkpoint.
    std::fs::write(f.store.audit.checkpoint_path(), saved).unwrap();
    let report = f.store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert_eq!(report.beyond_checkpoint, 2);
}

#[tokio::test]
async fn a_start_without_a_finish_is_listed_as_unfinished() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let ticket = f.store.audit_start(request("db01", "systemctl restart postgresql")).await.unwrap();
    let id = ticket.id();
    drop(ticket);
    let unfinished = f
        .store
        .list_audit(&AuditFilter { outcome: Some(AuditOutcome::Unfinished), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!((unfinished[0].id, unfinished[0].host.as_str()), (id, "db01"));
    assert_eq!(unfinished[0].finished_id, None);
    let report = f.store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None);
    assert_eq!(report.unfinished, vec![id]);
    assert!(report.describe().contains("unfinished"), "{}", report.describe());
    let ok = f.store.list_audit(&AuditFilter { outcome: Some(AuditOutcome::Ok), ..Default::default() }).await.unwrap();
    assert_eq!(ok.len(), 3);
    assert!(ok.iter().all(|r| r.finished_id.is_some()));
}

#[tokio::test]
async fn refused_denied_and_timed_out_attempts_are_recorded() {
    let f = fixture().await;
    f.store.audit_refused(&request("web01", "rm -rf /"), AuditOutcome::Refused, "rm: deletes files").await.unwrap();
    f.store.audit_refused(&request("web01", "reboot"), AuditOutcome::Denied, "denied by alice").await.unwrap();
    let ticket = f.store.audit_start(request("web01", "sleep 100")).await.unwrap();
    ticket.finish(AuditOutcome::TimedOut, Some(143), Some("timed out after 1s".into())).await.unwrap();
    let all = f.store.list_audit(&AuditFilter::default()).await.unwrap();
    let outcomes: Vec<_> = all.iter().map(|r| r.outcome).collect();
    assert_eq!(outcomes, [AuditOutcome::Refused, AuditOutcome::Denied, AuditOutcome::TimedOut]);
    assert_eq!(all[0].reason.as_deref(), Some("rm: deletes files"));
    assert_eq!(all[2].exit_code, Some(143), "a late exit code is kept");
    let json = serde_json::to_value(&all[2]).unwrap();
    assert_eq!(json["outcome"], "timed_out");
    assert_eq!(f.store.verify_audit().await.unwrap().broken, None);
}

/// Rows as an older merlya wrote them: plain SHA-256, no key, no checkpoint.
async fn legacy_rows(f: &Fixture, n: i64) {
    let mut conn = attacker(&f.db).await;
    let mut prev = GENESIS.to_string();
    for id in 1..=n {
        let mut e = AuditEntry {
            id,
            ts: format!("2026-11-20T10:00:0{id}.000Z"),
            session_id: "old".into(),
            event: AuditEvent::Legacy,
            outcome: AuditOutcome::Ok,
            ref_id: None,
            requested_by: String::new(),
            user: "alice".into(),
            login_user: String::new(),
            host: "web01".into(),
            address: String::new(),
            port: None,
            command: format!("echo {id}"),
            exit_code: Some(0),
            duration_ms: 5,
            approved_by: "not required".into(),
            approval_ref: None,
            reason: None,
            chain: CHAIN_SHA256.into(),
            prev_hash: prev.clone(),
            hash: String::new(),
            signer: None,
            signature: None,
        };
        e.hash = e.legacy_hash(&prev);
        sqlx::query(
            "INSERT INTO audit_log (id, ts, session_id, host, user, command, exit_code, duration_ms, approved_by, prev_hash, hash)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(e.id)
        .bind(&e.ts)
        .bind(&e.session_id)
        .bind(&e.host)
        .bind(&e.user)
        .bind(&e.command)
        .bind(e.exit_code)
        .bind(e.duration_ms)
        .bind(&e.approved_by)
        .bind(&e.prev_hash)
        .bind(&e.hash)
        .execute(&mut conn)
        .await
        .unwrap();
        prev = e.hash;
    }
    sqlx::query("INSERT INTO audit_head (id, last_id, hash, count) VALUES (1, ?, ?, ?)")
        .bind(n)
        .bind(&prev)
        .bind(n)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
}

#[tokio::test]
async fn an_unkeyed_log_is_rebased_honestly_and_pinned_from_then_on() {
    let f = fixture().await;
    legacy_rows(&f, 3).await;
    let before = f.store.verify_audit().await.unwrap();
    assert_eq!(before.broken, None);
    assert!(before.describe().contains("UNKEYED"), "{}", before.describe());
    assert_eq!(f.store.list_audit(&AuditFilter::default()).await.unwrap()[0].outcome, AuditOutcome::Ok);

    let ticket = f.store.audit_start(request("web01", "uptime")).await.unwrap();
    ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    let after = f.store.verify_audit().await.unwrap();
    assert_eq!(after.broken, None, "{}", after.describe());
    assert_eq!((after.legacy, after.keyed, after.rebased_at), (3, 3, Some(4)));
    assert!(after.describe().contains("re-based at entry 4"), "{}", after.describe());
    let rebase = &f.store.audit_entries().await.unwrap()[3];
    assert_eq!(rebase.event, AuditEvent::Rebase);
    assert!(rebase.reason.as_deref().unwrap_or_default().contains("re-based 3 unkeyed"));

    // From the re-base on, even the unkeyed rows are pinned.
    exec(&f.db, "UPDATE audit_log SET command = 'echo other' WHERE id = 2").await;
    assert_eq!(broken(&f.store).await.id, 2);
}

#[tokio::test]
async fn an_unkeyed_row_after_the_keyed_chain_is_detected() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let mut forged = f.store.audit_entries().await.unwrap().pop().unwrap();
    forged.prev_hash = forged.hash.clone();
    forged.id += 1;
    forged.chain = CHAIN_SHA256.into();
    forged.hash = forged.legacy_hash(&forged.prev_hash);
    let mut conn = attacker(&f.db).await;
    sqlite_query(insert(&forged, INSERT_ENTRY)).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    let b = broken(&f.store).await;
    assert_eq!(b.id, 7);
    assert!(b.reason.contains("unkeyed entry after the keyed chain"), "{}", b.reason);
}

#[tokio::test]
async fn the_log_is_append_only_for_ordinary_sql() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let updated = query("UPDATE audit_log SET command = 'x'").execute(f.store.pool()).await;
    assert!(updated.is_err());
    let deleted = query("DELETE FROM audit_log").execute(f.store.pool()).await;
    assert!(deleted.is_err());
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

#[tokio::test]
async fn database_key_and_checkpoint_are_private() {
    let f = fixture().await;
    three_runs(&f.store).await;
    let home = f.db.parent().unwrap();
    assert_eq!(mode(home), 0o700, "a folder the store creates is private");
    for file in [
        f.db.clone(),
        crate::store::wal_path(&f.db),
        crate::store::shm_path(&f.db),
        f.db.with_extension("db.lock"),
        home.join("audit.key"),
        home.join("audit.checkpoint"),
    ] {
        assert_eq!(mode(&file), 0o600, "{}", file.display());
    }
    assert_eq!(std::fs::read(home.join("audit.key")).unwrap().len(), 32);
}

#[tokio::test]
async fn an_older_world_readable_database_is_narrowed() {
    let f = fixture().await;
    f.store.close().await;
    std::fs::set_permissions(&f.db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let _store = Store::open(&f.db).await.unwrap();
    assert_eq!(mode(&f.db), 0o600);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_first_appends_share_one_key() {
    for _ in 0..5 {
        let f = fixture().await;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..8 {
            let store = f.store.clone();
            // Separate stores on one file too, as separate processes would be.
            let other = Store::open(&f.db).await.unwrap();
            tasks.spawn(async move {
                let store = if i % 2 == 0 { store } else { other };
                let ticket = store.audit_start(request(&format!("web{i}"), "uptime")).await?;
                ticket.finish(AuditOutcome::Ok, Some(0), None).await
            });
        }
        while let Some(joined) = tasks.join_next().await {
            joined.unwrap().unwrap();
        }
        let report = f.store.verify_audit().await.unwrap();
        assert_eq!(report.broken, None, "{}", report.describe());
        assert_eq!(report.entries, 16);
    }
}

/// Two first appends on a single-threaded runtime (as `merlya run` fans out
/// specialists) must not wait on each other's file lock while holding the thread.
#[tokio::test(flavor = "current_thread")]
async fn concurrent_first_appends_on_one_thread_do_not_deadlock() {
    let f = fixture().await;
    let other = Store::open(&f.db).await.unwrap();
    let (a, b) =
        tokio::join!(f.store.audit_start(request("web01", "uptime")), other.audit_start(request("web02", "uptime")));
    a.unwrap().finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    b.unwrap().finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    assert_eq!(f.store.verify_audit().await.unwrap().broken, None);
}

#[tokio::test]
async fn a_finish_written_later_keeps_the_time_its_command_ended_and_one_never_written_stays_unfinished() {
    let f = fixture().await;
    let ticket = f.store.audit_start(request("web01", "terraform apply plan")).await.unwrap();
    let finish = ticket.finish(AuditOutcome::Ok, Some(0), None);
    let ended = now_rfc3339();
    tokio::time::sleep(std::time::Duration::from_millis(30)).await;
    let written = now_rfc3339();
    let entry = finish.await.unwrap();
    assert!(entry.ts <= ended && entry.ts < written, "{} written at {written}", entry.ts);

    // A finish dropped before it ran (its task aborted) writes nothing: the start stays unfinished.
    let ticket = f.store.audit_start(request("web01", "kubectl apply")).await.unwrap();
    let start_id = ticket.id();
    drop(ticket.finish(AuditOutcome::Ok, Some(0), None));
    let finishes: i64 =
        query("SELECT COUNT(*) FROM audit_log WHERE ref_id = $1").bind(start_id).scalar(f.store.pool()).await.unwrap();
    assert_eq!(finishes, 0);
    f.store.settle_audit().await;
    let report = f.store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert_eq!(report.unfinished, vec![start_id]);
}
