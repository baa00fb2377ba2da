//! Secrets on the OS keyring: the Secret Service where a desktop session runs
//! one, the kernel keyring (keyutils) otherwise, and an in-memory store that
//! warns once when neither is usable. That fallback is only for the default
//! (`secrets.backend: auto`): a backend asked for by name that is not usable
//! makes every secret operation fail with the reason, since a secret the user
//! meant to keep must not vanish at exit unnoticed. Values never touch the
//! database: only names are indexed there (for `merlya secret list`).
//!
//! The model and the audit log only ever see references such as
//! `@sudo:web01:password` (see [`reference`]); values are resolved at
//! execution time.

pub mod reference;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use keyring_core::{CredentialStore, Entry};

use serde::{Deserialize, Serialize};

/// Which secret store to use.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SecretsBackend {
    /// Secret Service if a D-Bus session offers one, else the kernel keyring, else memory.
    #[default]
    Auto,
    /// The desktop Secret Service only.
    SecretService,
    /// The kernel keyring only.
    Keyring,
    /// Memory only (nothing survives the process).
    Memory,
}

/// The Secret Service's label in messages.
const SECRET_SERVICE: &str = "Secret Service";
/// The kernel keyring's label in messages.
const KEYRING: &str = "kernel keyring";

/// The keyring service name under which merlya stores entries.
pub const SERVICE: &str = "merlya";

/// A secret operation that failed.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// The backend refused or failed.
    #[error("the {backend} could not {action} secret {name}: {detail}")]
    Backend { backend: &'static str, action: &'static str, name: String, detail: String },
    /// The backend named in the configuration is not usable here.
    #[error(
        "secrets.backend is `{setting}`, but the {backend} is not usable here: {reason}. Make it usable, or set secrets.backend to `auto` (falls back to memory, lost at exit) or `memory`"
    )]
    Unavailable { setting: &'static str, backend: &'static str, reason: String },
    /// A name that is not `service:host:field` or similar.
    #[error("invalid secret name {0:?}: use letters, digits and . _ - / : (e.g. sudo:web01:password)")]
    BadName(String),
}

/// Which store holds the secrets of this process, so that a message can say truthfully whether a
/// secret outlives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretStore {
    /// The desktop's Secret Service (gnome-keyring, KWallet): kept across logins.
    SecretService,
    /// The kernel keyring of the login session: kept until logout or reboot.
    KernelKeyring,
    /// This process's memory: lost at exit.
    Memory,
    /// The configured store is not usable: nothing is kept.
    Unavailable,
}

enum Backend {
    Keyring {
        store: Arc<CredentialStore>,
        label: &'static str,
    },
    Memory(Mutex<HashMap<String, String>>),
    /// The configured backend is unusable; every operation reports why.
    Unavailable {
        setting: &'static str,
        backend: &'static str,
        reason: String,
    },
}

/// Where secrets live for this process.
pub struct Secrets {
    backend: Backend,
}

impl Secrets {
    /// Opens the configured backend. `Auto` picks the first usable one:
    /// Secret Service (when a D-Bus session exists), the kernel keyring, then
    /// memory with a warning. A backend named explicitly is that one or
    /// [`SecretError::Unavailable`] on every use, never memory.
    pub fn open(choice: SecretsBackend) -> Self {
        let secret_service = || -> Result<Self, String> {
            if std::env::var_os("DBUS_SESSION_BUS_ADDRESS").is_none() {
                return Err("there is no D-Bus session (DBUS_SESSION_BUS_ADDRESS is not set)".into());
            }
            let store: Arc<CredentialStore> = zbus_secret_service_keyring_store::Store::new()
                .map_err(|e| format!("cannot reach it on the D-Bus session: {e}"))?;
            probe(&store)?;
            Ok(Self { backend: Backend::Keyring { store, label: SECRET_SERVICE } })
        };
        let keyring = || -> Result<Self, String> {
            let store: Arc<CredentialStore> =
                linux_keyutils_keyring_store::Store::new().map_err(|e| format!("cannot open it: {e}"))?;
            probe(&store)?;
            Ok(Self { backend: Backend::Keyring { store, label: KEYRING } })
        };
        let explicit = |setting, backend, found: Result<Self, String>| {
            found.unwrap_or_else(|reason| {
                tracing::warn!(setting, %reason, "the configured secret store is not usable");
                Self { backend: Backend::Unavailable { setting, backend, reason } }
            })
        };
        match choice {
            SecretsBackend::Memory => Self::memory(),
            SecretsBackend::SecretService => explicit("secret-service", SECRET_SERVICE, secret_service()),
            SecretsBackend::Keyring => explicit("keyring", KEYRING, keyring()),
            SecretsBackend::Auto => secret_service().or_else(|_| keyring()).unwrap_or_else(|reason| {
                tracing::warn!(
                    %reason,
                    "no usable OS keyring (no Secret Service, no session keyring); secrets live in memory only"
                );
                Self::memory()
            }),
        }
    }

    /// A store that forgets everything at exit (tests, and the last resort).
    pub fn memory() -> Self {
        Self { backend: Backend::Memory(Mutex::new(HashMap::new())) }
    }

    /// Which backend is in use, for messages.
    pub fn backend_name(&self) -> &'static str {
        match &self.backend {
            Backend::Keyring { label, .. } => label,
            Backend::Memory(_) => "memory store (lost at exit)",
            Backend::Unavailable { backend, .. } => backend,
        }
    }

    /// The store in use (the memory fallback included), for messages that say where a secret went.
    pub fn store(&self) -> SecretStore {
        match &self.backend {
            Backend::Keyring { label: SECRET_SERVICE, .. } => SecretStore::SecretService,
            Backend::Keyring { .. } => SecretStore::KernelKeyring,
            Backend::Memory(_) => SecretStore::Memory,
            Backend::Unavailable { .. } => SecretStore::Unavailable,
        }
    }

    /// Whether secrets survive this process.
    pub fn is_persistent(&self) -> bool {
        matches!(self.backend, Backend::Keyring { .. })
    }

    /// Why the configured backend cannot be used, when it cannot.
    pub fn unavailable(&self) -> Option<SecretError> {
        match &self.backend {
            Backend::Unavailable { setting, backend, reason } => {
                Some(SecretError::Unavailable { setting, backend, reason: reason.clone() })
            }
            _ => None,
        }
    }

    /// Stores `value` under `name`.
    pub fn set(&self, name: &str, value: &str) -> Result<(), SecretError> {
        validate_name(name)?;
        match &self.backend {
            Backend::Unavailable { setting, backend, reason } => {
                Err(SecretError::Unavailable { setting, backend, reason: reason.clone() })
            }
            Backend::Keyring { store, label } => entry(store, label, name, "store")?
                .set_password(value)
                .map_err(|e| backend_error(label, "store", name, e)),
            Backend::Memory(map) => {
                if let Ok(mut map) = map.lock() {
                    map.insert(name.to_string(), value.to_string());
                }
                Ok(())
            }
        }
    }

    /// The value under `name`, if any.
    pub fn get(&self, name: &str) -> Result<Option<String>, SecretError> {
        validate_name(name)?;
        match &self.backend {
            Backend::Unavailable { setting, backend, reason } => {
                Err(SecretError::Unavailable { setting, backend, reason: reason.clone() })
            }
            Backend::Keyring { store, label } => match entry(store, label, name, "read")?.get_password() {
                Ok(v) => Ok(Some(v)),
                Err(keyring_core::Error::NoEntry) => Ok(None),
                Err(e) => Err(backend_error(label, "read", name, e)),
            },
            Backend::Memory(map) => Ok(map.lock().ok().and_then(|m| m.get(name).cloned())),
        }
    }

    /// Deletes `name`; returns whether it existed.
    pub fn remove(&self, name: &str) -> Result<bool, SecretError> {
        validate_name(name)?;
        match &self.backend {
            Backend::Unavailable { setting, backend, reason } => {
                Err(SecretError::Unavailable { setting, backend, reason: reason.clone() })
            }
            Backend::Keyring { store, label } => match entry(store, label, name, "delete")?.delete_credential() {
                Ok(()) => Ok(true),
                Err(keyring_core::Error::NoEntry) => Ok(false),
                Err(e) => Err(backend_error(label, "delete", name, e)),
            },
            Backend::Memory(map) => Ok(map.lock().ok().and_then(|mut m| m.remove(name)).is_some()),
        }
    }
}

fn entry(
    store: &Arc<CredentialStore>,
    label: &'static str,
    name: &str,
    action: &'static str,
) -> Result<Entry, SecretError> {
    store.build(SERVICE, name, None).map_err(|e| backend_error(label, action, name, e))
}

fn backend_error(backend: &'static str, action: &'static str, name: &str, e: keyring_core::Error) -> SecretError {
    SecretError::Backend { backend, action, name: name.to_string(), detail: e.to_string() }
}

/// A write-read-delete round trip, to find out whether a backend works here;
/// the error says which step failed and how.
fn probe(store: &Arc<CredentialStore>) -> Result<(), String> {
    let entry = store.build(SERVICE, "__merlya_probe__", None).map_err(|e| format!("a test entry was refused: {e}"))?;
    entry.set_password("probe").map_err(|e| format!("a test write failed: {e}"))?;
    let read = entry.get_password();
    let _ = entry.delete_credential();
    match read {
        Ok(v) if v == "probe" => Ok(()),
        Ok(_) => Err("a test write read back a different value".into()),
        Err(e) => Err(format!("a test write could not be read back: {e}")),
    }
}

/// Secret names: letters, digits and `. _ - / :`.
pub fn validate_name(name: &str) -> Result<(), SecretError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':'));
    if ok { Ok(()) } else { Err(SecretError::BadName(name.to_string())) }
}

/// The secret name under which an SSH key's passphrase is kept.
pub fn key_passphrase_name(key_path: &std::path::Path) -> String {
    format!("ssh-key:{}:passphrase", key_path.display())
}

/// Read-only access for workers (the SSH layer asks for key passphrases).
pub trait SecretSource: Send + Sync {
    /// The value of `name`, if stored.
    fn lookup(&self, name: &str) -> Option<String>;
}

impl SecretSource for Secrets {
    fn lookup(&self, name: &str) -> Option<String> {
        match self.get(name) {
            Ok(value) => value,
            Err(e) => {
                tracing::warn!(secret = name, error = %e, "cannot read a secret");
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_store_round_trip_and_name_rules() {
        let s = Secrets::memory();
        assert!(!s.is_persistent());
        assert_eq!(s.store(), SecretStore::Memory);
        s.set("sudo:web01:password", "hunter2").unwrap();
        assert_eq!(s.get("sudo:web01:password").unwrap().as_deref(), Some("hunter2"));
        assert!(s.remove("sudo:web01:password").unwrap());
        assert!(!s.remove("sudo:web01:password").unwrap());
        assert_eq!(s.get("sudo:web01:password").unwrap(), None);
        assert!(matches!(s.set("bad name", "x"), Err(SecretError::BadName(_))));
        assert_eq!(key_passphrase_name(std::path::Path::new("/k/id")), "ssh-key:/k/id:passphrase");
    }
}
