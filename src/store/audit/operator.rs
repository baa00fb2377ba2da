//! Who signs a team's audit entries (ADR 0032): this home's operator, named by `operator.name`
//! (default user@machine), with an ed25519 key of their own in `MERLYA_HOME/operator.key` (the
//! 32-byte seed, 0600, created on the first signed append). The public half is registered in the
//! store's `operators` table; a name registered with one key never gets another, so no operator can
//! sign as a teammate, and no one holding the database alone can re-sign the chain.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

use super::keys::KeyFileError;
use crate::store::db::query;
use crate::store::{SqlContext, Store, StoreError, now_rfc3339};

/// Length of the key's seed in bytes.
pub const SEED_LEN: usize = 32;

/// Domain separation: an entry's signature can never pass for anything else this key signs.
const ENTRY_DOMAIN: &[u8] = b"merlya-audit-entry-v1\n";

/// An operator's private signing key. Its Debug output shows only the public half.
#[derive(Clone)]
pub struct OperatorKey(SigningKey);

impl std::fmt::Debug for OperatorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OperatorKey({})", self.public_hex())
    }
}

impl OperatorKey {
    /// The key grown from a seed (tests use fixed seeds to play an operator or an attacker).
    pub fn from_seed(seed: [u8; SEED_LEN]) -> Self {
        Self(SigningKey::from_bytes(&seed))
    }

    /// The public half, hex-encoded, as registered in `operators`.
    pub fn public_hex(&self) -> String {
        hex::encode(self.0.verifying_key().to_bytes())
    }

    /// The signature (hex) of an entry whose hash is `hash`.
    pub fn sign_hex(&self, hash: &str) -> String {
        let signature: Signature = self.0.sign(&[ENTRY_DOMAIN, hash.as_bytes()].concat());
        hex::encode(signature.to_bytes())
    }
}

/// A registered public key, read from its hex form (`None` when it is not one).
pub fn public_key(hex_key: &str) -> Option<VerifyingKey> {
    let bytes: [u8; 32] = hex::decode(hex_key).ok()?.try_into().ok()?;
    VerifyingKey::from_bytes(&bytes).ok()
}

/// Whether `signature_hex` is `key`'s signature of the entry hash `hash` (strict verification:
/// no malleable or weak-key signature passes).
pub fn signature_valid(key: &VerifyingKey, hash: &str, signature_hex: &str) -> bool {
    let Some(bytes) = hex::decode(signature_hex).ok().and_then(|b| <[u8; 64]>::try_from(b).ok()) else {
        return false;
    };
    key.verify_strict(&[ENTRY_DOMAIN, hash.as_bytes()].concat(), &Signature::from_bytes(&bytes)).is_ok()
}

/// This home's operator for one store: the name, the key file, and what is known of both.
#[derive(Debug)]
pub struct Operator {
    name: Mutex<Option<String>>,
    key_path: PathBuf,
    loaded: Mutex<Option<OperatorKey>>,
    /// The name this process registered (or found registered with its key) in the store.
    registered: Mutex<Option<String>>,
}

impl Operator {
    /// The operator whose key is beside the database file `database` (in MERLYA_HOME).
    pub fn beside(database: &Path) -> Self {
        Self {
            name: Mutex::new(None),
            key_path: crate::home::operator_key_beside(database),
            loaded: Mutex::new(None),
            registered: Mutex::new(None),
        }
    }

    /// Names the operator (`operator.name`); unset, entries are signed as user@machine.
    pub fn set_name(&self, name: String) {
        if let Ok(mut slot) = self.name.lock() {
            *slot = Some(name).filter(|n| !n.trim().is_empty());
        }
    }

    /// The name entries are signed with.
    pub fn name(&self) -> String {
        self.name.lock().ok().and_then(|n| n.clone()).unwrap_or_else(crate::home::user_at_machine)
    }

    /// Path of `operator.key`.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// The key if `operator.key` exists.
    pub fn load(&self) -> Result<Option<OperatorKey>, KeyFileError> {
        if let Some(key) = self.loaded.lock().ok().and_then(|k| k.clone()) {
            return Ok(Some(key));
        }
        let bytes = match std::fs::read(&self.key_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(KeyFileError::Io { path: self.key_path.clone(), source }),
        };
        let seed: [u8; SEED_LEN] = bytes.try_into().map_err(|b: Vec<u8>| KeyFileError::Invalid {
            path: self.key_path.clone(),
            what: format!("expected a {SEED_LEN}-byte ed25519 seed, found {} bytes", b.len()),
        })?;
        let key = OperatorKey::from_seed(seed);
        if let Ok(mut slot) = self.loaded.lock() {
            *slot = Some(key.clone());
        }
        Ok(Some(key))
    }

    /// The key, created (0600, never over an existing one) when the home has none yet. Two
    /// processes creating it at once end with the same key: the file is linked into place whole,
    /// and the one that finds it there reads it.
    pub fn load_or_create(&self) -> Result<OperatorKey, KeyFileError> {
        if let Some(key) = self.load()? {
            return Ok(key);
        }
        let io = |source| KeyFileError::Io { path: self.key_path.clone(), source };
        let seed = crate::home::random_bytes(SEED_LEN).map_err(io)?;
        let dir = self.key_path.parent().unwrap_or(Path::new("."));
        let tmp = dir.join(format!(".operator.key.{}.{:?}.tmp", std::process::id(), std::thread::current().id()));
        let linked = (|| {
            use std::io::Write;
            let mut file = crate::home::private_file_options().write(true).create_new(true).open(&tmp)?;
            file.write_all(&seed)?;
            file.sync_all()?;
            std::fs::hard_link(&tmp, &self.key_path)
        })();
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(io(e)),
        }
        self.load()?.ok_or_else(|| KeyFileError::Invalid {
            path: self.key_path.clone(),
            what: "vanished right after it was written".into(),
        })
    }

    fn registered_as(&self, name: &str) -> bool {
        self.registered.lock().is_ok_and(|r| r.as_deref() == Some(name))
    }

    fn mark_registered(&self, name: &str) {
        if let Ok(mut slot) = self.registered.lock() {
            *slot = Some(name.to_string());
        }
    }
}

fn key_error(e: KeyFileError) -> StoreError {
    StoreError::Io { context: "operator key".into(), source: std::io::Error::other(e.to_string()) }
}

impl Store {
    /// Names this home's operator (`operator.name`): the signer of its entries in a team's log.
    pub fn set_operator(&self, name: String) {
        self.operator.set_name(name);
    }

    /// The operator's name and key, the public half registered in `operators` (once per process).
    /// A name already registered with another key is refused, naming the operator: this home cannot
    /// sign as them.
    pub(crate) async fn operator_signer(&self) -> Result<(String, OperatorKey), StoreError> {
        let name = self.operator.name();
        let key = self.operator.load_or_create().map_err(key_error)?;
        if self.operator.registered_as(&name) {
            return Ok((name, key));
        }
        let public = key.public_hex();
        let inserted = query(
            "INSERT INTO operators (name, public_key, created_at) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&name)
        .bind(&public)
        .bind(now_rfc3339())
        .execute(self.pool())
        .await;
        inserted.map_err(self.write_error("register the operator"))?;
        let registered: String = query("SELECT public_key FROM operators WHERE name = $1")
            .bind(&name)
            .scalar(self.pool())
            .await
            .ctx("cannot read the registered operators")?;
        if registered != public {
            return Err(StoreError::Invalid(format!(
                "operator {name:?} is registered in the store at {} with another key ({}…); this home's key {} ({}…) cannot sign as them. Set operator.name to a name of your own, or use {name:?}'s own key",
                self.location(),
                super::seen::short(&registered),
                self.operator.key_path().display(),
                super::seen::short(&public),
            )));
        }
        self.operator.mark_registered(&name);
        Ok((name, key))
    }

    /// Every registered operator's public key (hex), by name.
    pub async fn registered_operators(&self) -> Result<HashMap<String, String>, StoreError> {
        let rows: Vec<(String, String)> = query("SELECT name, public_key FROM operators")
            .fetch_all(self.pool())
            .await
            .ctx("cannot read the registered operators")?;
        Ok(rows.into_iter().collect())
    }
}
