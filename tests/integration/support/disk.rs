//! A small filesystem of a test's own: a tmpfs mounted over a folder (root only), so a test can
//! fill the disk under MERLYA_HOME and free it again, without touching the machine's disks.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A mounted tmpfs, unmounted when dropped.
pub struct SmallDisk {
    at: PathBuf,
}

impl SmallDisk {
    /// Mounts a tmpfs of `mib` MiB over `at` (made if missing).
    pub fn mount(at: &Path, mib: u32) -> Self {
        std::fs::create_dir_all(at).unwrap();
        let size = format!("size={mib}m,mode=0700");
        let status = Command::new("mount").args(["-t", "tmpfs", "-o", &size, "tmpfs"]).arg(at).status().unwrap();
        assert!(status.success(), "mount a tmpfs on {} (the tests run as root)", at.display());
        Self { at: at.to_path_buf() }
    }

    fn filler(&self) -> PathBuf {
        self.at.join(".filler")
    }

    /// Fills it: a file that takes every free byte.
    pub fn fill(&self) {
        use std::io::Write;
        let mut file = std::fs::File::create(self.filler()).unwrap();
        let block = vec![0u8; 64 * 1024];
        while file.write_all(&block).is_ok() {}
        let small = [0u8; 512];
        while file.write_all(&small).is_ok() {}
        let _ = file.sync_all();
    }

    /// Frees what [`SmallDisk::fill`] took.
    pub fn free(&self) {
        let _ = std::fs::remove_file(self.filler());
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}
