//! An audit witness outside `MERLYA_HOME` (`audit.witness: file:PATH`): each
//! checkpoint is also appended there, one JSON line per head, and `merlya audit
//! verify` checks that the chain still holds every witnessed head.
//!
//! The key and the checkpoint live in `MERLYA_HOME`, beside the database: who
//! can write there can re-chain the log with the real key, or delete key,
//! checkpoint and rows together, or put back an older copy of all three. The
//! witness keeps the heads somewhere else (a file only root or a log host can
//! rewrite, an append-only file), so these leave a head the chain no longer has.
//! What it detects, and what it does not, is in ADR 0026.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where checkpoints are witnessed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Witness {
    /// Appended to this file (created 0600 if missing).
    File(PathBuf),
}

impl Witness {
    /// Parses `audit.witness` (`file:/absolute/path`).
    pub fn parse(spec: &str) -> Result<Self, String> {
        match spec.split_once(':') {
            Some(("file", path)) if Path::new(path).is_absolute() => Ok(Self::File(PathBuf::from(path))),
            Some(("file", path)) => Err(format!("file:{path}: expected an absolute path")),
            _ if matches!(spec, "journald" | "syslog") => Err(format!(
                "{spec}: not supported yet; use file:PATH (a file outside MERLYA_HOME, append-only or on another host)"
            )),
            _ => Err(format!("{spec:?}: expected file:/absolute/path")),
        }
    }

    /// The path of a file witness.
    pub fn path(&self) -> &Path {
        match self {
            Self::File(path) => path,
        }
    }
}

/// One witnessed head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Witnessed {
    /// The database the head belongs to (its absolute path).
    pub database: String,
    /// The newest entry's id.
    pub last_id: i64,
    /// Its hash.
    pub hash: String,
    /// How many entries the chain held.
    pub count: i64,
    /// When the checkpoint was written.
    pub written_at: String,
}

/// Appends `head` to the witness, synced before returning.
pub fn append(witness: &Witness, head: &Witnessed) -> std::io::Result<()> {
    let mut line = serde_json::to_string(head).map_err(std::io::Error::other)?;
    line.push('\n');
    let mut file = crate::home::private_file_options().append(true).create(true).open(witness.path())?;
    file.write_all(line.as_bytes())?;
    file.sync_data()
}

/// Every head witnessed for `database`, oldest first.
pub fn read(witness: &Witness, database: &str) -> Result<Vec<Witnessed>, String> {
    let text = match std::fs::read_to_string(witness.path()) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("{}: {e}", witness.path().display())),
    };
    let mut heads = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let head: Witnessed = serde_json::from_str(line)
            .map_err(|e| format!("{} line {}: not a witnessed head ({e})", witness.path().display(), n + 1))?;
        if head.database == database {
            heads.push(head);
        }
    }
    Ok(heads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_files_are_witnesses() {
        assert_eq!(Witness::parse("file:/var/log/w").unwrap().path(), Path::new("/var/log/w"));
        assert!(Witness::parse("file:w").unwrap_err().contains("absolute"));
        assert!(Witness::parse("journald").unwrap_err().contains("not supported yet"));
        assert!(Witness::parse("/var/log/w").is_err());
    }

    #[test]
    fn heads_are_read_back_per_database_and_a_bad_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let w = Witness::File(dir.path().join("w"));
        let head = |db: &str, id| Witnessed {
            database: db.into(),
            last_id: id,
            hash: format!("h{id}"),
            count: id,
            written_at: "t".into(),
        };
        append(&w, &head("/a", 1)).unwrap();
        append(&w, &head("/b", 2)).unwrap();
        append(&w, &head("/a", 3)).unwrap();
        assert_eq!(read(&w, "/a").unwrap(), [head("/a", 1), head("/a", 3)]);
        std::fs::write(w.path(), "{oops\n").unwrap();
        assert!(read(&w, "/a").unwrap_err().contains("line 1"));
    }
}
