//! Test harness: real OpenSSH daemons on loopback ports, test users and keys,
//! and helpers to run the real `merlya` binary against a temporary home.
#![allow(dead_code)]

pub mod agent;
pub mod disk;
pub mod executor;
pub mod journald;
pub mod llm;
pub mod postgres;
pub mod sshd;
pub mod terraform;
pub mod tmux;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[allow(unused_imports)]
pub use sshd::{Sshd, SshdOptions, TEST_PASSWORD, TEST_USER};

/// A temporary MERLYA_HOME and HOME, so tests never touch the real ones.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
}

impl TestEnv {
    pub fn new() -> Self {
        use std::os::unix::fs::DirBuilderExt;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("home/.ssh")).unwrap();
        // As merlya makes it: its owner's alone.
        std::fs::DirBuilder::new().mode(0o700).create(dir.path().join("merlya")).unwrap();
        Self { dir }
    }

    pub fn merlya_home(&self) -> PathBuf {
        self.dir.path().join("merlya")
    }

    /// Every byte of the database, its write-ahead log included (where recent writes still are),
    /// as text: what a check that a secret never reached the database must search.
    pub fn database_text(&self) -> String {
        let db = self.merlya_home().join("merlya.db");
        let mut bytes = std::fs::read(&db).expect("the database exists");
        bytes.extend(std::fs::read(db.with_extension("db-wal")).unwrap_or_default());
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// Installs a private key as ~/.ssh/id_ed25519 of the test HOME.
    pub fn install_default_key(&self, key: &TestKey) {
        let dest = self.home().join(".ssh/id_ed25519");
        std::fs::copy(&key.private, &dest).unwrap();
        set_mode(&dest, 0o600);
    }

    /// Trusts `sshd`'s host key in ~/.ssh/known_hosts of the test HOME.
    pub fn trust(&self, sshd: &Sshd) {
        use std::io::Write;
        let mut f =
            std::fs::OpenOptions::new().create(true).append(true).open(self.home().join(".ssh/known_hosts")).unwrap();
        writeln!(f, "{}", sshd.known_hosts_line()).unwrap();
    }

    /// A `merlya` command with this environment.
    pub fn merlya(&self, args: &[&str]) -> Command {
        let mut cmd = self.command(env!("CARGO_BIN_EXE_merlya"));
        cmd.args(args);
        cmd
    }

    /// `program` with this environment (merlya's home, the test HOME, no agent or bus of the caller).
    pub fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("MERLYA_HOME", self.merlya_home())
            .env("HOME", self.home())
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .env("USER", "tester")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        for (k, _) in std::env::vars() {
            if k.starts_with("MERLYA_") && k != "MERLYA_HOME" {
                cmd.env_remove(k);
            }
        }
        cmd
    }

    /// `sh -c script` (merlya invocations inside) under a new session keyring
    /// of its own, as a login session would provide, with this environment.
    pub fn keyring_session(&self, script: &str) -> Command {
        let mut cmd = Command::new("keyctl");
        cmd.args(["session", "-", "sh", "-c", script])
            .env("MERLYA_HOME", self.merlya_home())
            .env("HOME", self.home())
            .env("USER", "tester")
            .env_remove("SSH_AUTH_SOCK")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs merlya and returns its output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.merlya(args).output().expect("run merlya")
    }

    /// Runs merlya and asserts it exits 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "merlya {args:?} failed: {}\n{}", out.status, text(&out.stderr));
        text(&out.stdout)
    }

    /// Runs merlya with `args` on a pseudo-terminal (util-linux `script`), typing
    /// `input`, and returns what the terminal showed.
    pub fn on_a_pty(&self, args: &[&str], input: &str, env: &[(&str, &str)]) -> Vec<u8> {
        use std::io::Write;
        let mut child = self.on_a_pty_command(args, env).spawn().expect("script (util-linux)");
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(input.as_bytes());
        }
        child.wait_with_output().expect("script output").stdout
    }

    /// `merlya ARGS` under util-linux `script` (a pseudo-terminal), `env` added, stdin and stdout piped.
    fn on_a_pty_command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
        let line: Vec<String> =
            std::iter::once(env!("CARGO_BIN_EXE_merlya")).chain(args.iter().copied()).map(quote).collect();
        // Bounded: a merlya that hangs fails its test instead of holding the suite (and CI) forever.
        let mut command = Command::new("timeout");
        command
            .args(["-k", "5", "180", "script", "-qec", &line.join(" "), "/dev/null"])
            .env("MERLYA_HOME", self.merlya_home())
            .env("HOME", self.home())
            .env("NO_COLOR", "1")
            .env("USER", "tester")
            .env_remove("SSH_AUTH_SOCK")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        command
    }

    /// `merlya ARGS` on a pseudo-terminal, `env` added: when the approval's question is on screen,
    /// `meanwhile` runs (what happens while the person reads it), then `answer` is typed. Everything
    /// the terminal showed.
    pub fn answering_on_a_pty(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        meanwhile: impl FnOnce(),
        answer: &str,
    ) -> Vec<u8> {
        use std::io::{Read, Write};
        let mut child = self.on_a_pty_command(args, env).spawn().expect("script (util-linux)");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut seen = Vec::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        while !String::from_utf8_lossy(&seen).contains("[o]nce") {
            let mut chunk = [0u8; 4096];
            let n = stdout.read(&mut chunk).expect("read the terminal");
            assert!(n > 0 && std::time::Instant::now() < deadline, "no approval asked: {}", text(&seen));
            seen.extend_from_slice(&chunk[..n]);
        }
        meanwhile();
        child.stdin.take().expect("stdin").write_all(answer.as_bytes()).expect("answer");
        stdout.read_to_end(&mut seen).expect("read the terminal");
        let _ = child.wait();
        seen
    }

    /// Points the brain model at the scripted LLM at `url` (key in `MERLYA_TEST_LLM_KEY`).
    pub fn use_scripted_llm(&self, url: &str) {
        std::fs::write(
            self.merlya_home().join("config.yaml"),
            format!("model:\n  brain: openai/gpt-test\n  base_url: {url}/v1\n  api_key_env: MERLYA_TEST_LLM_KEY\n"),
        )
        .unwrap();
    }

    /// Adds an inventory host pointing at `sshd`.
    pub fn add_host(&self, name: &str, sshd: &Sshd, extra: &[&str]) {
        let port = sshd.port.to_string();
        let mut args = vec!["hosts", "add", name, "--hostname", "127.0.0.1", "--port", &port, "--user", TEST_USER];
        args.extend_from_slice(extra);
        self.ok(&args);
    }
}

/// Hands `dir` to the SSH test user (created first if this process has not
/// yet), so a command run over SSH could write there if it ran.
pub fn give_to_test_user(dir: &Path) {
    sshd::ensure_test_user();
    let status = Command::new("chown").args(["-R", TEST_USER]).arg(dir).status();
    assert!(status.is_ok_and(|s| s.success()), "chown {} to {TEST_USER}", dir.display());
}

/// Lossy UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// An ed25519 key pair made with ssh-keygen.
pub struct TestKey {
    _dir: tempfile::TempDir,
    pub private: PathBuf,
    pub public_line: String,
}

impl TestKey {
    /// A new key, optionally protected by `passphrase`.
    pub fn generate(passphrase: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("id_ed25519");
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", passphrase, "-C", "merlya-test", "-f"])
            .arg(&private)
            .status()
            .expect("ssh-keygen");
        assert!(status.success());
        let public_line = std::fs::read_to_string(private.with_extension("pub")).unwrap().trim().to_string();
        Self { _dir: dir, private, public_line }
    }
}

/// Parses `--format json` output of exec: one object per line.
pub fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout.lines().filter(|l| l.starts_with('{')).map(|l| serde_json::from_str(l).expect("json line")).collect()
}

/// Every file below `dir`.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        // Links are not followed (a link may lead back up).
        let folder = entry.file_type().is_ok_and(|t| t.is_dir());
        if folder { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

/// The usual set-up: a key, an sshd that accepts it, a home whose default key
/// it is and whose known_hosts trusts the daemon, and a host `name` for it.
pub fn one_trusted_host(name: &str, extra: &[&str]) -> (TestKey, Sshd, TestEnv) {
    one_trusted_host_with_passphrase(name, "", extra)
}

/// [`one_trusted_host`] with the login key protected by `passphrase`.
pub fn one_trusted_host_with_passphrase(name: &str, passphrase: &str, extra: &[&str]) -> (TestKey, Sshd, TestEnv) {
    let key = TestKey::generate(passphrase);
    let sshd = Sshd::start(SshdOptions::allowing(&key));
    let env = TestEnv::new();
    env.install_default_key(&key);
    env.trust(&sshd);
    env.add_host(name, &sshd, extra);
    (key, sshd, env)
}

/// `CARGO_TARGET_TMPDIR/NAME`, made once by `make` and shared by every test binary (creation is
/// serialised with a lock file); `ready` says whether a previous run already made it.
fn made_once(name: &str, ready: impl Fn(&Path) -> bool, make: impl FnOnce(&Path)) -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let root = tmp.join(name);
    if ready(&root) {
        return root;
    }
    std::fs::create_dir_all(&tmp).unwrap();
    let lock = std::fs::File::create(tmp.join(format!("{name}.lock"))).unwrap();
    // SAFETY: flock on a file descriptor we own.
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
    if !ready(&root) {
        make(&root);
    }
    root
}

/// A folder holding `ansible-playbook` (ansible-core in a venv under the build's temporary folder).
pub fn ansible_bin() -> PathBuf {
    let root = made_once(
        "ansible-venv",
        |root| root.join("bin/ansible-playbook").is_file(),
        |root| {
            let ok = Command::new("python3").args(["-m", "venv"]).arg(root).status().unwrap().success();
            assert!(ok, "python3 -m venv failed (install python3-venv)");
            let pip = root.join("bin/pip");
            let ok = Command::new(pip).args(["install", "-q", "ansible-core"]).status().unwrap().success();
            assert!(ok, "pip install ansible-core failed");
        },
    );
    root.join("bin")
}

/// A Python with the official Prometheus client library, whose OpenMetrics parser reads merlya's output.
pub fn prometheus_python() -> PathBuf {
    let root = made_once(
        "prometheus-venv",
        |root| root.join("lib").is_dir() && root.join("bin/prometheus-ok").is_file(),
        |root| {
            let ok = Command::new("python3").args(["-m", "venv"]).arg(root).status().unwrap().success();
            assert!(ok, "python3 -m venv failed (install python3-venv)");
            let pip = root.join("bin/pip");
            let ok = Command::new(pip).args(["install", "-q", "prometheus-client==0.21.1"]).status().unwrap().success();
            assert!(ok, "pip install prometheus-client failed");
            std::fs::write(root.join("bin/prometheus-ok"), "").unwrap();
        },
    );
    root.join("bin/python")
}

/// The npm packages the MCP tests talk to: the reference servers and the official TypeScript SDK.
pub const MCP_PACKAGES: [&str; 3] = [
    "@modelcontextprotocol/server-everything@2026.8.31",
    "@modelcontextprotocol/server-filesystem@2026.8.31",
    "@modelcontextprotocol/sdk@1.32.2",
];

/// A folder whose `node_modules` holds [`MCP_PACKAGES`] (installed from npm once).
pub fn mcp_packages() -> PathBuf {
    made_once(
        "mcp-npm",
        |root| root.join("node_modules/@modelcontextprotocol/sdk/package.json").is_file(),
        |root| {
            std::fs::create_dir_all(root).unwrap();
            let ok = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--loglevel=error", "--prefix"])
                .arg(root)
                .args(MCP_PACKAGES)
                .status()
                .expect("npm (scripts/test.sh installs nodejs and npm)")
                .success();
            assert!(ok, "npm install of the MCP servers failed");
        },
    )
}

/// PATH with `dir` first.
pub fn path_with(dir: &Path) -> String {
    format!("{}:{}", dir.display(), std::env::var("PATH").unwrap_or_default())
}

/// `n` sshd daemons with one key, trusted by a new home and added as `PREFIX000`… tagged `bench` (the
/// benchmarks' fleet).
pub fn bench_fleet(n: usize, prefix: &str) -> (TestKey, Vec<Sshd>, TestEnv) {
    let key = TestKey::generate("");
    let daemons: Vec<Sshd> = (0..n).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let env = TestEnv::new();
    env.install_default_key(&key);
    for (i, d) in daemons.iter().enumerate() {
        env.trust(d);
        env.add_host(&format!("{prefix}{i:03}"), d, &["--tag", "bench"]);
    }
    (key, daemons, env)
}

/// A git repository in `parent/repo` with one committed file `f`, and a way to make its index
/// stale (`f` rewritten with a newer mtime and the same content: `git status` then rewrites the
/// index, a write that a read-only proof misses). Returns the repository, its index, and `stale`,
/// which returns the index's mtime before any refresh.
pub fn repo_with_a_stale_index(parent: &Path) -> (PathBuf, PathBuf, impl Fn() -> std::time::SystemTime) {
    let repo = parent.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git").arg("-C").arg(&repo).args(args).status().unwrap().success();
        assert!(ok, "git {args:?}");
    };
    std::fs::write(repo.join("f"), "a\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "f"]);
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]);
    let index = repo.join(".git/index");
    let (file, idx) = (repo.join("f"), index.clone());
    let stale = move || {
        std::thread::sleep(std::time::Duration::from_millis(1100));
        std::fs::write(&file, "a\n").unwrap();
        std::fs::metadata(&idx).unwrap().modified().unwrap()
    };
    (repo, index, stale)
}

/// The process groups of every process whose command line mentions `text` (a test's home), not
/// this test's own group: what a test simulating a crash kills with merlya.
pub fn process_groups_mentioning(text: &str) -> Vec<i32> {
    // SAFETY: getpgrp(2) has no preconditions.
    let own = unsafe { libc::getpgrp() };
    let mut groups = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        if !String::from_utf8_lossy(&cmdline).contains(text) {
            continue;
        }
        // `pid (comm) state ppid pgrp …`: the group is the third field after the command's `)`.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        if let Some(group) = fields.get(2).and_then(|g| g.parse::<i32>().ok())
            && group != own
            && group > 1
        {
            groups.insert(group);
        }
    }
    groups.into_iter().collect()
}
