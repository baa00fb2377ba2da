//! Operators signing one team chain on a real PostgreSQL (ADR 0032), and what a database
//! superuser can do to it: forge a signature, re-hash an entry, replace or truncate the chain
//! after a home verified it. The "audit rewritten" check runs on both backends.

use std::path::Path;

use sqlx::Connection;

use super::operator::OperatorKey;
use super::tests::request;
use super::*;
use crate::store::test_backend::{new_database, store_in};

/// A home on the team store at `url`, signing as `name`.
async fn home(dir: &Path, url: &str, name: &str) -> Store {
    let store = Store::open_postgres(&dir.join("merlya.db"), url, None).await.unwrap();
    store.set_operator(name.to_string());
    store
}

async fn run(store: &Store, command: &str) {
    let ticket = store.audit_start(request("web01", command)).await.unwrap();
    ticket.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
}

/// Runs `statements` as the database's superuser or the file's owner would, with the append-only
/// triggers out of the way.
async fn tamper(store: &Store, statements: &[&str]) {
    match store.backend() {
        Backend::Sqlite => {
            let mut conn =
                sqlx::SqliteConnection::connect(&format!("sqlite://{}", store.path().display())).await.unwrap();
            for sql in ["DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"]
                .iter()
                .chain(statements)
            {
                sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut conn).await.unwrap();
            }
            conn.close().await.unwrap();
        }
        Backend::Postgres => {
            let mut conn = sqlx::PgConnection::connect(store.location()).await.unwrap();
            for sql in ["SET session_replication_role = replica"].iter().chain(statements) {
                sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut conn).await.unwrap();
            }
            conn.close().await.unwrap();
        }
    }
}

fn broken(report: &ChainReport) -> BrokenLink {
    report.broken.clone().unwrap_or_else(|| panic!("not detected: {}", report.describe()))
}

#[tokio::test]
async fn two_operators_with_keys_of_their_own_append_to_one_chain_that_verifies_in_both_homes() {
    let url = new_database();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (alice, bob) = (home(a.path(), &url, "alice").await, home(b.path(), &url, "bob").await);
    for i in 0..3 {
        run(&alice, &format!("echo a{i}")).await;
        run(&bob, &format!("echo b{i}")).await;
    }
    for store in [&alice, &bob] {
        let report = store.verify_audit().await.unwrap();
        assert_eq!(report.broken, None, "{}", report.describe());
        assert_eq!((report.entries, report.signed), (12, 12));
        assert_eq!(report.signers.iter().map(String::as_str).collect::<Vec<_>>(), ["alice", "bob"]);
        assert!(report.describe().contains("12 signed by their operators (alice, bob)"), "{}", report.describe());
    }
    let entries = alice.audit_entries().await.unwrap();
    assert!(entries.iter().all(|e| e.chain == CHAIN_ED25519 && e.signature.as_ref().is_some_and(|s| s.len() == 128)));
    assert_eq!(entries[2].signer.as_deref(), Some("bob"));
    // No HMAC key in either home; each has a private key file of its own, never in the database.
    use std::os::unix::fs::PermissionsExt;
    let mut seeds = Vec::new();
    for dir in [a.path(), b.path()] {
        assert!(!dir.join("audit.key").exists());
        let key = dir.join("operator.key");
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        seeds.push(hex::encode(std::fs::read(&key).unwrap()));
    }
    assert_ne!(seeds[0], seeds[1]);
    let registered = alice.registered_operators().await.unwrap();
    let dump = format!("{registered:?} {}", serde_json::to_string(&entries).unwrap());
    assert!(seeds.iter().all(|seed| !dump.contains(seed.as_str())), "a private key reached the database");
    assert!(!format!("{:?}", alice.operator).contains(&seeds[0]), "Debug shows only the public half");
    // The second check starts from the head the first one verified.
    run(&bob, "echo later").await;
    let since = alice.audit_since_verified().await.unwrap();
    assert_eq!(since.broken, None, "{}", since.describe());
    assert_eq!((since.entries, since.seen.map(|s| s.id)), (3, Some(12)));
}

#[tokio::test]
async fn a_name_registered_with_one_key_never_gets_another() {
    let url = new_database();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let alice = home(a.path(), &url, "alice").await;
    run(&alice, "echo 1").await;
    let impostor = home(b.path(), &url, "alice").await;
    let err = impostor.audit_start(request("web01", "echo 2")).await.unwrap_err().to_string();
    assert!(err.contains("\"alice\"") && err.contains("another key") && err.contains("operator.name"), "{err}");
    assert_eq!(alice.audit_entries().await.unwrap().len(), 2, "nothing appended by the impostor");
    let replaced = query("UPDATE operators SET public_key = $1 WHERE name = 'alice'")
        .bind("00".repeat(32))
        .execute(alice.pool())
        .await;
    assert!(replaced.unwrap_err().to_string().contains("append-only"));
    assert!(query("DELETE FROM operators").execute(alice.pool()).await.is_err());
}

#[tokio::test]
async fn a_forged_signature_or_an_entry_re_hashed_after_signing_is_detected() {
    let url = new_database();
    let dir = tempfile::tempdir().unwrap();
    let alice = home(dir.path(), &url, "alice").await;
    for i in 0..3 {
        run(&alice, &format!("echo {i}")).await;
    }
    // Entry 2 signed by a key alice never registered.
    let entries = alice.audit_entries().await.unwrap();
    let forged = OperatorKey::from_seed([7; 32]).sign_hex(&entries[1].hash);
    tamper(&alice, &[&format!("UPDATE audit_log SET signature = '{forged}' WHERE id = 2")]).await;
    let b = broken(&alice.verify_audit().await.unwrap());
    assert_eq!(b.id, 2);
    assert!(b.reason.contains("signature is not operator \"alice\"'s"), "{}", b.reason);

    // The newest entry edited and its hash recomputed, head moved to match: only the key could sign it.
    let dir = tempfile::tempdir().unwrap();
    let url = new_database();
    let alice = home(dir.path(), &url, "alice").await;
    for i in 0..3 {
        run(&alice, &format!("echo {i}")).await;
    }
    let mut last = alice.audit_entries().await.unwrap().pop().unwrap();
    last.reason = Some("nothing to see".into());
    last.hash = last.signed_hash(&last.prev_hash);
    tamper(
        &alice,
        &[
            &format!("UPDATE audit_log SET reason = 'nothing to see', hash = '{}' WHERE id = {}", last.hash, last.id),
            &format!("UPDATE audit_head SET hash = '{}'", last.hash),
        ],
    )
    .await;
    let b = broken(&alice.verify_audit().await.unwrap());
    assert_eq!(b.id, last.id);
    assert!(b.reason.contains("re-hashed after it was signed"), "{}", b.reason);

    // Edited without re-hashing; and a signer no one registered.
    tamper(&alice, &["UPDATE audit_log SET command = 'echo x' WHERE id = 1"]).await;
    assert!(broken(&alice.verify_audit().await.unwrap()).reason.contains("altered after \"alice\" signed it"));
    tamper(&alice, &["UPDATE audit_log SET command = 'echo 0', signer = 'mallory' WHERE id = 1"]).await;
    let b = broken(&alice.verify_audit().await.unwrap());
    assert_eq!(b.id, 1);
}

/// What a superuser who is also an operator can do without the others' keys: cut the chain back and
/// sign a new history on top. Every entry verifies; only the head alice verified before tells.
#[tokio::test]
async fn a_replaced_history_is_audit_rewritten_in_the_home_that_verified_it() {
    let url = new_database();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (alice, mallory) = (home(a.path(), &url, "alice").await, home(b.path(), &url, "mallory").await);
    for i in 0..3 {
        run(&alice, &format!("echo {i}")).await;
    }
    assert_eq!(alice.verify_audit().await.unwrap().broken, None);
    tamper(
        &mallory,
        &[
            "DELETE FROM audit_log WHERE id > 2",
            "UPDATE audit_head SET last_id = 2, count = 2, hash = (SELECT hash FROM audit_log WHERE id = 2)",
        ],
    )
    .await;
    // Cut back: the chain is shorter than what alice verified.
    let b = broken(&alice.audit_since_verified().await.unwrap());
    assert!(b.reason.starts_with("audit rewritten") && b.reason.contains("ends at entry 2"), "{}", b.reason);
    // And a new history signed on top: every signature is valid.
    for i in 0..4 {
        run(&mallory, &format!("echo other {i}")).await;
    }
    let report = mallory.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "a home that never verified the old history sees a valid chain");
    let report = alice.verify_audit().await.unwrap();
    assert!(report.rewritten);
    let b = broken(&report);
    assert_eq!(b.id, 6);
    assert!(b.reason.contains("audit rewritten") && b.reason.contains("another entry there"), "{}", b.reason);
    assert!(alice.audit_since_verified().await.unwrap().rewritten, "the console says it too");
}

/// Rows keyed by another home (an operator's SQLite store copied in) cannot be checked here: said
/// so, not broken, once a signed entry pins their head; an unpinned tail or a keyed row after
/// signed ones is broken.
#[tokio::test]
async fn keyed_rows_of_another_home_are_reported_unchecked_once_a_signed_entry_pins_them() {
    let url = new_database();
    let dir = tempfile::tempdir().unwrap();
    let alice = home(dir.path(), &url, "alice").await;
    let other = keys::AuditKey::from_bytes([3; 32]);
    let mut prev = GENESIS.to_string();
    let mut copied = Vec::new();
    for id in 1..=2 {
        let mut e = AuditEntry {
            id,
            ts: format!("2026-11-20T10:00:0{id}.000Z"),
            session_id: "old".into(),
            event: AuditEvent::Attempt,
            outcome: AuditOutcome::Refused,
            ref_id: None,
            requested_by: "bob".into(),
            user: "bob".into(),
            login_user: String::new(),
            host: "web01".into(),
            address: String::new(),
            port: None,
            command: format!("echo {id}"),
            exit_code: None,
            duration_ms: 0,
            approved_by: String::new(),
            approval_ref: None,
            reason: None,
            chain: CHAIN_HMAC.into(),
            prev_hash: prev.clone(),
            hash: String::new(),
            signer: None,
            signature: None,
        };
        e.hash = e.keyed_hash(&other, &prev);
        prev = e.hash.clone();
        copied.push(e);
    }
    for e in &copied {
        insert(e, INSERT_ENTRY).execute(alice.pool()).await.unwrap();
    }
    query("UPDATE audit_head SET last_id = 2, count = 2, hash = $1").bind(&prev).execute(alice.pool()).await.unwrap();
    let b = broken(&alice.verify_audit().await.unwrap());
    assert!(b.reason.contains("entries 1-2 are keyed by another home's audit key"), "{}", b.reason);
    run(&alice, "echo pinned").await;
    let report = alice.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert_eq!(report.foreign.as_ref().map(|f| (f.first, f.last, f.count, f.pinned_by)), Some((1, 2, 2, Some(3))));
    assert!(
        report.describe().contains("entries 1-2 (2) are keyed by another home's audit key"),
        "{}",
        report.describe()
    );
    // A keyed row appended after the signed chain began is forged.
    let mut forged = copied[1].clone();
    let head = alice.audit_entries().await.unwrap().pop().unwrap();
    forged.id = head.id + 1;
    forged.prev_hash = head.hash.clone();
    forged.hash = forged.keyed_hash(&other, &head.hash);
    insert(&forged, INSERT_ENTRY).execute(alice.pool()).await.unwrap();
    query("UPDATE audit_head SET last_id = $1, count = $1, hash = $2")
        .bind(forged.id)
        .bind(&forged.hash)
        .execute(alice.pool())
        .await
        .unwrap();
    let b = broken(&alice.verify_audit().await.unwrap());
    assert_eq!(b.id, forged.id);
    assert!(b.reason.contains("after the signed chain began"), "{}", b.reason);
}

/// The verified head on the backend `MERLYA_TEST_STORE` names (SQLite keeps its HMAC chain).
#[tokio::test]
async fn a_chain_cut_back_and_extended_again_is_audit_rewritten_on_either_backend() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path()).await;
    for i in 0..3 {
        run(&store, &format!("echo {i}")).await;
    }
    store.settle_audit().await;
    let report = store.verify_audit().await.unwrap();
    assert_eq!(report.broken, None, "{}", report.describe());
    assert_eq!(report.seen, None, "nothing verified before");
    let again = store.audit_since_verified().await.unwrap();
    assert_eq!((again.broken, again.entries, again.seen.map(|s| s.id)), (None, 1, Some(6)));
    tamper(
        &store,
        &[
            "DELETE FROM audit_log WHERE id > 4",
            "UPDATE audit_head SET last_id = 4, count = 4, hash = (SELECT hash FROM audit_log WHERE id = 4)",
        ],
    )
    .await;
    run(&store, "echo another").await;
    store.settle_audit().await;
    for report in [store.verify_audit().await.unwrap(), store.audit_since_verified().await.unwrap()] {
        assert!(report.rewritten, "{}", report.describe());
        let b = broken(&report);
        assert_eq!(b.id, 6);
        assert!(b.reason.contains("audit rewritten: this home verified entry 6"), "{}", b.reason);
    }
}
