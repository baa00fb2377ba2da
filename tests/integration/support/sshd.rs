//! A private OpenSSH daemon in the foreground, owned by the test and killed on drop.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Once;
use std::time::{Duration, Instant};

use super::TestKey;

/// The unprivileged account tests log in as.
pub const TEST_USER: &str = "merlyatest";
/// Its password (keyboard-interactive through PAM asks for it).
pub const TEST_PASSWORD: &str = "merlya-Test-pw-1";

/// Daemon settings.
#[derive(Clone)]
pub struct SshdOptions {
    /// Keys allowed to log in (authorized_keys lines).
    pub authorized: Vec<String>,
    /// `AllowTcpForwarding` (jump hosts need it).
    pub allow_forwarding: bool,
    /// Reuse this host key instead of generating one.
    pub host_key: Option<PathBuf>,
    /// Listen on this port instead of a free one.
    pub port: Option<u16>,
    /// Require a key and then keyboard-interactive (PAM password), like an MFA bastion.
    pub mfa: bool,
    /// Give root this password for this daemon's sessions only: the daemon runs in its own mount
    /// namespace with a copy of /etc/shadow bind-mounted over the real one (the machine is not changed).
    pub root_password: Option<String>,
    /// An /etc/doas.conf seen only by this daemon's sessions (same mount namespace).
    pub doas_conf: Option<String>,
    /// Files this daemon's sessions see instead of the machine's (`(target, content)`, e.g. a
    /// `/proc/loadavg` of a loaded host): bind-mounted in the daemon's own mount namespace.
    pub files: Vec<(String, String)>,
    /// `SetEnv NAME=VALUE` lines: an environment of this host only (a PATH with shims first).
    pub set_env: Vec<String>,
}

impl SshdOptions {
    pub fn allowing(key: &TestKey) -> Self {
        Self {
            authorized: vec![key.public_line.clone()],
            allow_forwarding: true,
            host_key: None,
            port: None,
            mfa: false,
            root_password: None,
            doas_conf: None,
            files: Vec::new(),
            set_env: Vec::new(),
        }
    }
}

pub struct Sshd {
    child: Child,
    pub port: u16,
    pub dir: tempfile::TempDir,
    pub host_key: PathBuf,
    pub log: PathBuf,
    pub options: SshdOptions,
}

static USER: Once = Once::new();

/// Creates the test user once per process (idempotent across processes).
pub fn ensure_test_user() {
    USER.call_once(|| {
        let exists = Command::new("id").arg(TEST_USER).stdout(Stdio::null()).stderr(Stdio::null()).status();
        if !exists.map(|s| s.success()).unwrap_or(false) {
            let status = Command::new("useradd").args(["-m", "-s", "/bin/bash", TEST_USER]).status();
            assert!(status.is_ok(), "tests need root to create the {TEST_USER} user (run scripts/test.sh as root)");
        }
        // An account created by useradd is locked (sshd refuses it); a password unlocks it and lets
        // PAM's keyboard-interactive check it.
        let mut chpasswd = Command::new("chpasswd").stdin(Stdio::piped()).spawn().expect("chpasswd");
        if let Some(mut stdin) = chpasswd.stdin.take() {
            let _ = writeln!(stdin, "{TEST_USER}:{TEST_PASSWORD}");
        }
        let _ = chpasswd.wait();
        // sudo with a password (the sudo_password elevation).
        let sudoers = format!("{TEST_USER} ALL=(ALL:ALL) ALL\n");
        let path = format!("/etc/sudoers.d/{TEST_USER}");
        if std::fs::write(&path, sudoers).is_ok() {
            super::set_mode(std::path::Path::new(&path), 0o440);
        }
        let _ = std::fs::create_dir_all("/run/sshd");
    });
}

/// A port nothing listens on now (the OS picks it).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Sshd {
    pub fn start(options: SshdOptions) -> Self {
        ensure_test_user();
        let dir = tempfile::tempdir().unwrap();
        let host_key = match &options.host_key {
            Some(k) => k.clone(),
            None => {
                let k = dir.path().join("hostkey");
                let ok = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&k).status();
                assert!(ok.unwrap().success());
                k
            }
        };
        let auth = dir.path().join("authorized_keys");
        std::fs::write(&auth, options.authorized.join("\n") + "\n").unwrap();
        super::set_mode(&auth, 0o644);
        super::set_mode(dir.path(), 0o755);
        let log = dir.path().join("sshd.log");
        for _attempt in 0..5 {
            let port = options.port.unwrap_or_else(free_port);
            let config = dir.path().join("sshd_config");
            let mut f = std::fs::File::create(&config).unwrap();
            write!(
                f,
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {}\nPidFile {}/sshd.pid\n\
                 AuthorizedKeysFile {}\nStrictModes no\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
                 PermitRootLogin no\nAllowTcpForwarding {}\n\
                 LogLevel VERBOSE\nMaxStartups 200\nMaxSessions 50\nSubsystem sftp internal-sftp\n{}{}",
                host_key.display(),
                dir.path().display(),
                auth.display(),
                if options.allow_forwarding { "yes" } else { "no" },
                if options.mfa {
                    "UsePAM yes\nKbdInteractiveAuthentication yes\nAuthenticationMethods publickey,keyboard-interactive\n"
                } else {
                    "UsePAM no\nKbdInteractiveAuthentication no\n"
                },
                options.set_env.iter().map(|e| format!("SetEnv {e}\n")).collect::<String>(),
            )
            .unwrap();
            drop(f);
            let mut command =
                if options.root_password.is_none() && options.doas_conf.is_none() && options.files.is_empty() {
                    Command::new("/usr/sbin/sshd")
                } else {
                    // A private view of /etc for this daemon's sessions only: the machine is not changed
                    // (beyond an empty /etc/doas.conf, which denies everything, as a bind target).
                    let mut script = String::from("set -e; ");
                    if options.root_password.is_some() {
                        let shadow = dir.path().join("shadow");
                        script.push_str(&format!(
                            "cp /etc/shadow '{0}'; hash=$(openssl passwd -6 \"$ROOT_PW\"); \
                         sed -i \"s|^root:[^:]*:|root:$hash:|\" '{0}'; mount --bind '{0}' /etc/shadow; ",
                            shadow.display()
                        ));
                    }
                    if let Some(conf) = &options.doas_conf {
                        let file = dir.path().join("doas.conf");
                        std::fs::write(&file, conf).unwrap();
                        super::set_mode(&file, 0o600);
                        if !std::path::Path::new("/etc/doas.conf").exists() {
                            let _ = std::fs::write("/etc/doas.conf", "");
                        }
                        script.push_str(&format!("mount --bind '{}' /etc/doas.conf; ", file.display()));
                    }
                    for (n, (target, content)) in options.files.iter().enumerate() {
                        let file = dir.path().join(format!("file{n}"));
                        std::fs::write(&file, content).unwrap();
                        super::set_mode(&file, 0o644);
                        script.push_str(&format!("mount --bind '{}' '{target}'; ", file.display()));
                    }
                    script.push_str("exec /usr/sbin/sshd \"$@\"");
                    let mut c = Command::new("unshare");
                    c.args(["--mount", "--propagation", "private", "sh", "-c", &script, "sshd"])
                        .env("ROOT_PW", options.root_password.clone().unwrap_or_default());
                    c
                };
            let mut child = command
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .arg("-E")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start /usr/sbin/sshd (install openssh-server)");
            if wait_ready(&mut child, port) {
                return Sshd { child, port, dir, host_key, log, options };
            }
            let _ = child.kill();
            let _ = child.wait();
            // A fixed port must work; a probed one may have been taken meanwhile: try another.
            assert!(
                options.port.is_none(),
                "sshd did not start on port {port}:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        panic!("sshd did not start after 5 attempts:\n{}", std::fs::read_to_string(&log).unwrap_or_default());
    }

    /// `[127.0.0.1]:PORT ssh-ed25519 AAAA...` for known_hosts.
    pub fn known_hosts_line(&self) -> String {
        let public = std::fs::read_to_string(self.host_key.with_extension("pub")).unwrap();
        let mut parts = public.split_whitespace();
        format!("[127.0.0.1]:{} {} {}", self.port, parts.next().unwrap(), parts.next().unwrap())
    }

    /// The host key's SHA256 fingerprint (`SHA256:…`), as `ssh-keygen -l` prints it.
    pub fn fingerprint(&self) -> String {
        let out = Command::new("ssh-keygen").arg("-lf").arg(self.host_key.with_extension("pub")).output().unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).into_owned();
        listed.split_whitespace().nth(1).expect("ssh-keygen -l prints BITS FINGERPRINT …").to_string()
    }

    /// The daemon's log so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Successful logins recorded in the log.
    pub fn accepted_logins(&self) -> usize {
        self.log_text().matches("Accepted publickey").count()
    }

    /// Freezes every connection the daemon serves (SIGSTOP to the per-connection processes, the
    /// kernel still acknowledges what is sent): a host that has logged a client in and then hangs.
    /// They run again when the guard is dropped.
    pub fn freeze_connections(&self) -> Frozen {
        let mut pids = Vec::new();
        let mut parents = vec![self.child.id()];
        while let Some(parent) = parents.pop() {
            let out = Command::new("pgrep").args(["-P", &parent.to_string()]).output().unwrap();
            for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse().ok()) {
                pids.push(pid);
                parents.push(pid);
            }
        }
        assert!(!pids.is_empty(), "no connection to freeze");
        for pid in &pids {
            let _ = Command::new("kill").args(["-STOP", &pid.to_string()]).status();
        }
        Frozen(pids)
    }

    /// Stops the daemon (and, with it, every connection it serves).
    pub fn stop(&mut self) {
        // Per-connection processes are children of the listener; they outlive it unless killed.
        let _ = Command::new("pkill").args(["-KILL", "-P", &self.child.id().to_string()]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_ready(child: &mut Child, port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Per-connection sshd processes stopped by [`Sshd::freeze_connections`]; continued on drop.
pub struct Frozen(Vec<u32>);

impl Drop for Frozen {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = Command::new("kill").args(["-CONT", &pid.to_string()]).status();
        }
    }
}
