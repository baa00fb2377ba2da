//! A real systemd-journald of its own for a test: a journal namespace (its sockets in
//! `/run/systemd/journal.NAMESPACE`), started by the test and removed with it, so nothing is
//! written to the machine's own journal and no other test sees it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running journald namespace.
pub struct Journald {
    /// The namespace (`journalctl --namespace=…`).
    pub namespace: String,
    child: Child,
}

impl Journald {
    /// Starts `systemd-journald NAMESPACE` (root only) and waits for its sockets.
    pub fn start() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let namespace = format!("merlyatest{}x{nanos}", std::process::id());
        let binary = ["/lib/systemd/systemd-journald", "/usr/lib/systemd/systemd-journald"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("systemd-journald (Debian's systemd package; scripts/test.sh installs it)");
        let child = Command::new(binary)
            .arg(&namespace)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start systemd-journald");
        let journal = Self { namespace, child };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !(journal.socket().exists() && journal.dev_log().exists()) {
            assert!(Instant::now() < deadline, "systemd-journald made no socket in {}", journal.dir().display());
            std::thread::sleep(Duration::from_millis(20));
        }
        journal
    }

    fn dir(&self) -> PathBuf {
        PathBuf::from(format!("/run/systemd/journal.{}", self.namespace))
    }

    /// Its native socket.
    pub fn socket(&self) -> PathBuf {
        self.dir().join("socket")
    }

    /// Its syslog socket (what `/dev/log` is for the default journal).
    pub fn dev_log(&self) -> PathBuf {
        self.dir().join("dev-log")
    }

    /// What it holds under `identifier`, one message per line (`journalctl -o cat`).
    pub fn messages(&self, identifier: &str) -> String {
        let out = Command::new("journalctl")
            .args(["-t", identifier, "-o", "cat", "--no-pager", "-q", &format!("--namespace={}", self.namespace)])
            .output()
            .expect("journalctl");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Journald {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(self.dir());
        // Its files, wherever this machine keeps journals (`MACHINE_ID.NAMESPACE`).
        for root in ["/run/log/journal", "/var/log/journal"] {
            for entry in std::fs::read_dir(root).into_iter().flatten().flatten() {
                if entry.file_name().to_string_lossy().ends_with(&format!(".{}", self.namespace)) {
                    let _ = std::fs::remove_dir_all(entry.path());
                }
            }
        }
    }
}
