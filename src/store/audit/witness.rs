//! An audit witness outside `MERLYA_HOME` (`audit.witness`): each checkpoint is
//! also written there, one JSON object per head, and `merlya audit verify`
//! checks that the chain still holds every witnessed head.
//!
//! The key and the checkpoint live in `MERLYA_HOME`, beside the database: who
//! can write there can re-chain the log with the real key, or delete key,
//! checkpoint and rows together, or put back an older copy of all three. The
//! witness keeps the heads somewhere else (a file only root or a log host can
//! rewrite, an append-only file, journald, a syslog daemon that forwards to a
//! log host), so these leave a head the chain no longer has. What it detects,
//! and what it does not, is in ADR 0026.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The name the heads carry in journald and syslog (`journalctl -t merlya-audit`).
pub const IDENTIFIER: &str = "merlya-audit";

/// Where checkpoints are witnessed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Witness {
    /// Appended to this file (created 0600 if missing).
    File(PathBuf),
    /// Sent to journald over its native socket (`journald`, or `journald:NAMESPACE` for a journal
    /// namespace); read back with `journalctl`.
    Journald {
        /// The journal namespace, if not the default journal.
        namespace: Option<String>,
    },
    /// Sent to a syslog socket (`syslog` is `/dev/log`; `syslog:/path/to/socket`), facility authpriv;
    /// read back from the file the log server keeps (`audit verify --witness-log FILE`), or from
    /// journald where it owns `/dev/log`.
    Syslog(PathBuf),
}

impl Witness {
    /// Parses `audit.witness`: `file:/absolute/path`, `journald[:NAMESPACE]`, `syslog[:/socket]`.
    pub fn parse(spec: &str) -> Result<Self, String> {
        match spec.split_once(':') {
            None if spec == "journald" => Ok(Self::Journald { namespace: None }),
            None if spec == "syslog" => Ok(Self::Syslog(PathBuf::from("/dev/log"))),
            Some(("journald", ns))
                if !ns.is_empty() && ns.chars().all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c)) =>
            {
                Ok(Self::Journald { namespace: Some(ns.to_string()) })
            }
            Some(("journald", ns)) => {
                Err(format!("journald:{ns}: expected a journal namespace (letters, digits, _ - .)"))
            }
            Some(("file" | "syslog", path)) if Path::new(path).is_absolute() => Ok(if spec.starts_with("file:") {
                Self::File(PathBuf::from(path))
            } else {
                Self::Syslog(PathBuf::from(path))
            }),
            Some((kind @ ("file" | "syslog"), path)) => Err(format!("{kind}:{path}: expected an absolute path")),
            _ => Err(format!("{spec:?}: expected file:/absolute/path, journald[:NAMESPACE] or syslog[:/socket]")),
        }
    }

    /// The file a file witness writes (`None` for journald and syslog, which live outside the home).
    pub fn file(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            _ => None,
        }
    }

    /// Where heads go, for messages: a path, or the journal and its namespace.
    pub fn describe(&self) -> String {
        match self {
            Self::File(path) => path.display().to_string(),
            Self::Journald { namespace: None } => "journald".into(),
            Self::Journald { namespace: Some(ns) } => format!("journald (namespace {ns})"),
            Self::Syslog(socket) => format!("syslog ({})", socket.display()),
        }
    }

    /// The socket or file written to.
    pub fn target(&self) -> PathBuf {
        match self {
            Self::File(path) | Self::Syslog(path) => path.clone(),
            Self::Journald { namespace } => journal_dir(namespace.as_deref()).join("socket"),
        }
    }
}

/// `/run/systemd/journal`, or `/run/systemd/journal.NAMESPACE`.
fn journal_dir(namespace: Option<&str>) -> PathBuf {
    match namespace {
        None => PathBuf::from("/run/systemd/journal"),
        Some(ns) => PathBuf::from(format!("/run/systemd/journal.{ns}")),
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

/// Writes `head` to the witness: appended and synced to a file; one datagram to journald or syslog
/// (the daemon has it when the call returns; an error when it is not listening).
pub fn append(witness: &Witness, head: &Witnessed) -> std::io::Result<()> {
    let json = serde_json::to_string(head).map_err(std::io::Error::other)?;
    match witness {
        Witness::File(path) => {
            let mut file = crate::home::private_file_options().append(true).create(true).open(path)?;
            file.write_all(format!("{json}\n").as_bytes())?;
            file.sync_data()
        }
        Witness::Journald { .. } => {
            // The native protocol: KEY=VALUE lines (the JSON holds no new line).
            let message = format!(
                "MESSAGE={json}\nSYSLOG_IDENTIFIER={IDENTIFIER}\nPRIORITY=5\nSYSLOG_FACILITY=10\nMERLYA_AUDIT_DATABASE={}\n",
                head.database.replace('\n', " ")
            );
            send(&witness.target(), message.as_bytes())
        }
        Witness::Syslog(socket) => {
            // RFC 3164, as logger(1) sends it: authpriv.notice (10 * 8 + 5).
            let stamp = chrono::Local::now().format("%b %e %H:%M:%S");
            let message = format!("<85>{stamp} {IDENTIFIER}[{}]: {json}", std::process::id());
            send(socket, message.as_bytes())
        }
    }
}

/// One datagram to a local socket.
fn send(socket: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let sender = std::os::unix::net::UnixDatagram::unbound()?;
    sender.send_to(bytes, socket).map(|_| ())
}

/// Every head witnessed for `database`, oldest first: from `log` when given (a file the log server
/// keeps, or `journalctl -t merlya-audit -o cat` saved), else from the witness itself.
pub fn read(witness: &Witness, database: &str, log: Option<&Path>) -> Result<Vec<Witnessed>, String> {
    if let Some(log) = log {
        let text = std::fs::read_to_string(log).map_err(|e| format!("{}: {e}", log.display()))?;
        return heads(&text, database, &log.display().to_string(), false);
    }
    match witness {
        Witness::File(path) => {
            let text = match std::fs::read_to_string(path) {
                Ok(text) => text,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(format!("{}: {e}", path.display())),
            };
            heads(&text, database, &path.display().to_string(), true)
        }
        Witness::Journald { namespace } => journal(namespace.as_deref(), database),
        Witness::Syslog(_) => journal(None, database).map_err(|e| {
            format!("{e}; give the file your log server keeps with `merlya audit verify --witness-log FILE`")
        }),
    }
}

/// The heads journald holds (`journalctl -t merlya-audit -o cat`).
fn journal(namespace: Option<&str>, database: &str) -> Result<Vec<Witnessed>, String> {
    let mut journalctl = std::process::Command::new("journalctl");
    journalctl.args(["-t", IDENTIFIER, "-o", "cat", "--no-pager", "-q"]);
    if let Some(ns) = namespace {
        journalctl.arg(format!("--namespace={ns}"));
    }
    let out = journalctl.output().map_err(|e| format!("journalctl cannot be run: {e}"))?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(format!("journalctl failed ({}): {why}", out.status));
    }
    heads(&String::from_utf8_lossy(&out.stdout), database, "journalctl", false)
}

/// The heads in `text` for `database`. A witness file holds only heads (`strict`: any other line is
/// an error); a log holds other programs' lines too, and a head may follow a syslog prefix.
fn heads(text: &str, database: &str, source: &str, strict: bool) -> Result<Vec<Witnessed>, String> {
    let mut heads = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let json = if strict || line.starts_with('{') {
            line
        } else {
            match line.find(IDENTIFIER).and_then(|at| line[at..].find('{').map(|b| &line[at + b..])) {
                Some(json) => json,
                None => continue,
            }
        };
        let head: Witnessed =
            serde_json::from_str(json).map_err(|e| format!("{source} line {}: not a witnessed head ({e})", n + 1))?;
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
        assert_eq!(Witness::parse("file:/var/log/w").unwrap().file(), Some(Path::new("/var/log/w")));
        assert!(Witness::parse("file:w").unwrap_err().contains("absolute"));
        assert_eq!(Witness::parse("journald").unwrap(), Witness::Journald { namespace: None });
        assert_eq!(Witness::parse("journald:audit").unwrap(), Witness::Journald { namespace: Some("audit".into()) });
        assert!(Witness::parse("journald:../x").is_err());
        assert_eq!(Witness::parse("syslog").unwrap(), Witness::Syslog("/dev/log".into()));
        assert_eq!(Witness::parse("syslog:/run/log.sock").unwrap(), Witness::Syslog("/run/log.sock".into()));
        assert!(Witness::parse("syslog:log.sock").unwrap_err().contains("absolute"));
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
        assert_eq!(read(&w, "/a", None).unwrap(), [head("/a", 1), head("/a", 3)]);
        let path = w.file().unwrap().to_path_buf();
        // A syslog file: other programs' lines are skipped, heads after the prefix are read.
        let log = dir.path().join("auth.log");
        let json = serde_json::to_string(&head("/a", 7)).unwrap();
        std::fs::write(
            &log,
            format!("Nov 26 06:36:01 h sshd[9]: Accepted key {{x}}\nNov 26 06:36:02 h merlya-audit[12]: {json}\n"),
        )
        .unwrap();
        assert_eq!(read(&w, "/a", Some(&log)).unwrap(), [head("/a", 7)]);
        std::fs::write(&path, "{oops\n").unwrap();
        assert!(read(&w, "/a", None).unwrap_err().contains("line 1"));
    }
}
