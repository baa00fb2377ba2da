//! A bad day (issue 25): a disk that fills, a reader that goes away, fields longer than any
//! listing can pad. Each case runs the real binary against real files, a tmpfs of its own, a pipe.

use crate::support;

use support::{TestEnv, text};

/// A field longer than any listing can pad (65,536 characters) is refused at the door with its
/// length and the limit; one already stored (an older merlya, an edited database) is listed and run
/// on without a panic.
#[test]
fn long_fields_are_refused_at_the_door_and_never_panic_a_listing() {
    let env = TestEnv::new();
    let long = "a".repeat(70_000);
    for args in [
        vec!["hosts", "add", long.as_str(), "--hostname", "127.0.0.1"],
        vec!["hosts", "add", "web01", "--hostname", long.as_str()],
        vec!["hosts", "add", "web01", "--hostname", "127.0.0.1", "--user", long.as_str()],
        vec!["hosts", "add", "web01", "--hostname", "127.0.0.1", "--tag", long.as_str()],
    ] {
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let said = text(&out.stderr);
        assert!(said.contains("70000 characters long; at most"), "{said}");
        assert!(said.len() < 2_000, "the value is not dumped back: {} bytes", said.len());
    }
    assert!(!env.ok(&["hosts", "list"]).contains("web01"), "nothing was stored");

    // Stored behind merlya's back: listings and a fan-out still work.
    let db = env.merlya_home().join("merlya.db");
    let insert = format!(
        "import sqlite3; c = sqlite3.connect('{}'); c.execute(\"INSERT INTO hosts (name, hostname, port, elevation, created_at, updated_at) VALUES (?, '127.0.0.1', 1, 'none', 'now', 'now')\", ('{long}',)); c.commit()",
        db.display()
    );
    let status = std::process::Command::new("python3").args(["-c", &insert]).status().unwrap();
    assert!(status.success());
    let listed = env.ok(&["hosts", "list"]);
    assert!(listed.contains(&long) && listed.contains("localhost"), "{}", &listed[..200]);
    let out = env.run(&["exec", "all", "--", "true"]);
    let said = text(&out.stderr);
    assert!(!said.contains("panicked"), "{}", &said[..said.len().min(2000)]);
    assert!(text(&out.stdout).contains(&long), "the long host's outcome is shown");
}

/// MERLYA_HOME on a disk that fills: nothing runs whose start cannot be audited, nothing is
/// reported as a success whose outcome could not be written, the errors say the disk is full and
/// how much is free, and everything works again once there is room (nothing lost, the chain whole).
#[test]
fn a_full_disk_runs_nothing_unaudited_says_so_and_recovers() {
    let env = TestEnv::new();
    let disk = support::disk::SmallDisk::mount(&env.merlya_home(), 24);
    env.ok(&["exec", "localhost", "--", "true"]);
    let outside = tempfile::tempdir().unwrap();
    let marker = outside.path().join("ran");

    // Full before the run: the approved command never starts, and the person is told why.
    disk.fill();
    let touch = format!("touch {}", marker.display());
    let out = env.run(&["exec", "localhost", "--yes", "--", &touch]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let said = text(&out.stderr);
    assert!(said.contains("no space left on MERLYA_HOME") && said.contains("MiB free"), "{said}");
    assert!(!said.contains("code: 4874"), "{said}");
    assert!(!marker.exists(), "a command ran whose start could not be audited");

    // Full while it runs (the command itself fills the disk): its outcome cannot be written, so it is
    // not a success.
    disk.free();
    let fill = format!(
        "touch {}; head -c 100000000 /dev/zero > {}/.filler 2>/dev/null; true",
        marker.display(),
        env.merlya_home().display()
    );
    let out = env.run(&["exec", "localhost", "--yes", "--", &fill]);
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(marker.exists(), "the command ran: {shown}");
    assert_ne!(out.status.code(), Some(0), "{shown}");
    assert!(!shown.contains("1/1 hosts succeeded"), "{shown}");
    assert!(shown.contains("could not be written to the audit log"), "{shown}");

    // Room again: the same home works, and the chain is whole.
    disk.free();
    env.ok(&["exec", "localhost", "--", "true"]);
    let verified = env.ok(&["audit", "verify"]);
    assert!(verified.contains("intact") || verified.contains("OK") || verified.contains("verified"), "{verified}");
}

/// `merlya exec … | head -1`: once the reader has gone, the command is stopped on the host (and
/// audited as cancelled) instead of running to its timeout.
#[test]
fn a_reader_that_goes_away_stops_the_run() {
    let env = TestEnv::new();
    let line = format!(
        "'{}' exec localhost --timeout 300 -- 'echo first; sleep 297.31; echo second' | head -1",
        env!("CARGO_BIN_EXE_merlya")
    );
    let mut child = std::process::Command::new("bash")
        .args(["-c", &line])
        .env("MERLYA_HOME", env.merlya_home())
        .env("HOME", env.home())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A guard against a hang, not a timing claim: the run's own timeout is 300 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run went on after its reader had gone");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let shown = text(&child.wait_with_output().unwrap().stdout);
    assert_eq!(shown.trim(), "localhost | first");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("\"outcome\": \"cancelled\""), "{audit}");
    let left = std::process::Command::new("pgrep").args(["-f", "sleep 297.31"]).output().unwrap();
    assert!(left.stdout.is_empty(), "the command still runs: {}", text(&left.stdout));
}

/// While another process holds the store's lock, the person is told after a second who holds it,
/// and the command goes on once it is free.
#[test]
fn a_store_held_by_another_process_is_named_while_merlya_waits() {
    let env = TestEnv::new();
    env.ok(&["hosts", "list"]);
    let lock = std::fs::File::options().write(true).open(env.merlya_home().join("merlya.db.lock")).unwrap();
    lock.lock().unwrap();
    let child = env
        .merlya(&["hosts", "list"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    lock.unlock().unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    let db = env.merlya_home().join("merlya.db");
    assert!(said.contains(&format!("waiting for {}, held by pid {}", db.display(), std::process::id())), "{said}");
}

/// An HTTP server on the SSH port is named as such, not "Disconnected".
#[test]
fn an_http_server_on_the_ssh_port_is_named() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut buf = [0u8; 256];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "127.0.0.1", "--port", &port, "--user", "nobody"]);
    let out = env.run(&["exec", "web01", "--", "true"]);
    assert_ne!(out.status.code(), Some(0));
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(shown.contains("not an SSH server (HTTP answered: HTTP/1.1 400 Bad Request)"), "{shown}");
}
