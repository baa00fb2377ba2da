//! Writing under concurrency: every write transaction takes SQLite's write
//! lock when it begins (`BEGIN IMMEDIATE`), so a second process waits on the
//! busy timeout instead of failing when a deferred transaction would upgrade
//! its read lock (SQLite refuses that upgrade at once, without waiting, when
//! another writer committed in between). A wait that times out names the
//! database file and, when the system tells (Linux `/proc/locks`), the process
//! holding the lock.

use std::path::Path;
use std::time::Duration;

use super::db::{Pool, Tx};
use super::{Store, StoreError};

/// How long a write waits for another connection's write lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Byte of the `-shm` file SQLite locks while a connection writes to the WAL
/// (`WALINDEX_LOCK_OFFSET` + `WAL_WRITE_LOCK`).
const WAL_WRITE_LOCK_BYTE: u64 = 120;

impl Store {
    /// Begins a write transaction holding the write lock from the start;
    /// `what` says what it is for in the error if the lock never comes.
    pub(crate) async fn begin_write(&self, what: &str) -> Result<Tx, StoreError> {
        match self.pool().begin_write().await {
            // A COMMIT that failed (a full disk) is rolled back by SQLite, while sqlx still counts the
            // transaction open on that connection and refuses every later BEGIN on it: the connection
            // is closed and the pool opens a fresh one, so writes work again once there is room.
            Err(sqlx::Error::InvalidSavePointStatement) => {
                tracing::warn!("a write transaction was left open by a failed commit; reconnecting");
                if let Pool::Sqlite(pool) = self.pool()
                    && let Ok(stale) = pool.acquire().await
                {
                    let _ = stale.close().await;
                }
                self.pool().begin_write().await.map_err(self.write_error(what))
            }
            begun => begun.map_err(self.write_error(what)),
        }
    }

    /// Maps the error of a write: a database still locked by another writer
    /// after the busy timeout becomes [`StoreError::Locked`]; others keep `what`.
    pub(crate) fn write_error<'a>(&'a self, what: &'a str) -> impl FnOnce(sqlx::Error) -> StoreError + 'a {
        move |source| {
            if self.backend() == super::Backend::Postgres && is_unreachable(&source) {
                StoreError::Unreachable { location: self.location().to_string(), source }
            } else if self.backend() == super::Backend::Sqlite && is_busy(&source) {
                StoreError::Locked { path: self.path.to_path_buf(), what: what.to_string(), holder: holder(&self.path) }
            } else {
                StoreError::Sql { context: what.to_string(), source }.or_no_space(&self.path, what)
            }
        }
    }
}

/// The server went away or never answered (not an error in what was asked).
pub(crate) fn is_unreachable(error: &sqlx::Error) -> bool {
    matches!(error, sqlx::Error::Io(_) | sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Tls(_))
}

/// SQLITE_BUSY or SQLITE_LOCKED, with any extended code.
fn is_busy(error: &sqlx::Error) -> bool {
    let code = error.as_database_error().and_then(|e| e.code()).and_then(|c| c.parse::<i32>().ok());
    matches!(code.map(|c| c & 0xff), Some(5 | 6))
}

/// "pid N (command line)" of the process holding the WAL write lock of the
/// database at `path`, if the system says.
pub(crate) fn holder(path: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(super::shm_path(path)).ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    Some(describe_pid(write_lock_pid(&locks, inode)?))
}

/// "pid N (command line)" of the process holding the flock(2) on `lock_file` (the lock a store
/// takes while it opens and migrates), if the system says.
pub(crate) fn flock_holder(lock_file: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let inode = std::fs::metadata(lock_file).ok()?.ino();
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    let pid = locks.lines().find_map(|line| {
        // "1: FLOCK  ADVISORY  WRITE 4242 fe:00:5480451 0 EOF" (waiters, `->`, are skipped)
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, "FLOCK", _, "WRITE", pid, file, ..] = fields.as_slice() else { return None };
        (file.rsplit(':').next()?.parse::<u64>().ok()? == inode).then(|| pid.parse::<u32>().ok()).flatten()
    })?;
    Some(describe_pid(pid))
}

/// "pid N: COMMAND LINE", one short line.
fn describe_pid(pid: u32) -> String {
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|raw| {
            raw.split(|b| *b == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    // One short line, with no control characters from someone else's argv.
    let mut command: String = command.split(char::is_control).collect::<Vec<_>>().join(" ");
    if command.chars().count() > 100 {
        command = command.chars().take(100).chain(std::iter::once('…')).collect();
    }
    let this = if pid == std::process::id() { ", this process" } else { "" };
    if command.is_empty() { format!("pid {pid}{this}") } else { format!("pid {pid}{this}: {command}") }
}

/// The pid in a `/proc/locks` listing holding a POSIX write lock on the WAL
/// write-lock byte of the file with inode `inode` (waiters, `->`, are skipped).
fn write_lock_pid(locks: &str, inode: u64) -> Option<u32> {
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "1: POSIX  ADVISORY  WRITE 4242 fe:00:5480451 120 120"
        let [_, "POSIX", _, "WRITE", pid, file, start, end] = fields.as_slice() else { return None };
        let ino = file.rsplit(':').next()?.parse::<u64>().ok()?;
        let start = start.parse::<u64>().ok()?;
        let covers = start <= WAL_WRITE_LOCK_BYTE && (*end == "EOF" || end.parse::<u64>().ok()? >= WAL_WRITE_LOCK_BYTE);
        (ino == inode && covers).then(|| pid.parse().ok()).flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_write_lock_holder_is_read_from_proc_locks() {
        let locks = "1: POSIX  ADVISORY  READ 11 fe:00:77 128 128\n\
                     2: -> POSIX  ADVISORY  WRITE 12 fe:00:77 120 120\n\
                     3: POSIX  ADVISORY  WRITE 13 fe:00:78 120 120\n\
                     4: POSIX  ADVISORY  WRITE 14 fe:00:77 120 120\n";
        assert_eq!(write_lock_pid(locks, 77), Some(14));
        assert_eq!(write_lock_pid(locks, 78), Some(13));
        assert_eq!(write_lock_pid(locks, 79), None);
        assert_eq!(write_lock_pid("1: POSIX  ADVISORY  WRITE 15 fe:00:77 0 EOF\n", 77), Some(15));
    }

    #[tokio::test]
    async fn a_write_that_never_gets_the_lock_names_the_file_and_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("merlya.db");
        let first = Store::open(&path).await.unwrap();
        let second = Store::open(&path).await.unwrap();
        let Ok(held) = first.begin_write("hold the lock").await else { panic!("the first write begins") };
        let started = std::time::Instant::now();
        let Err(err) = second.begin_write("save hosts").await else { panic!("the lock is held") };
        let err = err.to_string();
        assert!(started.elapsed() >= BUSY_TIMEOUT, "waited on the busy timeout: {:?}", started.elapsed());
        assert!(err.contains(&path.display().to_string()) && err.contains("save hosts"), "{err}");
        if cfg!(target_os = "linux") {
            assert!(err.contains(&format!("pid {}, this process", std::process::id())), "{err}");
        }
        drop(held);
        second.begin_write("save hosts").await.unwrap().commit().await.unwrap();
    }
}
