//! Where output goes once a result has kept all it keeps: a file per host
//! and stream under `MERLYA_HOME/logs/output/` (0600, secrets masked), so a
//! host that printed 50 MB costs 1 MiB of memory and the rest stays readable.

use std::path::{Path, PathBuf};

use tokio::io::AsyncWriteExt;

use crate::secrets::reference::mask_values;

/// A spill file, created on the first line that needs it.
pub struct Spill {
    path: PathBuf,
    file: Option<tokio::io::BufWriter<tokio::fs::File>>,
    mask: Vec<String>,
    failed: bool,
}

impl Spill {
    /// A spill to `path`, masking `mask` in every line.
    pub fn new(path: PathBuf, mask: Vec<String>) -> Self {
        Self { path, file: None, mask, failed: false }
    }

    /// The file, once something was written to it.
    pub fn written(&self) -> Option<&Path> {
        self.file.as_ref().map(|_| self.path.as_path())
    }

    /// Appends one line; a file that cannot be written is given up once, with a warning.
    pub async fn line(&mut self, line: &str) {
        if self.failed {
            return;
        }
        if self.file.is_none() {
            match open(&self.path).await {
                Ok(file) => self.file = Some(tokio::io::BufWriter::with_capacity(1 << 16, file)),
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e, "cannot spill output");
                    self.failed = true;
                    return;
                }
            }
        }
        let mut text = mask_values(line, &self.mask);
        text.push('\n');
        if let Some(file) = self.file.as_mut()
            && let Err(e) = file.write_all(text.as_bytes()).await
        {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot spill output");
            self.failed = true;
        }
    }

    /// Writes what is buffered.
    pub async fn flush(&mut self) {
        if let Some(file) = self.file.as_mut() {
            let _ = file.flush().await;
        }
    }
}

async fn open(path: &Path) -> std::io::Result<tokio::fs::File> {
    if let Some(dir) = path.parent() {
        tokio::fs::create_dir_all(dir).await?;
    }
    tokio::fs::OpenOptions::new().create(true).append(true).mode(0o600).open(path).await
}

/// A name no other run of this machine uses: milliseconds since the epoch,
/// the process and a counter, then the host.
pub fn prefix_for(dir: &Path, host: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let host: String =
        host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{millis}-{}-{n}-{host}", std::process::id()))
}

/// The spill of one stream (`stdout`, `stderr`) for a run whose prefix is `prefix`.
pub fn for_stream(prefix: Option<&Path>, stream: &str, mask: &[String]) -> Option<Spill> {
    prefix.map(|p| Spill::new(p.with_extension(format!("{stream}.log")), mask.to_vec()))
}

/// Deletes spill files in `dir` last written more than `max_age` ago (they
/// follow the raw logs' retention); returns how many went.
pub fn prune(dir: &Path, max_age: std::time::Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let now = std::time::SystemTime::now();
    entries
        .flatten()
        .filter(|e| {
            e.metadata().and_then(|m| m.modified()).is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > max_age))
        })
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_spill_files_are_pruned_and_new_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (old, new) = (dir.path().join("old.stdout.log"), dir.path().join("new.stdout.log"));
        for path in [&old, &new] {
            std::fs::write(path, "x").unwrap();
        }
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(10 * 86_400);
        std::fs::File::options().write(true).open(&old).unwrap().set_modified(long_ago).unwrap();
        assert_eq!(prune(dir.path(), std::time::Duration::from_secs(7 * 86_400)), 1);
        assert!(!old.exists() && new.exists());
        assert_eq!(prune(&dir.path().join("missing"), std::time::Duration::ZERO), 0);
    }
}
