//! Where output goes once a result has kept all it keeps: a file per host
//! and stream under `MERLYA_HOME/logs/output/` (0600, secrets masked), so a
//! host that printed 50 MB costs 1 MiB of memory and the rest stays readable.
//!
//! Bounded twice (`output.spill_max_mb`, `output.spill_total_mb`): one
//! command on one host keeps at most the first, and all spilled output in
//! MERLYA_HOME at most the second (the oldest files go first to make room).
//! Past either, the rest is dropped after a marker line and counted, and the
//! result says how much: a `base64 /dev/urandom` no longer fills the disk.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;

use crate::secrets::reference::mask_values;

/// Files younger than this are never deleted to make room (a run may still be writing them).
const IN_USE: std::time::Duration = std::time::Duration::from_secs(60);

/// The spill limits of one MERLYA_HOME, shared by every run of the process.
#[derive(Debug)]
pub struct SpillBudget {
    dir: PathBuf,
    per_command: u64,
    total: u64,
    used: AtomicU64,
}

impl SpillBudget {
    /// The budget of `dir`: `per_command_mb` per command and host, `total_mb` for the folder
    /// (what it holds now is counted).
    pub fn new(dir: PathBuf, per_command_mb: u64, total_mb: u64) -> Arc<Self> {
        let used = folder_size(&dir);
        Arc::new(Self { dir, per_command: per_command_mb << 20, total: total_mb << 20, used: AtomicU64::new(used) })
    }

    /// Where spill files go.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Takes `bytes` from the folder's total, deleting the oldest files not in use to make room.
    fn reserve(&self, bytes: u64) -> bool {
        if self.used.fetch_add(bytes, Ordering::Relaxed) + bytes <= self.total {
            return true;
        }
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .filter(|(modified, _)| modified.elapsed().is_ok_and(|age| age > IN_USE))
            .collect();
        files.sort();
        // One read of the folder: each deleted file's size is taken off, not the folder read again.
        let mut now = folder_size(&self.dir);
        for (_, path) in files {
            if now + bytes <= self.total {
                break;
            }
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            if std::fs::remove_file(&path).is_ok() {
                now = now.saturating_sub(size);
            }
        }
        self.used.store(now, Ordering::Relaxed);
        if now + bytes <= self.total {
            self.used.fetch_add(bytes, Ordering::Relaxed);
            true
        } else {
            false
        }
    }
}

/// Bytes of the files in `dir`.
fn folder_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir).into_iter().flatten().flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum()
}

/// Where one command's output on one host is spilled: a file name prefix, and what its streams
/// have written together.
#[derive(Debug, Clone)]
pub struct SpillTarget {
    prefix: PathBuf,
    budget: Arc<SpillBudget>,
    written: Arc<AtomicU64>,
}

impl SpillTarget {
    /// A target no other run of this machine uses, for `host`.
    pub fn for_host(budget: &Arc<SpillBudget>, host: &str) -> Self {
        Self { prefix: prefix_for(&budget.dir, host), budget: Arc::clone(budget), written: Arc::default() }
    }
}

/// Why a spill stopped keeping lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopped {
    /// `output.spill_max_mb` for this command.
    Command,
    /// `output.spill_total_mb` for MERLYA_HOME.
    Total,
    /// The file could not be written (a full disk).
    Failed,
}

/// A spill file, created on the first line that needs it.
pub struct Spill {
    path: PathBuf,
    file: Option<tokio::io::BufWriter<tokio::fs::File>>,
    mask: Vec<String>,
    target: SpillTarget,
    stopped: Option<Stopped>,
    /// Bytes not kept once the spill stopped.
    dropped: u64,
}

impl Spill {
    /// A spill to `path` within `target`'s limits, masking `mask` in every line.
    fn new(path: PathBuf, target: SpillTarget, mask: Vec<String>) -> Self {
        Self { path, file: None, mask, target, stopped: None, dropped: 0 }
    }

    /// The file, once something was written to it.
    pub fn written(&self) -> Option<&Path> {
        self.file.as_ref().map(|_| self.path.as_path())
    }

    /// Bytes of output that were neither kept in the result nor in the file.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Appends one line; past a limit, or once the file cannot be written, lines are counted and
    /// dropped after a marker line that says why.
    pub async fn line(&mut self, line: &str) {
        let mut text = mask_values(line, &self.mask);
        text.push('\n');
        let len = text.len() as u64;
        if self.stopped.is_some() {
            self.dropped += len;
            return;
        }
        let budget = Arc::clone(&self.target.budget);
        if self.target.written.fetch_add(len, Ordering::Relaxed) + len > budget.per_command {
            return self.stop(Stopped::Command, len).await;
        }
        if !budget.reserve(len) {
            return self.stop(Stopped::Total, len).await;
        }
        if let Err(e) = self.write(&text).await {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot spill output");
            self.stopped = Some(Stopped::Failed);
            self.dropped += len;
        }
    }

    async fn write(&mut self, text: &str) -> std::io::Result<()> {
        if self.file.is_none() {
            self.file = Some(tokio::io::BufWriter::with_capacity(1 << 16, open(&self.path).await?));
        }
        match self.file.as_mut() {
            Some(file) => file.write_all(text.as_bytes()).await,
            None => Ok(()),
        }
    }

    /// Stops keeping lines, with a marker line in the file.
    async fn stop(&mut self, why: Stopped, len: u64) {
        self.stopped = Some(why);
        self.dropped += len;
        let budget = &self.target.budget;
        let marker = match why {
            Stopped::Command => format!(
                "[merlya: this command's output past {} MiB was not kept (output.spill_max_mb)]\n",
                budget.per_command >> 20
            ),
            Stopped::Total => format!(
                "[merlya: spilled output in MERLYA_HOME reached {} MiB; the rest was not kept (output.spill_total_mb)]\n",
                budget.total >> 20
            ),
            Stopped::Failed => return,
        };
        let _ = self.write(&marker).await;
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
fn prefix_for(dir: &Path, host: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let host: String =
        host.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    dir.join(format!("{millis}-{}-{n}-{host}", std::process::id()))
}

/// The spill of one stream (`stdout`, `stderr`) of a run spilling to `target`.
pub fn for_stream(target: Option<&SpillTarget>, stream: &str, mask: &[String]) -> Option<Spill> {
    target.map(|t| Spill::new(t.prefix.with_extension(format!("{stream}.log")), t.clone(), mask.to_vec()))
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

    async fn spill_lines(target: &SpillTarget, stream: &str, bytes: usize) -> Spill {
        let mut spill = for_stream(Some(target), stream, &[]).unwrap();
        let line = "x".repeat(1023);
        for _ in 0..bytes / 1024 {
            spill.line(&line).await;
        }
        spill.flush().await;
        spill
    }

    #[tokio::test]
    async fn a_command_keeps_at_most_its_share_and_the_home_at_most_its_total() {
        let dir = tempfile::tempdir().unwrap();
        let budget = SpillBudget::new(dir.path().to_path_buf(), 1, 3);
        // One command on one host: both streams together keep 1 MiB, the rest is counted.
        let web01 = SpillTarget::for_host(&budget, "web01");
        let out = spill_lines(&web01, "stdout", 3 << 20).await;
        let err = spill_lines(&web01, "stderr", 1 << 20).await;
        let kept = std::fs::metadata(out.written().unwrap()).unwrap().len();
        assert!(kept <= (1 << 20) + 200 && kept > (1 << 20) - 2048, "{kept}");
        let text = std::fs::read_to_string(out.written().unwrap()).unwrap();
        assert!(
            text.ends_with("output past 1 MiB was not kept (output.spill_max_mb)]\n"),
            "{}",
            &text[text.len() - 200..]
        );
        assert_eq!(out.dropped() + err.dropped() + kept - text.lines().last().unwrap().len() as u64 - 1, 4 << 20);
        // Two more hosts fill the home's 3 MiB; the third finds no room (every file is in use).
        for host in ["web02", "web03"] {
            assert_eq!(spill_lines(&SpillTarget::for_host(&budget, host), "stdout", 1 << 20).await.dropped(), 0);
        }
        let late = spill_lines(&SpillTarget::for_host(&budget, "web04"), "stdout", 1 << 20).await;
        assert!(late.dropped() > 0, "the home's total is kept");
        let text = std::fs::read_to_string(late.written().unwrap()).unwrap();
        assert!(text.contains("(output.spill_total_mb)]"), "{text}");
        assert!(folder_size(dir.path()) <= (3 << 20) + 1024, "{}", folder_size(dir.path()));
        // Files no run writes any more are deleted, oldest first, to make room.
        let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        for entry in std::fs::read_dir(dir.path()).unwrap().flatten() {
            std::fs::File::options().write(true).open(entry.path()).unwrap().set_modified(long_ago).unwrap();
        }
        let fresh = spill_lines(&SpillTarget::for_host(&budget, "web05"), "stdout", 1 << 20).await;
        assert_eq!(fresh.dropped(), 0, "room was made");
        assert!(fresh.written().unwrap().exists());
    }

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
