//! What a proven read on this machine can reach of merlya itself, with the real binary: its home
//! is empty inside the read-only sandbox, a word `su` does not turn the sandbox off, and merlya's
//! own process shows no secret in /proc/<pid>/environ and lets no other process of its user read it.

use crate::support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{TEST_USER, TestEnv, text};

/// Whether this machine gives the sandbox (the tests below need it).
fn sandbox_here() -> bool {
    let probe = Command::new("unshare").args(["-m", "--propagation", "private", "true"]).status();
    let ok = probe.is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: no mount namespaces here");
    }
    ok
}

/// The pids whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            // pid (comm) state ppid …: comm may hold spaces and parentheses, so after the last `)`.
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or_default();
            after.split_whitespace().nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid)
        })
        .collect()
}

/// Waits until `merlya` has started its command (a child exists): by then it has been running for a
/// while, past its first lines of `main`.
fn wait_for_a_child(merlya: &Child) -> u32 {
    let started = Instant::now();
    loop {
        if let Some(child) = children_of(merlya.id()).first() {
            return *child;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "merlya started no command");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `merlya exec localhost -- cat MERLYA_HOME/audit.key` reads nothing (and `ls` shows an empty home),
/// while a file beside the home is read as usual.
#[test]
fn a_proven_read_on_localhost_cannot_see_merlyas_home() {
    if !sandbox_here() {
        return;
    }
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "true"]);
    let home = env.merlya_home();
    let key = home.join("audit.key");
    assert!(key.exists(), "the audit key is made by the first run");
    let beside = env.dir.path().join("beside.txt");
    std::fs::write(&beside, "readable\n").unwrap();
    // The proof refuses merlya's files by name and every search of a folder that holds its home;
    // a path it cannot know leads there (a link made before), which is what the sandbox is for.
    let link = env.dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&home, &link).unwrap();
    let line = format!(
        "find {}/ -maxdepth 1 -name 'audit.k*' | xargs cat; ls -A {}/; cat {}",
        link.display(),
        link.display(),
        beside.display()
    );
    let plain = Command::new("bash").args(["-c", &line]).output().unwrap();
    assert_ne!(text(&plain.stdout), "readable\n", "the line reaches the home when nothing hides it");
    let out = env.run(&["exec", "localhost", "--format", "json", "--", &line]);
    let record = support::json_lines(&text(&out.stdout)).into_iter().next().expect("a result");
    let stdout = record["stdout"].as_str().unwrap_or_default();
    assert_eq!(stdout, "readable\n", "merlya's home is readable from the command: {record}");
    assert!(key.exists(), "the key itself is untouched");
}

/// `echo su` elevates nothing: the line still runs read-only, so the write `git status` makes to a
/// stale index (a write the proof misses) fails.
#[test]
fn a_word_su_does_not_turn_the_sandbox_off() {
    if !sandbox_here() {
        return;
    }
    let env = TestEnv::new();
    let (repo, index, stale) = support::repo_with_a_stale_index(env.dir.path());
    let before = stale();
    let line = format!("echo su; git -C {} status --porcelain", repo.display());
    let out = env.run(&["exec", "localhost", "--", &line]);
    assert!(out.status.success(), "the diagnostic still works: {}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), before, "the index was written");
}

/// A secret-looking variable merlya was started with is not in its /proc/<pid>/environ (the name is,
/// with stars), and the command it runs still works.
#[test]
fn merlyas_environment_shows_no_secret() {
    let env = TestEnv::new();
    let secret = format!("sk-test-{}", std::process::id());
    let merlya = env
        .merlya(&["exec", "localhost", "--", "sleep 1"])
        .env("MERLYA_TEST_API_KEY", &secret)
        .env("DATABASE_URL", format!("postgres://app:{secret}x@db/app"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_child(&merlya);
    let environ = std::fs::read(format!("/proc/{}/environ", merlya.id())).unwrap();
    let environ = String::from_utf8_lossy(&environ);
    let out = merlya.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(environ.contains("MERLYA_TEST_API_KEY=*") && environ.contains("DATABASE_URL=*"), "{environ}");
    assert!(!environ.contains(&secret), "the secret is in merlya's environ: {environ}");
}

/// Another process of merlya's user cannot read merlya's environ (nor its memory): merlya is not
/// dumpable. The control: the same reader reads the environ of another process of that user.
#[test]
fn another_process_of_the_same_user_cannot_read_merlyas_environ() {
    support::sshd::ensure_test_user();
    let env = TestEnv::new();
    support::give_to_test_user(env.dir.path());
    let as_test_user = |program: &str| {
        let mut cmd = env.command("setpriv");
        cmd.args(["--reuid", TEST_USER, "--regid", TEST_USER, "--clear-groups", "--", program]);
        cmd
    };
    let merlya = as_test_user(env!("CARGO_BIN_EXE_merlya"))
        .args(["exec", "localhost", "--", "sleep 1"])
        .current_dir(env.dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut other = as_test_user("sleep").arg("5").current_dir(Path::new("/")).spawn().unwrap();
    wait_for_a_child(&merlya);
    let read = |pid: u32| {
        as_test_user("cat").arg(format!("/proc/{pid}/environ")).current_dir(Path::new("/")).output().unwrap()
    };
    let theirs = read(merlya.id());
    let control = read(other.id());
    let _ = other.kill();
    let _ = other.wait();
    let out = merlya.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(control.status.success(), "control: the reader reads its user's processes: {}", text(&control.stderr));
    assert!(!theirs.status.success() && theirs.stdout.is_empty(), "merlya's environ was read");
    assert!(text(&theirs.stderr).contains("Permission denied"), "{}", text(&theirs.stderr));
}

/// A proven read that elevates with passwordless sudo (root here) runs in the sandbox too, as root:
/// merlya's home is still empty from it, and the index write `git status` makes still fails.
#[test]
fn an_elevated_read_on_localhost_is_sandboxed_as_root() {
    if !sandbox_here() || !Command::new("sudo").args(["-n", "true"]).status().is_ok_and(|s| s.success()) {
        eprintln!("skipped: no passwordless sudo here");
        return;
    }
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "true"]);
    let key = env.merlya_home().join("audit.key");
    assert!(key.exists(), "the audit key is made by the first run");
    // A path the proof cannot know leads to the home (a link made before).
    let link = env.dir.path().join("elsewhere");
    std::os::unix::fs::symlink(env.merlya_home(), &link).unwrap();
    let line = format!("sudo find {}/ -maxdepth 1 -name 'audit.k*' -exec cat {{}} ';'", link.display());
    let plain = Command::new("bash").args(["-c", &line]).output().unwrap();
    assert!(!plain.stdout.is_empty(), "the line reaches the key when nothing hides it");
    let out = env.run(&["exec", "localhost", "--format", "json", "--", &line]);
    let record = support::json_lines(&text(&out.stdout)).into_iter().next().expect("a result");
    assert_eq!(record["exit_code"], 0, "{record}");
    assert_eq!(record["stdout"], "", "merlya's home is readable from an elevated read: {record}");
    let who = env.run(&["exec", "localhost", "--format", "json", "--", "sudo id -u"]);
    let record = support::json_lines(&text(&who.stdout)).into_iter().next().expect("a result");
    assert_eq!(record["stdout"], "0\n", "{record}");
}
