//! The tamper-evident audit log: every executed command, chained by SHA-256.
//!
//! `hash = sha256(prev_hash + "\n" + canonical JSON of the entry)`. The chain
//! head (last id, hash, count) lives in `audit_head` and is updated in the same
//! `BEGIN IMMEDIATE` transaction as the append, so concurrent writers from
//! several processes cannot fork the chain, and deleting the newest rows is
//! detected as well as editing or deleting any row in the middle.

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::Row;

use super::{SqlContext, Store, StoreError, now_rfc3339};
use crate::redact::redact_command;

/// The hash that precedes the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// What the caller supplies for a new entry.
#[derive(Debug, Clone)]
pub struct NewAuditEntry {
    /// Session that ran the command.
    pub session_id: String,
    /// Host name.
    pub host: String,
    /// Local user who ran merlya.
    pub user: String,
    /// The command; secrets are masked before it is stored.
    pub command: String,
    /// Exit code, `None` when the command could not run.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// Who approved it, or "not required".
    pub approved_by: String,
}

/// A stored entry.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: i64,
    pub ts: String,
    pub session_id: String,
    pub host: String,
    pub user: String,
    pub command: String,
    pub exit_code: Option<i32>,
    pub duration_ms: i64,
    pub approved_by: String,
    pub prev_hash: String,
    pub hash: String,
}

impl AuditEntry {
    /// The hash this entry must have given its predecessor's hash.
    pub fn expected_hash(&self, prev_hash: &str) -> String {
        let canonical = serde_json::json!([
            self.ts,
            self.session_id,
            self.host,
            self.user,
            self.command,
            self.exit_code,
            self.duration_ms,
            self.approved_by
        ]);
        let mut hasher = Sha256::new();
        hasher.update(prev_hash.as_bytes());
        hasher.update(b"\n");
        hasher.update(canonical.to_string().as_bytes());
        hex::encode(hasher.finalize())
    }
}

/// Filters for `merlya audit list`.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    /// Only this host.
    pub host: Option<String>,
    /// Only entries at or after this RFC 3339 time.
    pub since: Option<String>,
    /// At most this many (newest kept).
    pub limit: Option<i64>,
}

/// The result of `merlya audit verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainReport {
    /// Entries checked.
    pub entries: usize,
    /// The first problem found, if any.
    pub broken: Option<BrokenLink>,
}

/// Where the chain breaks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BrokenLink {
    /// The entry at which verification failed (0 for the chain head).
    pub id: i64,
    /// What does not match.
    pub reason: String,
}

fn entry_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<AuditEntry, sqlx::Error> {
    Ok(AuditEntry {
        id: row.try_get("id")?,
        ts: row.try_get("ts")?,
        session_id: row.try_get("session_id")?,
        host: row.try_get("host")?,
        user: row.try_get("user")?,
        command: row.try_get("command")?,
        exit_code: row.try_get("exit_code")?,
        duration_ms: row.try_get("duration_ms")?,
        approved_by: row.try_get("approved_by")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

impl Store {
    /// Appends an entry to the chain and returns it.
    pub async fn append_audit(&self, new: NewAuditEntry) -> Result<AuditEntry, StoreError> {
        let mut tx = self.pool().begin_with("BEGIN IMMEDIATE").await.ctx("cannot lock the audit log")?;
        let head: Option<(i64, String, i64)> =
            sqlx::query_as("SELECT last_id, hash, count FROM audit_head WHERE id = 1")
                .fetch_optional(&mut *tx)
                .await
                .ctx("cannot read the audit head")?;
        let (prev_hash, count) = head.map(|(_, h, c)| (h, c)).unwrap_or_else(|| (GENESIS.to_string(), 0));
        let mut entry = AuditEntry {
            id: 0,
            ts: now_rfc3339(),
            session_id: new.session_id,
            host: new.host,
            user: new.user,
            command: redact_command(&new.command),
            exit_code: new.exit_code,
            duration_ms: i64::try_from(new.duration_ms).unwrap_or(i64::MAX),
            approved_by: new.approved_by,
            prev_hash: prev_hash.clone(),
            hash: String::new(),
        };
        entry.hash = entry.expected_hash(&prev_hash);
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO audit_log (ts, session_id, host, user, command, exit_code, duration_ms, approved_by, prev_hash, hash)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(&entry.ts)
        .bind(&entry.session_id)
        .bind(&entry.host)
        .bind(&entry.user)
        .bind(&entry.command)
        .bind(entry.exit_code)
        .bind(entry.duration_ms)
        .bind(&entry.approved_by)
        .bind(&entry.prev_hash)
        .bind(&entry.hash)
        .fetch_one(&mut *tx)
        .await
        .ctx("cannot append to the audit log")?;
        entry.id = id;
        sqlx::query(
            "INSERT INTO audit_head (id, last_id, hash, count) VALUES (1, ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET last_id = excluded.last_id, hash = excluded.hash, count = excluded.count",
        )
        .bind(id)
        .bind(&entry.hash)
        .bind(count + 1)
        .execute(&mut *tx)
        .await
        .ctx("cannot move the audit head")?;
        tx.commit().await.ctx("cannot commit the audit entry")?;
        Ok(entry)
    }

    /// Entries matching `filter`, oldest first.
    pub async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM (SELECT * FROM audit_log WHERE (?1 IS NULL OR host = ?1) AND (?2 IS NULL OR ts >= ?2)
             ORDER BY id DESC LIMIT ?3) ORDER BY id",
        )
        .bind(&filter.host)
        .bind(&filter.since)
        .bind(filter.limit.unwrap_or(-1))
        .fetch_all(self.pool())
        .await
        .ctx("cannot read the audit log")?;
        rows.iter().map(entry_from_row).collect::<Result<_, _>>().ctx("cannot read an audit row")
    }

    /// Walks the whole chain and reports the first break.
    pub async fn verify_audit(&self) -> Result<ChainReport, StoreError> {
        let entries = self.list_audit(&AuditFilter::default()).await?;
        let head: Option<(i64, String, i64)> =
            sqlx::query_as("SELECT last_id, hash, count FROM audit_head WHERE id = 1")
                .fetch_optional(self.pool())
                .await
                .ctx("cannot read the audit head")?;
        let mut prev = GENESIS.to_string();
        for entry in &entries {
            if entry.prev_hash != prev {
                return Ok(broken(entries.len(), entry.id, "the entry before it was removed or altered"));
            }
            if entry.expected_hash(&prev) != entry.hash {
                return Ok(broken(entries.len(), entry.id, "its content was altered after it was written"));
            }
            prev = entry.hash.clone();
        }
        let count = i64::try_from(entries.len()).unwrap_or(i64::MAX);
        match head {
            None if entries.is_empty() => {}
            None => return Ok(broken(entries.len(), 0, "the chain head is missing")),
            Some((last_id, hash, head_count)) => {
                if hash != prev || head_count != count || entries.last().map(|e| e.id) != Some(last_id) {
                    return Ok(broken(
                        entries.len(),
                        last_id,
                        &format!("the chain head names entry {last_id} of {head_count}; newest entries were removed"),
                    ));
                }
            }
        }
        Ok(ChainReport { entries: entries.len(), broken: None })
    }
}

fn broken(entries: usize, id: i64, reason: &str) -> ChainReport {
    ChainReport { entries, broken: Some(BrokenLink { id, reason: reason.to_string() }) }
}
