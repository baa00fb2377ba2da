//! The audit chain's secrets outside the database: `audit.key` (32 random
//! bytes, 0600) and `audit.checkpoint` (the newest head, HMAC-signed, 0600,
//! replaced atomically).
//!
//! Someone who can write `merlya.db` but not these files cannot recompute
//! the chain (they lack the key) and cannot hide a wipe or a truncation (the
//! checkpoint still names the newest entry). See ADR 0015.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

use hmac::{Hmac, KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::home::{audit_checkpoint_beside, audit_key_beside, private_file_options, write_private_atomic};

/// Length of the HMAC key in bytes.
pub const KEY_LEN: usize = 32;

/// Domain separation for the checkpoint's signature, so an entry's MAC can never pass as a checkpoint's.
const CHECKPOINT_DOMAIN: &[u8] = b"merlya-audit-checkpoint-v1\n";

/// The HMAC-SHA256 key of the audit chain.
#[derive(Clone)]
pub struct AuditKey([u8; KEY_LEN]);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditKey(..)")
    }
}

impl AuditKey {
    /// A key from raw bytes (tests use this to play an attacker with another key).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Self {
        Self(bytes)
    }

    /// HMAC-SHA256 of `parts` concatenated, hex-encoded.
    pub fn mac_hex(&self, parts: &[&[u8]]) -> String {
        hex::encode(self.mac(parts).finalize().into_bytes())
    }

    /// Whether `hex_mac` is the MAC of `parts` (constant-time comparison).
    pub fn verify_hex(&self, parts: &[&[u8]], hex_mac: &str) -> bool {
        match hex::decode(hex_mac) {
            Ok(bytes) => self.mac(parts).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }

    fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        // A 32-byte key is always accepted by HMAC (any length is).
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
        for part in parts {
            mac.update(part);
        }
        mac
    }
}

/// The newest head of the chain as last seen by a writer, signed with the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Format version.
    pub version: u32,
    /// Id of the newest entry (0 when the log is empty).
    pub last_id: i64,
    /// Its hash (the genesis hash when empty).
    pub hash: String,
    /// How many entries the chain had.
    pub count: i64,
    /// When the checkpoint was written (RFC 3339 UTC).
    pub written_at: String,
    /// HMAC-SHA256 over the fields above.
    pub mac: String,
}

impl Checkpoint {
    /// A signed checkpoint for the given head.
    pub fn signed(key: &AuditKey, last_id: i64, hash: &str, count: i64) -> Self {
        let mut c = Self {
            version: 1,
            last_id,
            hash: hash.to_string(),
            count,
            written_at: super::super::now_rfc3339(),
            mac: String::new(),
        };
        c.mac = key.mac_hex(&[CHECKPOINT_DOMAIN, c.canonical().as_bytes()]);
        c
    }

    /// Whether the signature was made with `key`.
    pub fn signature_valid(&self, key: &AuditKey) -> bool {
        key.verify_hex(&[CHECKPOINT_DOMAIN, self.canonical().as_bytes()], &self.mac)
    }

    fn canonical(&self) -> String {
        serde_json::json!([self.version, self.last_id, self.hash, self.count, self.written_at]).to_string()
    }
}

/// Where the key and checkpoint of one database live, and the key once loaded.
#[derive(Debug)]
pub struct AuditFiles {
    key_path: PathBuf,
    checkpoint_path: PathBuf,
    loaded: Mutex<Option<AuditKey>>,
    queue: (Mutex<CheckpointQueue>, Condvar),
    /// Where each checkpoint is also written, outside MERLYA_HOME, and the database it names.
    witness: Mutex<Option<(super::witness::Witness, String)>>,
}

/// The newest head waiting to be written to `audit.checkpoint`, and whether a writer is at work:
/// appends do not wait for the checkpoint's file writes and syncs, and a burst of appends (a fan-out)
/// writes it once for the newest head.
#[derive(Debug, Default)]
struct CheckpointQueue {
    next: Option<(AuditKey, i64, String, i64)>,
    writing: bool,
}

/// Trouble with the files outside the database.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The filesystem refused.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The file is not what merlya wrote.
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
}

impl AuditFiles {
    /// The files beside the database file `database`.
    pub fn beside(database: &Path) -> Self {
        Self {
            key_path: audit_key_beside(database),
            checkpoint_path: audit_checkpoint_beside(database),
            loaded: Mutex::new(None),
            queue: (Mutex::new(CheckpointQueue::default()), Condvar::new()),
            witness: Mutex::new(None),
        }
    }

    /// Sets the witness of this database's checkpoints (`database`: its absolute path).
    pub fn set_witness(&self, witness: super::witness::Witness, database: String) {
        if let Ok(mut slot) = self.witness.lock() {
            *slot = Some((witness, database));
        }
    }

    /// The witness, if one is set, with the database name its heads carry.
    pub fn witness(&self) -> Option<(super::witness::Witness, String)> {
        self.witness.lock().ok().and_then(|w| w.clone())
    }

    /// Path of `audit.key`.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// Path of `audit.checkpoint`.
    pub fn checkpoint_path(&self) -> &Path {
        &self.checkpoint_path
    }

    /// The key if `audit.key` exists.
    pub fn load_key(&self) -> Result<Option<AuditKey>, KeyFileError> {
        if let Ok(guard) = self.loaded.lock()
            && let Some(key) = guard.as_ref()
        {
            return Ok(Some(key.clone()));
        }
        let bytes = match std::fs::read(&self.key_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(KeyFileError::Io { path: self.key_path.clone(), source }),
        };
        let key: [u8; KEY_LEN] = bytes.try_into().map_err(|b: Vec<u8>| KeyFileError::Invalid {
            path: self.key_path.clone(),
            what: format!("expected {KEY_LEN} bytes, found {}", b.len()),
        })?;
        let key = AuditKey(key);
        if let Ok(mut guard) = self.loaded.lock() {
            *guard = Some(key.clone());
        }
        Ok(Some(key))
    }

    /// Creates a new random key (0600, never overwriting one) and an empty
    /// signed checkpoint, so that from now on a missing checkpoint is noticed.
    pub fn create_key(&self) -> Result<AuditKey, KeyFileError> {
        let io = |source| KeyFileError::Io { path: self.key_path.clone(), source };
        let mut bytes = [0u8; KEY_LEN];
        bytes.copy_from_slice(&crate::home::random_bytes(KEY_LEN).map_err(io)?);
        // Written in full to a private temporary file, then hard-linked into
        // place: linking fails if a key exists, and a concurrent reader never
        // sees a half-written key.
        let dir = self.key_path.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!(".audit.key.{}.{:?}.tmp", std::process::id(), std::thread::current().id()));
        let linked = (|| {
            use std::io::Write;
            let mut file = private_file_options().write(true).create_new(true).open(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            std::fs::hard_link(&tmp, &self.key_path)
        })();
        let _ = std::fs::remove_file(&tmp);
        linked.map_err(io)?;
        let key = AuditKey(bytes);
        if let Ok(mut guard) = self.loaded.lock() {
            *guard = Some(key.clone());
        }
        Ok(key)
    }

    /// An exclusive lock held while deciding whether to create the key
    /// (released when the file is dropped).
    pub fn lock_creation(&self) -> Result<std::fs::File, KeyFileError> {
        let path = self.key_path.with_extension("key.lock");
        let io = |source| KeyFileError::Io { path: path.clone(), source };
        let file = private_file_options().write(true).create(true).truncate(false).open(&path).map_err(io)?;
        file.lock().map_err(io)?;
        Ok(file)
    }

    /// The checkpoint if `audit.checkpoint` exists (its signature is not checked here).
    pub fn read_checkpoint(&self) -> Result<Option<Checkpoint>, KeyFileError> {
        let text = match std::fs::read_to_string(&self.checkpoint_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(KeyFileError::Io { path: self.checkpoint_path.clone(), source }),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| KeyFileError::Invalid { path: self.checkpoint_path.clone(), what: e.to_string() })
    }

    /// Moves the checkpoint forward to `(last_id, hash, count)` on a blocking thread, after the entry's
    /// commit (as [`Self::advance_checkpoint`]); [`Self::settle`] waits for it. Without a runtime the
    /// checkpoint is written before returning.
    pub fn queue_checkpoint(self: &Arc<Self>, key: &AuditKey, last_id: i64, hash: &str, count: i64) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.write_or_warn(key, last_id, hash, count);
            return;
        };
        let Ok(mut queue) = self.queue.0.lock() else {
            return;
        };
        if queue.next.as_ref().is_none_or(|(_, queued, _, _)| *queued < last_id) {
            queue.next = Some((key.clone(), last_id, hash.to_string(), count));
        }
        if queue.writing {
            return;
        }
        queue.writing = true;
        drop(queue);
        let files = Arc::clone(self);
        handle.spawn_blocking(move || files.drain());
    }

    /// Writes queued heads until none is left, then wakes whoever waits in [`Self::settle`].
    fn drain(&self) {
        loop {
            let next = match self.queue.0.lock() {
                Ok(mut queue) => match queue.next.take() {
                    Some(next) => next,
                    None => {
                        queue.writing = false;
                        self.queue.1.notify_all();
                        return;
                    }
                },
                Err(_) => return,
            };
            let (key, last_id, hash, count) = next;
            self.write_or_warn(&key, last_id, &hash, count);
        }
    }

    fn write_or_warn(&self, key: &AuditKey, last_id: i64, hash: &str, count: i64) {
        if let Err(e) = self.advance_checkpoint(key, last_id, hash, count) {
            tracing::warn!(error = %e, "cannot write the audit checkpoint; `merlya audit verify` will report it lagging");
        }
    }

    /// Whether a queued checkpoint is still being written (then [`Self::settle`] would block).
    pub fn writing(&self) -> bool {
        self.queue.0.lock().map(|queue| queue.writing).unwrap_or(false)
    }

    /// Blocks until every queued checkpoint is written (before reading it, and when closing).
    pub fn settle(&self) {
        let Ok(mut queue) = self.queue.0.lock() else {
            return;
        };
        while queue.writing {
            queue = match self.queue.1.wait(queue) {
                Ok(queue) => queue,
                Err(_) => return,
            };
        }
    }

    /// Moves the checkpoint forward to `(last_id, hash, count)`. Writers of
    /// several processes are serialised by a lock file, and a checkpoint is
    /// never moved backwards (a slower writer cannot undo a faster one).
    pub fn advance_checkpoint(
        &self,
        key: &AuditKey,
        last_id: i64,
        hash: &str,
        count: i64,
    ) -> Result<Checkpoint, KeyFileError> {
        let lock_path = self.checkpoint_path.with_extension("checkpoint.lock");
        let io = |source| KeyFileError::Io { path: lock_path.clone(), source };
        let lock = private_file_options().write(true).create(true).truncate(false).open(&lock_path).map_err(io)?;
        lock.lock().map_err(io)?;
        let current = self.read_checkpoint().ok().flatten().filter(|c| c.signature_valid(key));
        if let Some(current) = current.filter(|c| c.last_id >= last_id && c.count >= count) {
            return Ok(current);
        }
        let checkpoint = Checkpoint::signed(key, last_id, hash, count);
        let text = serde_json::to_string_pretty(&checkpoint)
            .map_err(|e| KeyFileError::Invalid { path: self.checkpoint_path.clone(), what: e.to_string() })?;
        write_private_atomic(&self.checkpoint_path, text.as_bytes())
            .map_err(|source| KeyFileError::Io { path: self.checkpoint_path.clone(), source })?;
        if let Some((witness, database)) = self.witness() {
            let head = super::witness::Witnessed {
                database,
                last_id,
                hash: hash.to_string(),
                count,
                written_at: checkpoint.written_at.clone(),
            };
            super::witness::append(&witness, &head)
                .map_err(|source| KeyFileError::Io { path: witness.target(), source })?;
        }
        Ok(checkpoint)
    }
}
