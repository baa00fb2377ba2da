//! The tamper-evident, write-ahead audit log (ADR 0015).
//!
//! Every entry is chained. On SQLite (one operator): `hash = HMAC-SHA256(key, prev_hash + "\n" +
//! canonical JSON of the entry)`, with the key in `MERLYA_HOME/audit.key`,
//! outside the database, so someone who can write `merlya.db` cannot
//! recompute the chain. After each append the newest head is signed into
//! `MERLYA_HOME/audit.checkpoint`, so wiping or truncating the tables is
//! detected too. The head also lives in `audit_head`, updated in the same
//! `BEGIN IMMEDIATE` transaction, so concurrent writers cannot fork the chain.
//!
//! On a team's PostgreSQL store every entry is signed by the operator who wrote it (ADR 0032):
//! `hash = SHA-256(prev_hash + "\n" + canonical JSON, signer included)`, and an ed25519 signature
//! of the hash with the operator's own key ([`operator`]), whose public half is registered in the
//! store. Each home remembers the last head it verified ([`seen`]) and reports "audit rewritten"
//! when the store no longer extends it.
//!
//! Executions are written ahead: [`Store::audit_start`] appends a `start`
//! entry before the command runs and returns an [`AuditTicket`];
//! [`AuditTicket::finish`] appends the outcome, naming the start entry. A
//! start without a finish (merlya killed mid-run) is listed as unfinished.
//! Refused and denied attempts are one entry ([`Store::audit_refused`]).

pub mod keys;
pub mod operator;
pub mod seen;
#[cfg(test)]
mod signing_tests;
mod verify;
pub mod witness;
#[cfg(test)]
mod witness_tests;

#[cfg(test)]
pub(crate) mod tests;

use crate::store::Backend;
use crate::store::db::{Pool, Row, Sql, query};
use std::time::Instant;

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{SqlContext, Store, StoreError, now_rfc3339};
use crate::exec::HostResult;
use crate::redact::redact_command;
use keys::{AuditKey, KeyFileError};
pub use verify::{BrokenLink, ChainReport};

/// The hash that precedes the first entry.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// `chain` of rows written before the log was keyed: plain SHA-256.
pub const CHAIN_SHA256: &str = "sha256";
/// `chain` of keyed rows.
pub const CHAIN_HMAC: &str = "hmac-sha256";
/// `chain` of rows signed by their operator's ed25519 key (a team's PostgreSQL store).
pub const CHAIN_ED25519: &str = "ed25519";

/// How an attempt ended; `started` is a start entry, `unfinished` a start
/// that no finish entry names (only ever computed, never stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// Written ahead; the command is about to run.
    Started,
    /// Ran and exited 0.
    Ok,
    /// Ran and failed, or could not run (unreachable, authentication...).
    Failed,
    /// Refused by the safety policy (never ran).
    Refused,
    /// Denied by the person or approver asked (never ran).
    Denied,
    /// Stopped before it finished (the run was abandoned).
    Cancelled,
    /// Cut off by the timeout.
    TimedOut,
    /// Started, and no outcome was ever written (merlya died mid-run).
    Unfinished,
    /// Written ahead, and the command never started on the host (no free slot before the run's
    /// timeout, a missing password): nothing ran there.
    NotStarted,
}

impl AuditOutcome {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Ok => "ok",
            Self::Failed => "failed",
            Self::Refused => "refused",
            Self::Denied => "denied",
            Self::Cancelled => "cancelled",
            Self::TimedOut => "timed_out",
            Self::Unfinished => "unfinished",
            Self::NotStarted => "not_started",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [
            Self::Started,
            Self::Ok,
            Self::Failed,
            Self::Refused,
            Self::Denied,
            Self::Cancelled,
            Self::TimedOut,
            Self::Unfinished,
            Self::NotStarted,
        ]
        .into_iter()
        .find(|o| o.as_str() == text)
    }

    /// The outcome of a host result from the executor.
    pub fn of_result(result: &HostResult) -> Self {
        use crate::exec::HostFailure;
        match (result.failure, &result.error, result.exit_code) {
            (Some(HostFailure::Cancelled), _, _) => Self::Cancelled,
            (Some(HostFailure::TimedOut), _, _) => Self::TimedOut,
            (Some(HostFailure::NotStarted), _, _) => Self::NotStarted,
            (_, None, Some(0)) => Self::Ok,
            (_, Some(e), _) if e.starts_with("timed out") => Self::TimedOut,
            _ => Self::Failed,
        }
    }
}

/// What kind of row an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditEvent {
    /// Written by a merlya before the keyed chain (one row per execution, after it ran).
    Legacy,
    /// The first keyed entry after unkeyed ones: pins their head under the key.
    Rebase,
    /// Written before a command runs.
    Start,
    /// The outcome of the start named in `ref_id`.
    Finish,
    /// A refused or denied attempt (never ran).
    Attempt,
    /// A second person's decision on a change request (two-person approval): `ok` approved,
    /// `denied` rejected; the request is named in `approval_ref`.
    Review,
}

impl AuditEvent {
    fn as_str(self) -> &'static str {
        match self {
            Self::Legacy => "legacy",
            Self::Rebase => "rebase",
            Self::Start => "start",
            Self::Finish => "finish",
            Self::Attempt => "attempt",
            Self::Review => "review",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Self::Legacy, Self::Rebase, Self::Start, Self::Finish, Self::Attempt, Self::Review]
            .into_iter()
            .find(|e| e.as_str() == text)
    }
}

/// Who wants to run what where, and who approved it: the caller's half of an entry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditRequest {
    /// Session that runs the command.
    pub session_id: String,
    /// Who asked: a person's login, or `agent@specialist`.
    pub requested_by: String,
    /// Inventory name of the host.
    pub host: String,
    /// The address connected to (hostname or IP).
    pub address: String,
    /// The SSH port; `None` for local execution.
    pub port: Option<u16>,
    /// The account the command runs as on the host.
    pub login_user: String,
    /// The command; secrets are masked before it is stored.
    pub command: String,
    /// Who approved it (a person, `--yes`, a stored rule) or "not required";
    /// for a denial, who denied it.
    pub approved_by: String,
    /// For a post-check or rollback: the approval (entry) it belongs to.
    pub approval_ref: Option<String>,
}

impl AuditRequest {
    /// An entry for something run or decided on this machine, as its user.
    pub fn local(
        session_id: &str,
        requested_by: &str,
        command: &str,
        approved_by: &str,
        approval_ref: Option<String>,
    ) -> Self {
        Self {
            session_id: session_id.to_string(),
            requested_by: requested_by.to_string(),
            host: "localhost".into(),
            address: "local".into(),
            port: None,
            login_user: crate::ssh::target::local_user(),
            command: command.to_string(),
            approved_by: approved_by.to_string(),
            approval_ref,
        }
    }
}

/// A stored row, exactly as chained (`merlya audit export`).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AuditEntry {
    pub id: i64,
    pub ts: String,
    pub session_id: String,
    pub event: AuditEvent,
    pub outcome: AuditOutcome,
    /// For a finish entry: the start entry it completes.
    pub ref_id: Option<i64>,
    pub requested_by: String,
    /// Local account that ran merlya.
    pub user: String,
    pub login_user: String,
    pub host: String,
    pub address: String,
    pub port: Option<i64>,
    pub command: String,
    pub exit_code: Option<i32>,
    pub duration_ms: i64,
    pub approved_by: String,
    pub approval_ref: Option<String>,
    /// Why it was refused or denied, or what went wrong.
    pub reason: Option<String>,
    /// `sha256` (unkeyed, before the re-base), `hmac-sha256` or `ed25519`.
    pub chain: String,
    pub prev_hash: String,
    pub hash: String,
    /// For a signed entry: the operator who signed it (covered by its hash).
    pub signer: Option<String>,
    /// For a signed entry: the ed25519 signature (hex) of its hash by the signer's registered key.
    pub signature: Option<String>,
}

impl AuditEntry {
    /// The unkeyed hash of a row written before the keyed chain.
    pub fn legacy_hash(&self, prev_hash: &str) -> String {
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

    /// Everything the keyed hash covers, id included, so rows cannot be renumbered; a signed entry's
    /// signer too (keyed rows keep the form they were written in).
    fn canonical(&self) -> String {
        let mut fields = serde_json::json!([
            self.id,
            self.ts,
            self.session_id,
            self.event.as_str(),
            self.outcome.as_str(),
            self.ref_id,
            self.requested_by,
            self.user,
            self.login_user,
            self.host,
            self.address,
            self.port,
            self.command,
            self.exit_code,
            self.duration_ms,
            self.approved_by,
            self.approval_ref,
            self.reason,
            self.chain
        ]);
        if self.chain == CHAIN_ED25519
            && let serde_json::Value::Array(items) = &mut fields
        {
            items.push(serde_json::json!(self.signer));
        }
        fields.to_string()
    }

    /// The hash a signed entry must have given its predecessor's hash.
    pub fn signed_hash(&self, prev_hash: &str) -> String {
        let mut hasher = Sha256::new();
        hasher.update(prev_hash.as_bytes());
        hasher.update(b"\n");
        hasher.update(self.canonical().as_bytes());
        hex::encode(hasher.finalize())
    }

    /// The keyed hash this entry must have given its predecessor's hash.
    pub fn keyed_hash(&self, key: &AuditKey, prev_hash: &str) -> String {
        key.mac_hex(&[prev_hash.as_bytes(), b"\n", self.canonical().as_bytes()])
    }

    /// Whether `hash` is the keyed hash (constant-time).
    fn keyed_hash_matches(&self, key: &AuditKey) -> bool {
        key.verify_hex(&[self.prev_hash.as_bytes(), b"\n", self.canonical().as_bytes()], &self.hash)
    }
}

/// One line of `merlya audit list`: an execution (its start merged with its
/// finish), a refused or denied attempt, or a legacy row.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AuditRecord {
    /// The start (or attempt) entry.
    pub id: i64,
    pub ts: String,
    pub session_id: String,
    pub outcome: AuditOutcome,
    pub requested_by: String,
    pub user: String,
    pub login_user: String,
    pub host: String,
    pub address: String,
    pub port: Option<i64>,
    pub command: String,
    pub exit_code: Option<i32>,
    pub duration_ms: i64,
    pub approved_by: String,
    pub approval_ref: Option<String>,
    pub reason: Option<String>,
    /// The finish entry, when there is one.
    pub finished_id: Option<i64>,
    pub finished_at: Option<String>,
}

/// Filters for `merlya audit list`.
#[derive(Debug, Default, Clone)]
pub struct AuditFilter {
    /// Only this host.
    pub host: Option<String>,
    /// Only entries at or after this RFC 3339 time.
    pub since: Option<String>,
    /// Only this outcome.
    pub outcome: Option<AuditOutcome>,
    /// At most this many (newest kept).
    pub limit: Option<i64>,
    /// Only entries of this session (a `merlya exec` run, a console session).
    pub session: Option<String>,
}

/// An execution written ahead: finish it with its outcome. Dropped without
/// [`finish`](Self::finish), the start entry stays and is listed as unfinished.
#[derive(Debug)]
#[must_use = "an audit ticket must be finished with the command's outcome"]
pub struct AuditTicket {
    store: Store,
    request: AuditRequest,
    start_id: i64,
    started: Instant,
    finished: bool,
}

impl AuditTicket {
    /// The start entry's id (post-checks and rollbacks name it as their approval).
    pub fn id(&self) -> i64 {
        self.start_id
    }

    /// Appends the outcome, naming the start entry; `exit_code` may come late
    /// (after a timeout) and `reason` says what went wrong. The time and the duration are taken when
    /// this is called, so the entry may be written later (beside the next stage) and still be right.
    pub fn finish(
        mut self,
        outcome: AuditOutcome,
        exit_code: Option<i32>,
        reason: Option<String>,
    ) -> impl std::future::Future<Output = Result<AuditEntry, StoreError>> + Send + 'static {
        let duration_ms = i64::try_from(self.started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let row = RowPart {
            ts: now_rfc3339(),
            event: AuditEvent::Finish,
            outcome,
            ref_id: Some(self.start_id),
            exit_code,
            duration_ms,
            reason,
        };
        // Finished once written: a finish dropped before it ran (a task aborted, a panic) still warns.
        async move {
            let entry = self.store.append(&self.request, row).await;
            self.mark_finished();
            entry
        }
    }

    /// Its outcome is written (or failed to be, which the caller reports): dropping it says nothing.
    fn mark_finished(&mut self) {
        self.finished = true;
    }

    /// Finishes with what the executor reported for the host.
    pub async fn finish_result(self, result: &HostResult) -> Result<AuditEntry, StoreError> {
        let outcome = AuditOutcome::of_result(result);
        crate::metrics::command(outcome.as_str(), result.duration_ms as f64 / 1000.0);
        self.finish(outcome, result.exit_code, result.error.clone()).await
    }
}

impl Drop for AuditTicket {
    fn drop(&mut self) {
        if !self.finished {
            tracing::warn!(entry = self.start_id, host = %self.request.host, "audit entry left unfinished");
        }
    }
}

/// What seals an entry into the chain.
enum Sealer {
    /// The home's HMAC key (SQLite: one operator).
    Keyed(AuditKey),
    /// The operator's own ed25519 key (a team's PostgreSQL store).
    Signed { name: String, key: Box<operator::OperatorKey> },
}

impl Sealer {
    /// Sets the entry's chain kind, signer, hash (from its `prev_hash`) and signature.
    fn seal(&self, entry: &mut AuditEntry) {
        let prev = entry.prev_hash.clone();
        match self {
            Sealer::Keyed(key) => {
                entry.chain = CHAIN_HMAC.into();
                entry.hash = entry.keyed_hash(key, &prev);
            }
            Sealer::Signed { name, key } => {
                entry.chain = CHAIN_ED25519.into();
                entry.signer = Some(name.clone());
                entry.hash = entry.signed_hash(&prev);
                entry.signature = Some(key.sign_hex(&entry.hash));
            }
        }
    }
}

/// The per-row half of an entry.
struct RowPart {
    /// When it happened: a finish written later (beside the next stage) keeps its command's end.
    ts: String,
    event: AuditEvent,
    outcome: AuditOutcome,
    ref_id: Option<i64>,
    exit_code: Option<i32>,
    duration_ms: i64,
    reason: Option<String>,
}

fn entry_from_row(row: &Row) -> Result<AuditEntry, sqlx::Error> {
    let chain: String = row.try_get("chain")?;
    let event: String = row.try_get("event")?;
    let outcome: String = row.try_get("outcome")?;
    let exit_code: Option<i32> = row.try_get("exit_code")?;
    let event = AuditEvent::parse(&event).unwrap_or(AuditEvent::Legacy);
    let outcome = match (event, AuditOutcome::parse(&outcome)) {
        (AuditEvent::Legacy, _) if exit_code == Some(0) => AuditOutcome::Ok,
        (AuditEvent::Legacy, _) => AuditOutcome::Failed,
        // An unknown spelling cannot match the keyed hash; verification names the row.
        (_, parsed) => parsed.unwrap_or(AuditOutcome::Failed),
    };
    Ok(AuditEntry {
        id: row.try_get("id")?,
        ts: row.try_get("ts")?,
        session_id: row.try_get("session_id")?,
        event,
        outcome,
        ref_id: row.try_get("ref_id")?,
        requested_by: row.try_get("requested_by")?,
        user: row.try_get("user")?,
        login_user: row.try_get("login_user")?,
        host: row.try_get("host")?,
        address: row.try_get("address")?,
        port: row.try_get("port")?,
        command: row.try_get("command")?,
        exit_code,
        duration_ms: row.try_get("duration_ms")?,
        approved_by: row.try_get("approved_by")?,
        approval_ref: row.try_get("approval_ref")?,
        reason: row.try_get("reason")?,
        chain,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
        signer: row.try_get("signer")?,
        signature: row.try_get("signature")?,
    })
}

fn key_error(e: KeyFileError) -> StoreError {
    StoreError::Io { context: "audit key".into(), source: std::io::Error::other(e.to_string()) }
}

impl Store {
    /// Writes the start of an execution before the command runs. If this
    /// fails the caller must not run the command.
    pub async fn audit_start(&self, request: AuditRequest) -> Result<AuditTicket, StoreError> {
        let row = RowPart {
            ts: now_rfc3339(),
            event: AuditEvent::Start,
            outcome: AuditOutcome::Started,
            ref_id: None,
            exit_code: None,
            duration_ms: 0,
            reason: None,
        };
        let entry = self.append(&request, row).await?;
        Ok(AuditTicket { store: self.clone(), request, start_id: entry.id, started: Instant::now(), finished: false })
    }

    /// Prepares the statements of an append (kept by the connection), so the entry a change writes
    /// right before it runs does not wait for SQLite to compile them. A failure is left to the append.
    pub async fn prepare_audit(&self) {
        let Pool::Sqlite(pool) = self.pool() else { return };
        for sql in [read_head(Backend::Sqlite), insert_entry_move_head(Backend::Sqlite)] {
            if let Err(e) = sqlx::Executor::prepare(pool, sqlx::SqlSafeStr::into_sql_str(sql)).await {
                tracing::debug!(error = %e, "audit statement not prepared ahead");
            }
        }
    }

    /// Records an attempt that never ran: refused by the policy (with the
    /// rule or reason) or denied by whoever was asked.
    pub async fn audit_refused(
        &self,
        request: &AuditRequest,
        outcome: AuditOutcome,
        reason: &str,
    ) -> Result<AuditEntry, StoreError> {
        let outcome = if outcome == AuditOutcome::Denied { outcome } else { AuditOutcome::Refused };
        let row = RowPart {
            ts: now_rfc3339(),
            event: AuditEvent::Attempt,
            outcome,
            ref_id: None,
            exit_code: None,
            duration_ms: 0,
            reason: Some(reason.to_string()),
        };
        self.append(request, row).await
    }

    /// Records a second person's review of a change request: approved (`ok`) or rejected (`denied`).
    pub async fn audit_review(
        &self,
        request: &AuditRequest,
        approved: bool,
        reason: &str,
    ) -> Result<AuditEntry, StoreError> {
        let row = RowPart {
            ts: now_rfc3339(),
            event: AuditEvent::Review,
            outcome: if approved { AuditOutcome::Ok } else { AuditOutcome::Denied },
            ref_id: None,
            exit_code: None,
            duration_ms: 0,
            reason: Some(reason.to_string()),
        };
        self.append(request, row).await
    }

    /// The key, created on first use. A missing key is only created for a log
    /// that has no keyed entry yet; otherwise appending stops (a new key would
    /// make the existing chain unverifiable).
    async fn audit_key(&self) -> Result<AuditKey, StoreError> {
        if let Some(key) = self.audit.load_key().map_err(key_error)? {
            return Ok(key);
        }
        // Deciding to create the key is serialised, so two first appends cannot
        // both decide and none sees the other half done: within this process by
        // an async mutex (a file lock must not block a runtime thread another
        // task of this process needs), across processes by a file lock taken
        // off the runtime.
        static CREATING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
        let _in_process = CREATING.lock().await;
        let files = self.audit.clone();
        let _across_processes = tokio::task::spawn_blocking(move || files.lock_creation())
            .await
            .map_err(|e| StoreError::Io { context: "audit key lock".into(), source: std::io::Error::other(e) })?
            .map_err(key_error)?;
        if let Some(key) = self.audit.load_key().map_err(key_error)? {
            return Ok(key);
        }
        let keyed: i64 = query("SELECT COUNT(*) FROM audit_log WHERE chain != $1")
            .bind(CHAIN_SHA256)
            .scalar(self.pool())
            .await
            .ctx("cannot read the audit log")?;
        if keyed > 0 || self.audit.read_checkpoint().map_err(key_error)?.is_some() {
            return Err(key_error(KeyFileError::Invalid {
                path: self.audit.key_path().to_path_buf(),
                what: "missing, but the audit log was keyed with it; restore it (merlya will not start a new chain over a keyed one)".into(),
            }));
        }
        let key = self.audit.create_key().map_err(key_error)?;
        self.audit.advance_checkpoint(&key, 0, GENESIS, 0).map_err(key_error)?;
        Ok(key)
    }

    /// How this store seals its entries: keyed with the home's HMAC key on SQLite, signed by the
    /// operator's own key on a team's PostgreSQL store (its public half registered first).
    async fn sealer(&self) -> Result<Sealer, StoreError> {
        Ok(match self.backend() {
            Backend::Sqlite => Sealer::Keyed(self.audit_key().await?),
            Backend::Postgres => {
                let (name, key) = self.operator_signer().await?;
                Sealer::Signed { name, key: Box::new(key) }
            }
        })
    }

    /// Appends one sealed entry (after a re-base entry if the log so far is
    /// unkeyed) and moves the head; a keyed entry's head is then signed into the checkpoint.
    async fn append(&self, request: &AuditRequest, row: RowPart) -> Result<AuditEntry, StoreError> {
        let sealer = self.sealer().await?;
        let mut tx = self.begin_write("append to the audit log").await?;
        // The head and the newest row in one round trip (an append waits on each).
        let (head_hash, head_count, last_id, last_chain): (Option<String>, Option<i64>, Option<i64>, Option<String>) =
            query(read_head(tx.backend())).fetch_one(&mut tx).await.ctx("cannot read the audit head")?;
        let (mut prev_hash, mut count) = match (head_hash, head_count) {
            (Some(hash), Some(count)) => (hash, count),
            _ => (GENESIS.to_string(), 0),
        };
        let mut next_id = last_id.map_or(1, |id| id + 1);
        let user = crate::ssh::target::local_user();
        if last_chain.as_deref() == Some(CHAIN_SHA256) {
            // The log so far is unkeyed: pin its head under the key, saying so.
            let mut rebase = AuditEntry {
                id: next_id,
                ts: now_rfc3339(),
                session_id: request.session_id.clone(),
                event: AuditEvent::Rebase,
                outcome: AuditOutcome::Ok,
                ref_id: None,
                requested_by: "merlya".into(),
                user: user.clone(),
                login_user: String::new(),
                host: String::new(),
                address: String::new(),
                port: None,
                command: String::new(),
                exit_code: None,
                duration_ms: 0,
                approved_by: String::new(),
                approval_ref: None,
                reason: Some(format!(
                    "re-based {count} unkeyed (plain SHA-256) entries onto the keyed chain; before this entry they could have been rewritten by anyone able to write merlya.db"
                )),
                chain: String::new(),
                prev_hash: prev_hash.clone(),
                hash: String::new(),
                signer: None,
                signature: None,
            };
            sealer.seal(&mut rebase);
            insert(&rebase, INSERT_ENTRY).execute(&mut tx).await.ctx("cannot append to the audit log")?;
            prev_hash = rebase.hash;
            count += 1;
            next_id += 1;
        }
        let mut entry = AuditEntry {
            id: next_id,
            ts: row.ts,
            session_id: request.session_id.clone(),
            event: row.event,
            outcome: row.outcome,
            ref_id: row.ref_id,
            requested_by: request.requested_by.clone(),
            user,
            login_user: request.login_user.clone(),
            host: request.host.clone(),
            address: request.address.clone(),
            port: request.port.map(i64::from),
            command: redact_command(&request.command),
            exit_code: row.exit_code,
            duration_ms: row.duration_ms,
            approved_by: request.approved_by.clone(),
            approval_ref: request.approval_ref.clone(),
            reason: row.reason.map(|r| redact_command(&r)),
            chain: String::new(),
            prev_hash: prev_hash.clone(),
            hash: String::new(),
            signer: None,
            signature: None,
        };
        sealer.seal(&mut entry);
        count += 1;
        // The entry and the head that names it, in one round trip.
        insert(&entry, insert_entry_move_head(tx.backend()))
            .bind(entry.id)
            .bind(&entry.hash)
            .bind(count)
            .execute(&mut tx)
            .await
            .ctx("cannot append to the audit log")?;
        tx.commit().await.map_err(self.write_error("append to the audit log"))?;
        // After the commit: a checkpoint must never name an entry that is not stored. Written beside
        // the work that follows (the command this entry announces), not before it. A signed entry
        // needs none: every operator's console keeps the head it verified (ADR 0032).
        if let Sealer::Keyed(key) = &sealer {
            self.audit.queue_checkpoint(key, entry.id, &entry.hash, count);
        }
        Ok(entry)
    }

    /// Stored rows, oldest first (`merlya audit export`, verification).
    pub async fn audit_entries(&self) -> Result<Vec<AuditEntry>, StoreError> {
        let rows = query("SELECT * FROM audit_log ORDER BY id")
            .fetch_all(self.pool())
            .await
            .ctx("cannot read the audit log")?;
        rows.iter().map(entry_from_row).collect::<Result<_, _>>().ctx("cannot read an audit row")
    }

    /// Executions and attempts matching `filter`, oldest first; a start is
    /// merged with its finish, and a start with none is `unfinished`.
    pub async fn list_audit(&self, filter: &AuditFilter) -> Result<Vec<AuditRecord>, StoreError> {
        let entries = self.audit_entries().await?;
        let mut records = merge(&entries);
        records.retain(|r| {
            filter.host.as_ref().is_none_or(|h| &r.host == h)
                && filter.session.as_ref().is_none_or(|id| &r.session_id == id)
                && filter.since.as_ref().is_none_or(|s| r.ts.as_str() >= s.as_str())
                && filter.outcome.is_none_or(|o| r.outcome == o)
        });
        if let Some(limit) = filter.limit.and_then(|l| usize::try_from(l).ok()) {
            let skip = records.len().saturating_sub(limit);
            records.drain(..skip);
        }
        Ok(records)
    }
}

/// Start + finish → one record; attempts and legacy rows as they are; re-base rows left out.
fn merge(entries: &[AuditEntry]) -> Vec<AuditRecord> {
    let finishes: std::collections::HashMap<i64, &AuditEntry> =
        entries.iter().filter(|e| e.event == AuditEvent::Finish).filter_map(|e| e.ref_id.map(|r| (r, e))).collect();
    entries
        .iter()
        .filter(|e| {
            matches!(e.event, AuditEvent::Start | AuditEvent::Attempt | AuditEvent::Legacy | AuditEvent::Review)
        })
        .map(|e| {
            let finish = (e.event == AuditEvent::Start).then(|| finishes.get(&e.id)).flatten();
            let outcome = match (e.event, finish) {
                (AuditEvent::Start, Some(f)) => f.outcome,
                (AuditEvent::Start, None) => AuditOutcome::Unfinished,
                _ => e.outcome,
            };
            AuditRecord {
                id: e.id,
                ts: e.ts.clone(),
                session_id: e.session_id.clone(),
                outcome,
                requested_by: e.requested_by.clone(),
                user: e.user.clone(),
                login_user: e.login_user.clone(),
                host: e.host.clone(),
                address: e.address.clone(),
                port: e.port,
                command: e.command.clone(),
                exit_code: finish.map(|f| f.exit_code).unwrap_or(e.exit_code),
                duration_ms: finish.map(|f| f.duration_ms).unwrap_or(e.duration_ms),
                approved_by: e.approved_by.clone(),
                approval_ref: e.approval_ref.clone(),
                reason: finish.map(|f| f.reason.clone()).unwrap_or_else(|| e.reason.clone()),
                finished_id: finish.map(|f| f.id),
                finished_at: finish.map(|f| f.ts.clone()),
            }
        })
        .collect()
}

/// The head (hash, count) and the newest row (id, chain), in one round trip. On PostgreSQL the head
/// row is locked by this statement until the append commits: appenders on every machine queue here.
fn read_head(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => {
            "SELECT (SELECT hash FROM audit_head WHERE id = 1), (SELECT count FROM audit_head WHERE id = 1),
                last.id, last.chain
            FROM (SELECT 1) LEFT JOIN (SELECT id, chain FROM audit_log ORDER BY id DESC LIMIT 1) AS last"
        }
        // Everything from the head row itself: a statement that waited for the lock sees the row as
        // the appender before it left it (PostgreSQL re-reads a locked row, not a subquery's table).
        // Every entry merlya writes on PostgreSQL is signed, so there is no unkeyed run to re-base.
        Backend::Postgres => {
            "SELECT hash, count, NULLIF(last_id, 0), CAST(NULL AS TEXT) FROM audit_head WHERE id = 1 FOR UPDATE"
        }
    }
}

/// The columns of an entry, bound as `$1`…`$23`.
macro_rules! entry_columns {
    () => {
        "audit_log (id, ts, session_id, event, outcome, ref_id, requested_by, \"user\", login_user, host,
             address, port, command, exit_code, duration_ms, approved_by, approval_ref, reason, chain, prev_hash, hash,
             signer, signature)"
    };
}

/// An entry alone (a re-base entry, followed by the entry that moves the head).
const INSERT_ENTRY: &str = concat!(
    "INSERT INTO ",
    entry_columns!(),
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)"
);

/// An entry and the head moved to (last_id, hash, count) = ($24, $25, $26), in one round trip.
fn insert_entry_move_head(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => concat!(
            "INSERT INTO ",
            entry_columns!(),
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
                 $22, $23);
             INSERT INTO audit_head (id, last_id, hash, count) VALUES (1, $24, $25, $26)
             ON CONFLICT(id) DO UPDATE SET last_id = excluded.last_id, hash = excluded.hash, count = excluded.count"
        ),
        // One statement (PostgreSQL prepares no more): the head moves and the entry is written
        // together, under the lock `read_head` took.
        Backend::Postgres => concat!(
            "WITH moved AS (UPDATE audit_head SET last_id = $24, hash = $25, count = $26 WHERE id = 1 RETURNING id)
             INSERT INTO ",
            entry_columns!(),
            " SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
                 $22, $23
             FROM moved"
        ),
    }
}

/// `sql` (one of the inserts above) with the entry's values bound.
fn insert(e: &AuditEntry, sql: &'static str) -> Sql {
    query(sql)
        .bind(e.id)
        .bind(&e.ts)
        .bind(&e.session_id)
        .bind(e.event.as_str())
        .bind(e.outcome.as_str())
        .bind(e.ref_id)
        .bind(&e.requested_by)
        .bind(&e.user)
        .bind(&e.login_user)
        .bind(&e.host)
        .bind(&e.address)
        .bind(e.port)
        .bind(&e.command)
        .bind(e.exit_code)
        .bind(e.duration_ms)
        .bind(&e.approved_by)
        .bind(&e.approval_ref)
        .bind(&e.reason)
        .bind(&e.chain)
        .bind(&e.prev_hash)
        .bind(&e.hash)
        .bind(&e.signer)
        .bind(&e.signature)
}
