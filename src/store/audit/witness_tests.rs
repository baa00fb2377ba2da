//! The witness against what a person with write access to MERLYA_HOME (the
//! database, `audit.key` and `audit.checkpoint`) can do. Each case is first
//! shown to pass `verify_audit` without a witness — the attack works — then
//! shown caught with one.

use std::path::{Path, PathBuf};

use sqlx::Connection;

use super::keys::{AuditKey, Checkpoint};
use super::witness::Witness;
use super::*;
use crate::store::db::sqlite_query;

struct Home {
    dir: tempfile::TempDir,
    db: PathBuf,
    witness: PathBuf,
}

impl Home {
    async fn open(&self, witnessed: bool) -> Store {
        let store = Store::open(&self.db).await.unwrap();
        if witnessed {
            store.set_audit_witness(Witness::File(self.witness.clone()));
        }
        store
    }
}

/// A home with six entries, written under a witness outside it.
async fn home() -> Home {
    let dir = tempfile::tempdir().unwrap();
    let home = Home { db: dir.path().join("home").join("merlya.db"), witness: dir.path().join("witness.log"), dir };
    let store = home.open(true).await;
    runs(&store, 3).await;
    store.close().await;
    home
}

async fn runs(store: &Store, n: usize) {
    for i in 0..n {
        let request = AuditRequest {
            session_id: "s1".into(),
            requested_by: "alice".into(),
            host: "web01".into(),
            address: "10.0.0.1".into(),
            port: Some(22),
            login_user: "deploy".into(),
            command: format!("echo {i}"),
            approved_by: "alice (prompt)".into(),
            approval_ref: None,
        };
        let ticket = store.audit_start(request).await.unwrap();
        ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
    }
    store.settle_audit().await;
}

fn key_of(db: &Path) -> AuditKey {
    let bytes = std::fs::read(crate::home::audit_key_beside(db)).unwrap();
    AuditKey::from_bytes(bytes.try_into().unwrap())
}

/// Rewrites the chain (after `edit`) with `key`, the head, and a checkpoint signed with `key`:
/// what someone holding the key file can do.
async fn rechain(db: &Path, key: &AuditKey, edit: impl Fn(&mut Vec<AuditEntry>)) {
    let store = Store::open(db).await.unwrap();
    let mut entries = store.audit_entries().await.unwrap();
    store.close().await;
    edit(&mut entries);
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.unwrap();
    for sql in ["DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"] {
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }
    sqlx::query("DELETE FROM audit_log").execute(&mut conn).await.unwrap();
    let mut prev = GENESIS.to_string();
    for e in &mut entries {
        e.chain = CHAIN_HMAC.to_string();
        e.prev_hash = prev.clone();
        e.hash = e.keyed_hash(key, &prev);
        sqlite_query(insert(e, INSERT_ENTRY)).execute(&mut conn).await.unwrap();
        prev = e.hash.clone();
    }
    let (last, count) = (entries.last().map_or(0, |e| e.id), i64::try_from(entries.len()).unwrap());
    sqlx::query("UPDATE audit_head SET hash = ?, last_id = ?, count = ?")
        .bind(&prev)
        .bind(last)
        .bind(count)
        .execute(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let checkpoint = Checkpoint::signed(key, last, &prev, count);
    std::fs::write(crate::home::audit_checkpoint_beside(db), serde_json::to_string(&checkpoint).unwrap()).unwrap();
}

/// The attack passes without a witness and is caught with it.
async fn caught_only_by_the_witness(home: &Home) {
    let plain = home.open(false).await;
    let report = plain.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "the attack should pass without a witness: {}", report.describe());
    plain.close().await;
    let witnessed = home.open(true).await;
    let report = witnessed.verify_audit().await.unwrap();
    let broken = report.broken.clone().unwrap_or_else(|| panic!("not caught: {}", report.describe()));
    assert!(broken.reason.contains("the witness"), "{}", broken.reason);
}

#[tokio::test]
async fn an_intact_log_holds_every_witnessed_head() {
    let home = home().await;
    let store = home.open(true).await;
    let report = store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert!(report.describe().contains("holds every head witnessed in"), "{}", report.describe());
    assert!(report.witness.is_some_and(|(_, heads)| heads >= 1));
}

#[tokio::test]
async fn an_edit_rechained_with_the_real_key_is_caught() {
    let home = home().await;
    let key = key_of(&home.db);
    rechain(&home.db, &key, |entries| entries[2].command = "echo nothing to see".into()).await;
    caught_only_by_the_witness(&home).await;
}

#[tokio::test]
async fn newest_rows_removed_with_a_re_signed_checkpoint_are_caught() {
    let home = home().await;
    let key = key_of(&home.db);
    rechain(&home.db, &key, |entries| entries.truncate(4)).await;
    caught_only_by_the_witness(&home).await;
}

#[tokio::test]
async fn a_new_key_and_a_rechain_are_caught() {
    let home = home().await;
    let key = AuditKey::from_bytes([9; 32]);
    std::fs::write(crate::home::audit_key_beside(&home.db), [9u8; 32]).unwrap();
    rechain(&home.db, &key, |entries| entries[0].command = "echo forged".into()).await;
    caught_only_by_the_witness(&home).await;
}

#[tokio::test]
async fn key_checkpoint_and_tables_wiped_together_are_caught() {
    let home = home().await;
    std::fs::remove_file(crate::home::audit_key_beside(&home.db)).unwrap();
    std::fs::remove_file(crate::home::audit_checkpoint_beside(&home.db)).unwrap();
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", home.db.display())).await.unwrap();
    for sql in ["DROP TRIGGER IF EXISTS audit_log_no_delete", "DELETE FROM audit_log", "DELETE FROM audit_head"] {
        sqlx::query(sql).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
    caught_only_by_the_witness(&home).await;
}

#[tokio::test]
async fn an_older_copy_put_back_with_its_checkpoint_is_caught() {
    let home = home().await;
    let saved = home.dir.path().join("saved");
    std::fs::create_dir_all(&saved).unwrap();
    let files = |dir: &Path| {
        ["merlya.db", "audit.key", "audit.checkpoint"].map(|name| dir.join(name)).into_iter().collect::<Vec<_>>()
    };
    let live = home.db.parent().unwrap().to_path_buf();
    for (from, to) in files(&live).iter().zip(files(&saved)) {
        std::fs::copy(from, to).unwrap();
    }
    let store = home.open(true).await;
    runs(&store, 2).await;
    store.close().await;
    for (from, to) in files(&saved).iter().zip(files(&live)) {
        std::fs::copy(from, to).unwrap();
    }
    caught_only_by_the_witness(&home).await;
}
