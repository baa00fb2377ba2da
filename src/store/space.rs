//! A full disk, said as such: SQLite reports it as `SQLITE_FULL` or as an I/O
//! error (`disk I/O error (code: 4874)` when even its shared-memory file cannot
//! grow), which tells an operator nothing. These helpers recognise it and say
//! how much room is left where merlya keeps its state.

use std::path::Path;

/// Free space below which an SQLite I/O error is taken for a full disk.
const NEARLY_FULL: u64 = 1024 * 1024;

/// Bytes free for merlya's user on the filesystem that holds `path` (`None` when it cannot be read).
pub fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let existing = path.ancestors().find(|p| p.exists())?;
    let c_path = std::ffi::CString::new(existing.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a NUL-terminated path and `stat` is written by statvfs before it is read.
    let stat = unsafe {
        if libc::statvfs(c_path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return None;
        }
        stat.assume_init()
    };
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Whether `error`, met while writing beside `path`, means the disk is full: SQLITE_FULL, an
/// I/O error of the OS (ENOSPC, EDQUOT), or an SQLite I/O error while less than 1 MiB is free.
pub fn out_of_space(error: &sqlx::Error, path: &Path) -> bool {
    match error {
        sqlx::Error::Io(e) => io_out_of_space(e),
        _ => {
            let code = error.as_database_error().and_then(|e| e.code()).and_then(|c| c.parse::<i32>().ok());
            match code.map(|c| c & 0xff) {
                Some(13) => true,
                Some(10) => free_bytes(path).is_some_and(|free| free < NEARLY_FULL),
                _ => false,
            }
        }
    }
}

/// Whether an OS error is a full disk or quota.
pub fn io_out_of_space(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) || error.kind() == std::io::ErrorKind::StorageFull
}

/// `no space left on MERLYA_HOME (DIR): N MiB free` for the folder that holds `path`.
pub fn explain(path: &Path) -> String {
    let dir = if path.is_dir() { path } else { path.parent().unwrap_or(path) };
    let free = free_bytes(dir).map_or_else(|| "unknown".to_string(), |b| (b >> 20).to_string());
    format!("no space left on MERLYA_HOME ({}): {free} MiB free", dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_and_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some());
        assert!(free_bytes(&dir.path().join("not/yet/made")).is_some(), "the nearest folder that exists");
        let said = explain(&dir.path().join("merlya.db"));
        assert!(said.starts_with(&format!("no space left on MERLYA_HOME ({}): ", dir.path().display())), "{said}");
        assert!(said.ends_with(" MiB free"), "{said}");
        assert!(io_out_of_space(&std::io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!io_out_of_space(&std::io::Error::from_raw_os_error(libc::EACCES)));
    }

    /// A store whose disk fills and frees again, in one process (the console): each write says the
    /// disk is full, and writes work again once there is room (a failed COMMIT used to leave the
    /// connection refusing every later transaction until a restart).
    #[tokio::test]
    async fn writes_work_again_once_a_full_disk_has_room() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "mount a tmpfs (the tests run as root)");
        struct Unmount<'a>(&'a Path);
        impl Drop for Unmount<'_> {
            fn drop(&mut self) {
                let _ = std::process::Command::new("umount").arg("-l").arg(self.0).status();
            }
        }
        let _unmount = Unmount(dir.path());
        let store = crate::store::Store::open(&dir.path().join("merlya.db")).await.unwrap();
        let host = |n: usize| {
            let mut h = crate::inventory::Host::new(format!("web{n:04}"), "127.0.0.1");
            h.username = Some("x".repeat(60));
            h
        };
        store.upsert_hosts(&[host(0)]).await.unwrap();
        let filler = dir.path().join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        while file.write_all(&[0u8; 4096]).is_ok() {}
        drop(file);
        // Enough rows that the write needs new pages whatever SQLite had cached.
        let many: Vec<_> = (1..400).map(host).collect();
        let mut said = None;
        for _ in 0..3 {
            if let Err(e) = store.upsert_hosts(&many).await {
                said = Some(e.to_string());
            }
        }
        let said = said.expect("a write on a full disk fails");
        assert!(said.starts_with("no space left on MERLYA_HOME ("), "{said}");
        std::fs::remove_file(&filler).unwrap();
        store.upsert_hosts(&many).await.expect("writes work again once there is room");
        assert_eq!(store.list_hosts().await.unwrap().len(), 1 + 400, "localhost and every host");
    }
}
