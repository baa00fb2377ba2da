//! Where merlya keeps its files: `MERLYA_HOME` (default `~/.merlya`).
//!
//! Every other module asks this one for a path, so tests can point the whole
//! program at a temporary directory with one environment variable.

use std::path::{Path, PathBuf};

use color_eyre::eyre::{Result, WrapErr, eyre};

/// The root folder of one merlya installation and the files inside it.
#[derive(Debug, Clone)]
pub struct MerlyaHome {
    root: PathBuf,
}

impl MerlyaHome {
    /// Uses `MERLYA_HOME` if set, otherwise `~/.merlya`.
    pub fn from_env() -> Result<Self> {
        if let Some(dir) = std::env::var_os("MERLYA_HOME").filter(|v| !v.is_empty()) {
            return Ok(Self::at(PathBuf::from(dir)));
        }
        let home = dirs::home_dir().ok_or_else(|| eyre!("cannot find the home directory; set MERLYA_HOME"))?;
        Ok(Self::at(home.join(".merlya")))
    }

    /// A home rooted at `root` (used by `--home` and by tests).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Creates the folders merlya writes to, if missing. Folders merlya
    /// creates are private (0700): they hold the database, logs and the audit
    /// key. An existing folder keeps the mode its owner gave it.
    pub fn ensure(&self) -> Result<()> {
        for dir in [self.root.clone(), self.logs_dir()] {
            create_private_dir(&dir).wrap_err_with(|| format!("cannot create {}", dir.display()))?;
        }
        Ok(())
    }

    /// The root's permission bits when others than its owner may enter or read it (a home made by
    /// hand or an older merlya, 0755): it holds the database, the audit key and the logs.
    pub fn open_to_others(&self) -> Option<u32> {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&self.root).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then_some(mode)
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `config.yaml`.
    pub fn config_file(&self) -> PathBuf {
        self.root.join("config.yaml")
    }

    /// The SQLite database.
    pub fn database(&self) -> PathBuf {
        self.root.join("merlya.db")
    }

    /// Rolling log files.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// Command output past what a result keeps (1 MiB per stream), one file per host and stream.
    pub fn output_dir(&self) -> PathBuf {
        self.logs_dir().join("output")
    }

    /// merlya's own known_hosts, consulted after `~/.ssh/known_hosts` and
    /// written by `accept-new` and by decisions taken in the console.
    pub fn known_hosts(&self) -> PathBuf {
        self.root.join("known_hosts")
    }

    /// User keymap overrides.
    pub fn keymaps_dir(&self) -> PathBuf {
        self.root.join("keymaps")
    }

    /// User skills (runbooks), beside the built-in ones.
    pub fn skills_dir(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// User IaC templates (one folder each), beside and over the built-in ones.
    pub fn templates_dir(&self) -> PathBuf {
        self.root.join("templates")
    }

    /// User theme overrides.
    pub fn themes_dir(&self) -> PathBuf {
        self.root.join("themes")
    }

    /// The console's input history.
    pub fn history_file(&self) -> PathBuf {
        self.root.join("history")
    }

    /// The audit log's HMAC key, kept outside the database (ADR 0015).
    pub fn audit_key(&self) -> PathBuf {
        audit_key_beside(&self.database())
    }

    /// The signed copy of the audit chain's head, kept outside the database (ADR 0015).
    pub fn audit_checkpoint(&self) -> PathBuf {
        audit_checkpoint_beside(&self.database())
    }

    /// This home's ed25519 key, signing its entries in a team's audit log (ADR 0032).
    pub fn operator_key(&self) -> PathBuf {
        operator_key_beside(&self.database())
    }

    /// The bearer token `mcp serve --http` generated when none was given (0600).
    pub fn mcp_token(&self) -> PathBuf {
        self.root.join("mcp-http.token")
    }
}

/// `len` bytes from the kernel's random source: the seed of keys and tokens.
pub fn random_bytes(len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = vec![0u8; len];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// `audit.key` in the folder of `database` (the store only knows its file).
pub fn audit_key_beside(database: &Path) -> PathBuf {
    database.parent().unwrap_or(Path::new(".")).join("audit.key")
}

/// `audit.checkpoint` in the folder of `database`.
pub fn audit_checkpoint_beside(database: &Path) -> PathBuf {
    database.parent().unwrap_or(Path::new(".")).join("audit.checkpoint")
}

/// `operator.key` in the folder of `database`: this home's ed25519 signing key for a team's audit log
/// (ADR 0032). Its public half is registered in the store; the private half never leaves this file.
pub fn operator_key_beside(database: &Path) -> PathBuf {
    database.parent().unwrap_or(Path::new(".")).join("operator.key")
}

/// `audit.verified` in the folder of `database`: the last audit head this home verified, per store.
pub fn audit_verified_beside(database: &Path) -> PathBuf {
    database.parent().unwrap_or(Path::new(".")).join("audit.verified")
}

/// `user@machine`: who is at this console when `operator.name` does not say.
pub fn user_at_machine() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim();
    format!("{}@{}", crate::ssh::target::local_user(), if host.is_empty() { "localhost" } else { host })
}

/// Creates `dir` (and missing parents) with mode 0700; an existing folder is
/// left as it is, because it belongs to the user.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Options that create a file readable by its owner only (0600), so secrets,
/// logs and audit material never start out world-readable.
pub fn private_file_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Writes `bytes` to `path`, created 0600 (truncated when it exists): a file that may hold secrets.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    private_file_options().write(true).create(true).truncate(true).open(path)?.write_all(bytes)
}

/// Narrows an existing file merlya owns to 0600 (a no-op when it is already
/// private or missing).
pub fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        match std::fs::metadata(path) {
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            }
            Ok(_) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        Ok(())
    }
}

/// Replaces `path` with `bytes` atomically: a private temporary file in the
/// same folder, synced, then renamed over it. A reader sees the old content or
/// the new one, never half of it.
pub fn write_private_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), unique_suffix()));
    let written = (|| {
        let mut file = private_file_options().write(true).create_new(true).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_home_merlya_creates_is_private_and_an_existing_one_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let home = MerlyaHome::at(dir.path().join("new").join("home"));
        home.ensure().unwrap();
        assert_eq!(mode(home.root()), 0o700);
        assert_eq!(mode(&home.logs_dir()), 0o700);

        let existing = dir.path().join("mine");
        std::fs::create_dir(&existing).unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
        MerlyaHome::at(&existing).ensure().unwrap();
        assert_eq!(mode(&existing), 0o755, "a user's folder keeps its mode");
    }

    #[test]
    fn atomic_writes_are_private_and_replace_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        write_private_atomic(&path, b"one").unwrap();
        write_private_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(mode(&path), 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left");
    }
}
