//! The last audit head this home verified, per store (`MERLYA_HOME/audit.verified`, 0600, replaced
//! atomically): `merlya audit verify` and the console's start-up check move it forward, and each
//! later check requires the store to still hold that entry with that hash. A store that no longer
//! extends it — the chain re-signed from an earlier entry, truncated, or an older copy put back by
//! whoever administers a team's database — is "audit rewritten" (ADR 0032).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::keys::KeyFileError;

/// A head verified once: the newest entry then, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenHead {
    /// The entry's sequence (`id`).
    pub id: i64,
    /// Its hash.
    pub hash: String,
    /// When it was verified (RFC 3339 UTC).
    pub verified_at: String,
}

/// The file of verified heads, one per store location (the database file, or the URL without its
/// password).
#[derive(Debug, Clone)]
pub struct SeenHeads {
    path: PathBuf,
}

impl SeenHeads {
    /// The file beside the database file `database` (in MERLYA_HOME).
    pub fn beside(database: &Path) -> Self {
        Self { path: crate::home::audit_verified_beside(database) }
    }

    /// Path of `audit.verified`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read_all(&self) -> Result<BTreeMap<String, SeenHead>, KeyFileError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
            Err(source) => return Err(KeyFileError::Io { path: self.path.clone(), source }),
        };
        serde_json::from_str(&text).map_err(|e| KeyFileError::Invalid { path: self.path.clone(), what: e.to_string() })
    }

    /// The head last verified in the store at `location`, if any.
    pub fn get(&self, location: &str) -> Result<Option<SeenHead>, KeyFileError> {
        Ok(self.read_all()?.remove(location))
    }

    /// Records `(id, hash)` as verified in `location`'s store. Never moves backwards (a slower check
    /// cannot undo a newer one); writers of several processes are serialised by a lock file.
    pub fn advance(&self, location: &str, id: i64, hash: &str) -> Result<(), KeyFileError> {
        let lock_path = self.path.with_extension("verified.lock");
        let io = |source| KeyFileError::Io { path: lock_path.clone(), source };
        let lock = crate::home::private_file_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&lock_path)
            .map_err(io)?;
        lock.lock().map_err(io)?;
        let mut heads = self.read_all()?;
        if heads.get(location).is_some_and(|seen| seen.id > id || (seen.id == id && seen.hash == hash)) {
            return Ok(());
        }
        let head = SeenHead { id, hash: hash.to_string(), verified_at: crate::store::now_rfc3339() };
        heads.insert(location.to_string(), head);
        let text = serde_json::to_string_pretty(&heads)
            .map_err(|e| KeyFileError::Invalid { path: self.path.clone(), what: e.to_string() })?;
        crate::home::write_private_atomic(&self.path, text.as_bytes())
            .map_err(|source| KeyFileError::Io { path: self.path.clone(), source })
    }
}

/// Why the store no longer extends `seen`, given the entry it now holds at that sequence and its
/// newest sequence; `None` when it still does.
pub fn rewritten(seen: &SeenHead, at: Option<&str>, newest: Option<i64>) -> Option<String> {
    let was = format!("this home verified entry {} (hash {}…) at {}", seen.id, short(&seen.hash), seen.verified_at);
    match at {
        Some(hash) if hash == seen.hash => None,
        Some(hash) => Some(format!(
            "audit rewritten: {was}; the store now holds another entry there (hash {}…): the chain was rewritten since",
            short(hash)
        )),
        None => Some(format!(
            "audit rewritten: {was}; the store {}: the chain was truncated or replaced since",
            match newest {
                Some(id) => format!("ends at entry {id}"),
                None => "holds no entry".to_string(),
            }
        )),
    }
}

/// The first characters of a hash (stored text: not necessarily hex, so cut by character).
pub(super) fn short(hash: &str) -> String {
    hash.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_kept_per_store_and_never_move_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let heads = SeenHeads::beside(&dir.path().join("merlya.db"));
        assert_eq!(heads.get("a").unwrap(), None);
        heads.advance("a", 5, "h5").unwrap();
        heads.advance("b", 2, "h2").unwrap();
        heads.advance("a", 3, "h3").unwrap();
        assert_eq!(heads.get("a").unwrap().map(|h| (h.id, h.hash)), Some((5, "h5".into())));
        assert_eq!(heads.get("b").unwrap().map(|h| h.id), Some(2));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(heads.path()).unwrap().permissions().mode() & 0o777, 0o600);
        let seen = heads.get("a").unwrap().unwrap();
        assert_eq!(rewritten(&seen, Some("h5"), Some(9)), None);
        assert!(rewritten(&seen, Some("x"), Some(9)).unwrap().contains("another entry there"));
        assert!(rewritten(&seen, None, Some(4)).unwrap().contains("ends at entry 4"));
        // A hash written by hand is not necessarily hex: cut by character, never mid-character.
        assert!(rewritten(&seen, Some(&"é".repeat(64)), Some(9)).unwrap().contains("éééé"));
    }
}
