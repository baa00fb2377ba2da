//! What a proven read on this machine can reach of merlya itself, with the real binary: its home
//! is empty inside the read-only sandbox, and a word `su` does not turn the sandbox off.

mod support;

use std::process::Command;
use std::time::Duration;

use support::{TestEnv, text};

/// Whether this machine gives the sandbox (the tests below need it).
fn sandbox_here() -> bool {
    let probe = Command::new("unshare").args(["-m", "--propagation", "private", "true"]).status();
    let ok = probe.is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: no mount namespaces here");
    }
    ok
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
    let out = env.run(&[
        "exec",
        "localhost",
        "--format",
        "json",
        "--",
        &format!(
            "cat {} {}/merlya.db; ls -A {}; cat {}",
            key.display(),
            home.display(),
            home.display(),
            beside.display()
        ),
    ]);
    let record = support::json_lines(&text(&out.stdout)).into_iter().next().expect("a result");
    let stdout = record["stdout"].as_str().unwrap_or_default();
    assert_eq!(stdout, "readable\n", "merlya's home is readable from the command: {record}");
    assert!(record["stderr"].as_str().unwrap_or_default().contains("No such file"), "{record}");
}

/// `echo su` elevates nothing: the line still runs read-only, so the write `git status` makes to a
/// stale index (a write the proof misses) fails.
#[test]
fn a_word_su_does_not_turn_the_sandbox_off() {
    if !sandbox_here() {
        return;
    }
    let env = TestEnv::new();
    let repo = env.dir.path().join("repo");
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
    // A newer mtime with the same content: git status refreshes (rewrites) the index.
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(repo.join("f"), "a\n").unwrap();
    let before = std::fs::metadata(&index).unwrap().modified().unwrap();
    let line = format!("echo su; git -C {} status --porcelain", repo.display());
    let out = env.run(&["exec", "localhost", "--", &line]);
    assert!(out.status.success(), "the diagnostic still works: {}", text(&out.stderr));
    assert_eq!(std::fs::metadata(&index).unwrap().modified().unwrap(), before, "the index was written");
}
