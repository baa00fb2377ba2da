//! Store, audit chain, configuration errors and imports through the real binary.

use crate::support;

use support::{TestEnv, text};

fn sha(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn fresh_home_lists_localhost() {
    let env = TestEnv::new();
    let out = env.ok(&["hosts", "list"]);
    assert!(out.starts_with("NAME"), "{out}");
    assert!(out.contains("localhost  local"), "{out}");
    let json: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
    assert_eq!(json.len(), 1);
    assert_eq!(json[0]["name"], "localhost");
    assert!(env.merlya_home().join("merlya.db").exists());
    assert!(env.merlya_home().join("logs").is_dir());
}

#[test]
fn two_processes_starting_at_once_on_a_new_home_both_succeed() {
    let env = TestEnv::new();
    let children: Vec<_> = (0..4)
        .map(|_| {
            env.merlya(&["hosts", "list"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(text(&out.stdout).contains("localhost"));
    }
}

#[test]
fn a_file_that_is_not_sqlite_is_reported_and_left_untouched() {
    let env = TestEnv::new();
    let db = env.merlya_home().join("merlya.db");
    std::fs::write(&db, b"this is not a database, it is a shopping list\n").unwrap();
    let before = sha(&db);
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("is not a SQLite database") && err.contains("left untouched"), "{err}");
    assert_eq!(sha(&db), before);
}

#[test]
fn a_corrupt_database_is_reported_and_left_untouched() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.1"]);
    let db = env.merlya_home().join("merlya.db");
    // Checkpointed by the clean close; damage the pages after the header page.
    let mut bytes = sha(&db);
    assert!(bytes.len() > 8192, "db has several pages");
    for b in bytes.iter_mut().skip(4096).take(4096) {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let _ = std::fs::remove_file(db.with_extension("db-wal"));
    let _ = std::fs::remove_file(db.with_extension("db-shm"));
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(err.contains("corrupt") && err.contains("left untouched"), "{err}");
    assert_eq!(sha(&db), bytes);
}

#[tokio::test]
async fn a_database_from_a_newer_merlya_is_refused_untouched() {
    let env = TestEnv::new();
    env.ok(&["hosts", "list"]);
    let db = env.merlya_home().join("merlya.db");
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.unwrap();
        sqlx::query("INSERT INTO _sqlx_migrations (version, description, installed_on, success, checksum, execution_time) VALUES (99991231000000, 'future', CURRENT_TIMESTAMP, 1, x'00', 0)")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)").execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
    let before = sha(&db);
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("created by a newer merlya (schema version 99991231000000"), "{err}");
    assert_eq!(sha(&db), before);
}

#[test]
fn an_emptied_database_beside_the_audit_files_is_refused_not_started_again() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.1"]);
    env.ok(&["exec", "localhost", "--", "true"]);
    let home = env.merlya_home();
    let (db, checkpoint) = (home.join("merlya.db"), home.join("audit.checkpoint"));
    assert!(home.join("audit.key").exists() && checkpoint.exists(), "the audit log is keyed");
    let signed = sha(&checkpoint);
    // Truncated to nothing (a full disk, a bad restore), its write-ahead log gone with it.
    std::fs::write(&db, b"").unwrap();
    for file in ["merlya.db-wal", "merlya.db-shm"] {
        let _ = std::fs::remove_file(home.join(file));
    }
    for args in [&["hosts", "list"][..], &["exec", "localhost", "--", "true"], &["audit", "verify"]] {
        let out = env.run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stdout));
        let err = text(&out.stderr);
        assert!(err.contains(&format!("{} is empty (0 bytes)", db.display())), "{args:?}: {err}");
        assert!(err.contains("audit.key") && err.contains("audit.checkpoint"), "names what is beside it: {err}");
    }
    assert_eq!(sha(&db), b"", "left untouched");
    assert_eq!(sha(&checkpoint), signed, "the old chain's checkpoint is kept");
    let out = env.run(&["doctor"]);
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "doctor fails too: {said}");
    assert!(said.contains("FAIL") && said.contains("is empty (0 bytes)"), "{said}");

    // A fresh home with an empty file and nothing beside it starts as before.
    let fresh = TestEnv::new();
    std::fs::write(fresh.merlya_home().join("merlya.db"), b"").unwrap();
    assert!(fresh.ok(&["hosts", "list"]).contains("localhost"));
}

#[test]
fn config_errors_name_file_line_and_expectation() {
    let env = TestEnv::new();
    let cfg = env.merlya_home().join("config.yaml");
    std::fs::write(&cfg, "ssh:\n  pool_max: 5\n  colour: red\n").unwrap();
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains(&format!("{}:3:3: ssh: unknown field `colour`", cfg.display())), "{err}");

    std::fs::write(&cfg, "policy:\n  max_parallel: many\n").unwrap();
    let err = text(&env.run(&["hosts", "list"]).stderr);
    assert!(err.contains("config.yaml:2:") && err.contains("expected usize"), "{err}");

    std::fs::write(&cfg, "ssh:\n  default_user: ${MERLYA_TEST_UNSET_VAR}\n").unwrap();
    let err = text(&env.run(&["hosts", "list"]).stderr);
    assert!(err.contains("config.yaml:2: environment variable MERLYA_TEST_UNSET_VAR is not set"), "{err}");

    std::fs::write(&cfg, "").unwrap();
    let out = env.merlya(&["hosts", "list"]).env("MERLYA_SSH_POOL_MAX", "lots").output().unwrap();
    assert!(text(&out.stderr).contains("environment variable MERLYA_SSH_POOL_MAX"), "{}", text(&out.stderr));
}

#[test]
fn config_init_show_and_path() {
    let env = TestEnv::new();
    let path = env.ok(&["config", "path"]);
    assert_eq!(path.trim(), env.merlya_home().join("config.yaml").display().to_string());
    env.ok(&["config", "init"]);
    assert!(env.run(&["config", "init"]).status.code() == Some(1), "refuses to overwrite");
    let out = env.merlya(&["config", "show"]).env("MERLYA_SSH_POOL_MAX", "7").output().unwrap();
    let shown: serde_json::Value = yaml_serde::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(shown["ssh"]["pool_max"], 7);
    env.ok(&["config", "set", "model.brain", "anthropic/claude-sonnet"]);
    let shown: serde_json::Value = yaml_serde::from_str(&env.ok(&["config", "show"])).unwrap();
    assert_eq!(shown["model"]["brain"], "anthropic/claude-sonnet");
    for (key, value, valid) in [
        ("ui.theme", "neon", "expected dark, light or high-contrast"),
        ("ui.keymap", "emacs", "expected default or vim"),
        ("ui.language", "de", "expected one of en, fr"),
    ] {
        let out = env.run(&["config", "set", key, value]);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(err.contains(key) && err.contains(valid), "{key}: {err}");
    }
    let out = env.run(&["config", "set", "model.fast", "gpt4"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("model.fast: expected provider/model"), "{}", text(&out.stderr));
}

/// A raw connection to `db` as someone with write access to the file, the
/// append-only triggers dropped.
async fn tamper(db: &std::path::Path, statements: &[&str]) {
    use sqlx::Connection;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.unwrap();
    for sql in ["DROP TRIGGER IF EXISTS audit_log_no_update", "DROP TRIGGER IF EXISTS audit_log_no_delete"]
        .iter()
        .chain(statements)
    {
        sqlx::query(sqlx::AssertSqlSafe(sql.to_string())).execute(&mut conn).await.unwrap();
    }
    conn.close().await.unwrap();
}

/// `merlya audit verify`: exit code and what it printed.
fn verify(env: &TestEnv) -> (Option<i32>, String) {
    let out = env.run(&["audit", "verify"]);
    (out.status.code(), format!("{}{}", text(&out.stdout), text(&out.stderr)))
}

#[tokio::test]
async fn audit_chain_detects_edits_and_deletions() {
    let env = TestEnv::new();
    for i in 0..4 {
        env.ok(&["exec", "localhost", "--", &format!("echo {i}")]);
    }
    env.ok(&["exec", "localhost", "--yes", "--", "mysql -u root -phunter2 -e 'select 1' || true"]);
    let verified = env.ok(&["audit", "verify"]);
    assert!(
        verified.contains("audit chain intact: 10 entries, keyed (HMAC-SHA256), matches the checkpoint written at"),
        "{verified}"
    );
    let list = env.ok(&["audit", "list", "--host", "localhost", "--since", "1h"]);
    assert!(list.contains("mysql -u root -p*** -e"), "secrets are masked: {list}");
    assert!(!list.contains("hunter2"));
    let records: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--outcome", "ok", "--format", "json"])).unwrap();
    assert_eq!(records.len(), 5, "one record per execution");
    assert!(
        records.iter().all(|r| r["outcome"] == "ok" && r["requested_by"] == "tester" && r["login_user"] == "tester")
    );
    let jsonl = env.ok(&["audit", "export", "--format", "jsonl"]);
    assert_eq!(jsonl.lines().count(), 10, "a start and a finish entry each");
    let csv = env.ok(&["audit", "export", "--format", "csv"]);
    assert!(
        csv.starts_with("id,ts,session_id,event,outcome,ref_id,requested_by,user,login_user,host,address,port"),
        "{csv}"
    );

    let db = env.merlya_home().join("merlya.db");
    // Edited row: the start of `echo 1` (entry 3).
    tamper(&db, &["UPDATE audit_log SET command = 'echo innocent' WHERE id = 3"]).await;
    let (code, out) = verify(&env);
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("BROKEN at entry 3") && out.contains("altered"), "{out}");
    tamper(&db, &["UPDATE audit_log SET command = 'echo 1' WHERE id = 3"]).await;
    assert_eq!(verify(&env).0, Some(0), "restoring the row restores the chain");

    // Deleted row in the middle: the next entry names it.
    tamper(&db, &["DELETE FROM audit_log WHERE id = 5"]).await;
    let (code, out) = verify(&env);
    assert_eq!(code, Some(5));
    assert!(out.contains("BROKEN at entry 6") && out.contains("removed or altered"), "{out}");
}

#[tokio::test]
async fn wiping_the_audit_tables_is_detected() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "echo a"]);
    tamper(&env.merlya_home().join("merlya.db"), &["DELETE FROM audit_log", "DELETE FROM audit_head"]).await;
    let (code, out) = verify(&env);
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("the log was wiped") && out.contains("names 2 entries"), "{out}");
}

#[tokio::test]
async fn deleting_the_newest_audit_entries_is_detected_even_with_the_head_fixed() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "echo a"]);
    env.ok(&["exec", "localhost", "--", "echo b"]);
    let db = env.merlya_home().join("merlya.db");
    tamper(
        &db,
        &[
            "DELETE FROM audit_log WHERE id > 2",
            "UPDATE audit_head SET last_id = 2, count = 2, hash = (SELECT hash FROM audit_log WHERE id = 2)",
        ],
    )
    .await;
    let (code, out) = verify(&env);
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("newest entries were removed"), "{out}");
}

#[tokio::test]
async fn a_chain_recomputed_without_the_key_is_detected() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "echo a"]);
    let db = env.merlya_home().join("merlya.db");
    // Recompute every hash with plain SHA-256 after editing a command.
    let entries = {
        let store = merlya::store::Store::open(&db).await.unwrap();
        let entries = store.audit_entries().await.unwrap();
        store.close().await;
        entries
    };
    let mut prev = merlya::store::audit::GENESIS.to_string();
    let mut statements = Vec::new();
    for mut e in entries {
        e.command = e.command.replace("echo a", "echo b");
        let hash = e.legacy_hash(&prev);
        statements.push(format!(
            "UPDATE audit_log SET command = '{}', prev_hash = '{prev}', hash = '{hash}' WHERE id = {}",
            e.command, e.id
        ));
        prev = hash;
    }
    statements.push(format!("UPDATE audit_head SET hash = '{prev}'"));
    let statements: Vec<&str> = statements.iter().map(String::as_str).collect();
    tamper(&db, &statements).await;
    let (code, out) = verify(&env);
    assert_eq!(code, Some(5), "{out}");
    assert!(out.contains("BROKEN at entry 1") && out.contains("recomputed without the key"), "{out}");
}

#[tokio::test]
async fn a_run_killed_midway_is_listed_as_unfinished() {
    let env = TestEnv::new();
    env.ok(&["hosts", "list"]);
    let mut child = env
        .merlya(&["exec", "localhost", "--", "sleep 3"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The start entry is written before the command runs.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let listed = env.ok(&["audit", "list", "--outcome", "unfinished", "--format", "json"]);
        if listed.contains("sleep 3") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no start entry while the command runs");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let unfinished: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--outcome", "unfinished", "--format", "json"])).unwrap();
    assert_eq!(unfinished.len(), 1, "{unfinished:?}");
    assert_eq!(unfinished[0]["command"], "sleep 3");
    assert_eq!(unfinished[0]["host"], "localhost");
    let (code, out) = verify(&env);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("started with no outcome recorded (unfinished)"), "{out}");
}

#[test]
fn a_denied_command_is_in_the_audit_log() {
    let env = TestEnv::new();
    let out = env.run(&["exec", "localhost", "--", "touch /nonexistent/never"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let denied: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--outcome", "denied", "--format", "json"])).unwrap();
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0]["approved_by"], "nobody (no terminal)");
    assert!(denied[0]["reason"].as_str().unwrap().starts_with("denied by nobody"), "{denied:?}");
    let none: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--outcome", "ok", "--format", "json"])).unwrap();
    assert!(none.is_empty());
    assert_eq!(verify(&env).0, Some(0));
}

#[test]
fn files_merlya_creates_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let fresh = env.dir.path().join("fresh").join("merlya");
    let run = |args: &[&str]| {
        let out = env.merlya(args).env("MERLYA_HOME", &fresh).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    run(&["exec", "localhost", "--", "echo hi"]);
    run(&["audit", "verify"]);
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&fresh), 0o700, "MERLYA_HOME created by merlya");
    assert_eq!(mode(&fresh.join("logs")), 0o700);
    let files = support::walk(&fresh);
    for name in ["merlya.db", "audit.key", "audit.checkpoint"] {
        assert!(files.iter().any(|f| f.ends_with(name)), "{name} in {files:?}");
    }
    assert!(files.iter().any(|f| f.extension().is_some_and(|e| e == "log")), "a log file in {files:?}");
    for file in files.iter().filter(|f| f.is_file()) {
        assert_eq!(mode(file), 0o600, "{}", file.display());
    }
    // A home the user made keeps its mode.
    assert_eq!(mode(&env.merlya_home()) & 0o700, 0o700);
    let before = mode(&env.merlya_home());
    env.ok(&["hosts", "list"]);
    assert_eq!(mode(&env.merlya_home()), before);
}

#[test]
fn host_commands_round_trip() {
    let env = TestEnv::new();
    env.ok(&[
        "hosts",
        "add",
        "web01",
        "--hostname",
        "10.0.0.1",
        "--user",
        "deploy",
        "--tag",
        "web",
        "--elevation",
        "sudo",
    ]);
    env.ok(&["hosts", "add", "bastion", "--hostname", "10.0.0.254", "--port", "2222", "--elevation", "sudo_password"]);
    assert_eq!(env.run(&["hosts", "add", "web01", "--hostname", "x"]).status.code(), Some(1));
    let err = text(&env.run(&["hosts", "add", "bad name", "--hostname", "x"]).stderr);
    assert!(err.contains("contains ' '"), "{err}");
    assert!(!err.contains('\x1b'), "errors are not coloured when stderr is not a terminal: {err:?}");
    let err = text(&env.run(&["exec", "web1", "--", "true"]).stderr);
    assert!(err.contains("web1 is not in the inventory; did you mean web01?"), "{err}");
    env.ok(&["hosts", "tag", "web01", "prod", "eu"]);
    env.ok(&["hosts", "untag", "web01", "eu"]);
    let show: serde_json::Value =
        serde_json::from_str(&env.ok(&["hosts", "show", "web01", "--format", "json"])).unwrap();
    assert_eq!(show["tags"], serde_json::json!(["prod", "web"]));
    assert_eq!(show["elevation"], "sudo");
    let list = env.ok(&["hosts", "list", "--tag", "prod"]);
    assert!(list.contains("web01") && !list.contains("bastion"), "{list}");
    assert!(text(&env.run(&["hosts", "rm", "localhost"]).stderr).contains("built in"));

    // Export in every format and re-import into a fresh home.
    for format in ["json", "yaml", "csv"] {
        let exported = env.ok(&["hosts", "export", "--format", format]);
        let other = TestEnv::new();
        let file = other.dir.path().join(format!("hosts.{format}"));
        std::fs::write(&file, &exported).unwrap();
        other.ok(&["hosts", "import", file.to_str().unwrap()]);
        let a: serde_json::Value = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
        let b: serde_json::Value = serde_json::from_str(&other.ok(&["hosts", "list", "--format", "json"])).unwrap();
        assert_eq!(a, b, "{format} round trip");
    }
    env.ok(&["hosts", "rm", "bastion"]);
    assert_eq!(env.run(&["hosts", "show", "bastion"]).status.code(), Some(1));
}

#[test]
fn every_import_format_good_and_malformed() {
    let cases: [(&str, &str, &str, usize); 9] = [
        ("config", "Host web01\n  HostName 10.0.0.1\n  User deploy\nHost *\n  Port 2200\n", "Host a\n  Port many\n", 1),
        (
            "known_hosts",
            "web01,10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
            "web01 ssh-ed25519\n",
            1,
        ),
        ("hosts", "10.0.0.1 web01\n10.0.0.2 web02\n", "10.0.0.1 web01\nnonsense web02\n", 2),
        ("inventory.ini", "[web]\nweb[01:03]\n", "[web]\nweb[03:01]\n", 3),
        ("inventory.yml", "all:\n  children:\n    web:\n      hosts:\n        web01:\n", "all:\n  children: [\n", 1),
        (
            "hosts.csv",
            "name,hostname,port,username,tags\nweb01,10.0.0.1,22,u,a;b\n",
            "name,hostname,port\nweb01,10.0.0.1,x\n",
            1,
        ),
        ("hosts.toml", "[hosts.web01]\nhostname = \"10.0.0.1\"\n", "[hosts.web01]\nhostname = 5\n", 1),
        ("hosts.json", "[{\"name\":\"web01\",\"hostname\":\"10.0.0.1\"}]", "[{\"name\":\"web01\"}]", 1),
        ("hosts.yaml", "- name: web01\n  hostname: 10.0.0.1\n", "- name: web01\n  hostname: 10.0.0.1\n  bogus: 1\n", 1),
    ];
    for (name, good, bad, expected) in cases {
        let env = TestEnv::new();
        let dir = env.dir.path().join("in");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bad).unwrap();
        let out = env.run(&["hosts", "import", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}: malformed file must fail");
        let err = text(&out.stderr);
        assert!(err.contains("nothing was imported") && err.contains(&path.display().to_string()), "{name}: {err}");
        assert!(err.contains("line ") || name.ends_with(".yml"), "{name}: errors carry a line: {err}");
        let listed: Vec<serde_json::Value> =
            serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
        assert_eq!(listed.len(), 1, "{name}: nothing imported");

        std::fs::write(&path, good).unwrap();
        let dry = env.ok(&["hosts", "import", path.to_str().unwrap(), "--dry-run"]);
        assert!(dry.contains(&format!("dry run: {expected} host(s)")), "{name}: {dry}");
        let out = env.ok(&["hosts", "import", path.to_str().unwrap()]);
        assert!(out.contains(&format!("imported {expected} host(s)")), "{name}: {out}");
        let listed: Vec<serde_json::Value> =
            serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
        assert_eq!(listed.len(), expected + 1, "{name}");
    }
}

#[test]
fn policy_check_reads_the_homes_egress_allow_list() {
    // ADR 0030: a read outside the operator's networks asks, naming the destination, until the
    // home's policy.egress_allow lists it; a bad entry names the file, line and entry.
    let env = TestEnv::new();
    let out = env.run(&["policy", "check", "--", "dig +short shop.example.com"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        text(&out.stdout).contains("looks up shop.example.com, outside the operator's networks (policy.egress_allow)"),
        "{}",
        text(&out.stdout)
    );
    let config = env.merlya_home().join("config.yaml");
    std::fs::write(&config, "policy:\n  egress_allow: [example.com]\n").unwrap();
    assert_eq!(env.run(&["policy", "check", "--", "dig +short shop.example.com"]).status.code(), Some(0));
    assert_eq!(env.run(&["policy", "check", "--", "dig +short secret.evil.example"]).status.code(), Some(3));
    std::fs::write(&config, "policy:\n  egress_allow: [com]\n").unwrap();
    let out = env.run(&["policy", "check", "--", "dig +short shop.example.com"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("config.yaml:2: policy.egress_allow: `com`"), "{}", text(&out.stderr));
}

#[test]
fn policy_check_explains_and_exits_by_verdict() {
    let env = TestEnv::new();
    let out = env.run(&["policy", "check", "--", "df -h && cat /etc/passwd > /tmp/y"]);
    assert_eq!(out.status.code(), Some(3));
    // Not something a diagnostic may run, but a person running it is asked, not refused.
    assert_eq!(
        text(&out.stdout),
        "NEEDS APPROVAL: df -h && cat /etc/passwd > /tmp/y (mutating)\n  - writes to /tmp/y with >\n  \
         = the diagnostic specialist runs only proven reads; `merlya exec` and the execution specialist ask first\n"
    );

    assert_eq!(env.run(&["policy", "check", "--", "journalctl -u nginx --no-pager"]).status.code(), Some(0));
    let out = env.run(&[
        "policy",
        "check",
        "--specialist",
        "execution",
        "--host",
        "web01",
        "--format",
        "json",
        "--",
        "echo pw | sudo -S reboot",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(v["class"], "dangerous");
    assert_eq!(v["needs_approval"], true);
    assert!(v["leaks"][0]["rewrite"].as_str().unwrap().contains("merlya secret set sudo:web01:password"));
}

#[test]
fn exec_resolves_secret_references_and_masks_them() {
    let env = TestEnv::new();
    let m = env!("CARGO_BIN_EXE_merlya");
    let script = format!(
        "printf 'tok-9876\\n' | '{m}' secret set api:localhost:token >/dev/null && \
         '{m}' exec localhost --format json -- 'echo token=@api:localhost:token' 2>&1; \
         '{m}' exec --yes localhost --format json -- 'echo token=@api:localhost:token; echo missing=@api:localhost:other'; \
         '{m}' exec --yes localhost --format json -- 'echo token=@api:localhost:token'"
    );
    let out = env.keyring_session(&script).output().unwrap();
    let stdout = text(&out.stdout);
    // Without a person's approval, a command holding a secret does not run.
    let (refusal, rest) = stdout.split_once('\n').unwrap();
    assert!(refusal.contains("refused") && refusal.contains("secret reference"), "{refusal}");
    let lines: Vec<serde_json::Value> = rest.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines[0]["error"].as_str().unwrap().contains("secret @api:localhost:other is not stored"), "{lines:?}");
    assert_eq!(lines[1]["stdout"], "token=***\n", "the value ran but is masked in output");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("echo token=@api:localhost:token") && !audit.contains("tok-9876"), "{audit}");
}

#[test]
fn twenty_imports_at_once_on_one_home_all_succeed() {
    let env = TestEnv::new();
    env.ok(&["hosts", "list"]);
    let dir = env.dir.path().join("in");
    std::fs::create_dir_all(&dir).unwrap();
    let children: Vec<_> = (0..20)
        .map(|i| {
            let file = dir.join(format!("hosts{i}.csv"));
            let rows: String = (0..5).map(|j| format!("web{i}x{j},10.0.{i}.{j},22,u,team{i};shared\n")).collect();
            std::fs::write(&file, format!("name,hostname,port,username,tags\n{rows}")).unwrap();
            env.merlya(&["hosts", "import", file.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}: {}", out.status, text(&out.stderr));
        assert!(text(&out.stdout).contains("imported 5 host(s)"), "{}", text(&out.stdout));
    }
    let listed: Vec<serde_json::Value> = serde_json::from_str(&env.ok(&["hosts", "list", "--format", "json"])).unwrap();
    assert_eq!(listed.len(), 20 * 5 + 1, "every imported host is there");
    for i in 0..20 {
        for j in 0..5 {
            let name = format!("web{i}x{j}");
            assert!(listed.iter().any(|h| h["name"] == name.as_str()), "{name} missing");
        }
    }
}

#[test]
fn output_into_a_pipe_closed_early_ends_quietly() {
    use std::io::BufRead;
    let env = TestEnv::new();
    // More than a pipe holds (64 KiB), so merlya is still writing when the reader goes.
    let mut child = env
        .merlya(&["completions", "bash"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.starts_with("_merlya()"), "{first}");
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 141)), "{}: {stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bash_completion_offers_inventory_hosts_and_tags_where_targets_go() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.1", "--tag", "web"]);
    env.ok(&["hosts", "add", "db01", "--hostname", "10.0.0.2", "--tag", "db"]);
    let script = env.dir.path().join("merlya.bash");
    std::fs::write(&script, env.ok(&["completions", "bash"])).unwrap();
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_merlya")).parent().unwrap().to_path_buf();
    let complete = |words: &str| {
        let line = format!("merlya {words}");
        let cword = line.split(' ').count() - 1;
        let snippet = format!(
            "source '{}'; COMP_WORDS=({line}); COMP_CWORD={cword}; COMP_LINE='{line}'; COMP_POINT={}; \
             _merlya_inventory merlya \"${{COMP_WORDS[COMP_CWORD]}}\" x; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            line.len()
        );
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        let out = std::process::Command::new("bash")
            .args(["-c", &snippet])
            .env("PATH", path)
            .env("MERLYA_HOME", env.merlya_home())
            .env("HOME", env.home())
            .output()
            .unwrap();
        text(&out.stdout).lines().map(String::from).collect::<Vec<_>>()
    };
    assert_eq!(complete("exec w"), ["web01"]);
    assert_eq!(complete("exec @"), ["@db", "@web"]);
    assert_eq!(complete("hosts show d"), ["db01"]);
    assert!(complete("ho").contains(&"hosts".to_string()), "subcommands still complete");
}

#[test]
fn merlya_exec_names_its_run_and_the_audit_log_lists_it_alone() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "uname"]);
    let out = env.run(&["exec", "localhost", "--", "uptime"]);
    assert!(out.status.success());
    let err = text(&out.stderr);
    let id = err
        .lines()
        .find_map(|l| l.strip_prefix("run "))
        .and_then(|l| l.split(':').next())
        .unwrap_or_else(|| panic!("{err}"));
    let entries: Vec<serde_json::Value> =
        serde_json::from_str(&env.ok(&["audit", "list", "--run", id, "--format", "json"])).unwrap();
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["command"], "uptime");
}

#[test]
fn fish_and_zsh_completion_offer_inventory_hosts_and_tags_where_targets_go() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.1", "--tag", "web"]);
    env.ok(&["hosts", "add", "db01", "--hostname", "10.0.0.2", "--tag", "db"]);
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_merlya")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    // fish answers `complete -C LINE` directly.
    let fish = |line: &str| {
        let script = format!("merlya completions fish | source; complete -C '{line}'");
        let out = std::process::Command::new("fish")
            .args(["--no-config", "-c", &script])
            .env("PATH", &path)
            .env("MERLYA_HOME", env.merlya_home())
            .env("HOME", env.home())
            .output()
            .expect("fish (scripts/test.sh installs it)");
        let words: Vec<String> =
            text(&out.stdout).lines().map(|l| l.split('\t').next().unwrap_or("").to_string()).collect();
        words
    };
    assert_eq!(fish("merlya exec w"), ["web01"]);
    assert!(fish("merlya pipeline run bash --targets ").contains(&"@db".to_string()));
    assert!(fish("merlya hosts show ").contains(&"db01".to_string()));
    assert!(
        !fish("merlya hosts add ").contains(&"web01".to_string()),
        "a new name is not completed from the inventory"
    );
    // zsh completes only inside its line editor: a real zsh in tmux, Tab pressed.
    let socket = format!("merlya-zsh-{}", std::process::id());
    let shell = format!(
        "env PATH='{path}' MERLYA_HOME='{}' HOME='{}' zsh -f",
        env.merlya_home().display(),
        env.home().display()
    );
    let tmux = support::tmux::Tmux::attach(socket, &shell, 100, 20);
    tmux.type_text("autoload -U compinit && compinit -u && source <(merlya completions zsh) && echo ready");
    tmux.keys(&["Enter"]);
    tmux.wait_for("ready");
    tmux.type_text("merlya exec w");
    tmux.keys(&["Tab"]);
    tmux.wait_for("merlya exec web01");
    tmux.keys(&["C-u"]);
    tmux.type_text("merlya pipeline run ansible site.yml --targets @d");
    tmux.keys(&["Tab"]);
    tmux.wait_for("--targets @db");
}

#[test]
fn the_audit_witness_outside_the_home_is_written_and_checked() {
    let env = TestEnv::new();
    let outside = tempfile::tempdir().unwrap();
    let witness = outside.path().join("witness.log");
    let config = env.merlya_home().join("config.yaml");
    std::fs::write(&config, format!("audit:\n  witness: file:{}\n", witness.display())).unwrap();
    env.ok(&["exec", "localhost", "--", "true"]);
    let verified = env.ok(&["audit", "verify"]);
    assert!(verified.contains("holds every head witnessed in"), "{verified}");
    let heads = std::fs::read_to_string(&witness).unwrap();
    assert!(heads.lines().count() >= 1 && heads.contains("\"last_id\""), "{heads}");

    // A witness beside the log it witnesses proves nothing: refused, naming the setting.
    let inside = env.merlya_home().join("witness.log");
    std::fs::write(&config, format!("audit:\n  witness: file:{}\n", inside.display())).unwrap();
    let out = env.run(&["hosts", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("audit.witness") && err.contains("inside MERLYA_HOME"), "{err}");
}

/// journald and syslog witnesses, against a real systemd-journald (a namespace of its own): every
/// checkpoint reaches it, `audit verify` reads the heads back (from journalctl, or from the file a log
/// server keeps), and a log wiped with its key and checkpoint, then started again, is caught.
#[test]
fn journald_and_syslog_witnesses_are_written_read_back_and_catch_a_wiped_log() {
    let journal = support::journald::Journald::start();
    let specs = [format!("journald:{}", journal.namespace), format!("syslog:{}", journal.dev_log().display())];
    for spec in specs {
        let env = TestEnv::new();
        std::fs::write(env.merlya_home().join("config.yaml"), format!("audit:\n  witness: {spec}\n")).unwrap();
        env.ok(&["exec", "localhost", "--", "true"]);
        env.ok(&["exec", "localhost", "--", "true"]);
        let database = env.merlya_home().join("merlya.db").display().to_string();
        let heads = journal.messages("merlya-audit");
        assert!(heads.contains(&database) && heads.contains("\"last_id\""), "{spec}: {heads}");
        // The syslog witness is read back from what the log server keeps (here, the journal's copy).
        let log = env.dir.path().join("witness.log");
        let verify = |env: &TestEnv| {
            std::fs::write(&log, journal.messages("merlya-audit")).unwrap();
            let log = log.display().to_string();
            let args = if spec.starts_with("syslog") {
                vec!["audit", "verify", "--witness-log", log.as_str()]
            } else {
                vec!["audit", "verify"]
            };
            env.run(&args)
        };
        let out = verify(&env);
        assert_eq!(out.status.code(), Some(0), "{spec}: {}{}", text(&out.stdout), text(&out.stderr));
        assert!(text(&out.stdout).contains("holds every head witnessed in"), "{spec}: {}", text(&out.stdout));

        // Wiped with its key, checkpoint and verified head, then used again: a new chain that verifies
        // on its own, but the witness saw the old one.
        for file in ["merlya.db", "merlya.db.clean", "audit.key", "audit.checkpoint", "audit.verified"] {
            let _ = std::fs::remove_file(env.merlya_home().join(file));
        }
        env.ok(&["exec", "localhost", "--", "true"]);
        let out = verify(&env);
        assert_eq!(out.status.code(), Some(5), "{spec}: {}{}", text(&out.stdout), text(&out.stderr));
        let said = text(&out.stderr);
        assert!(said.contains("the witness") && said.contains("saw entry"), "{spec}: {said}");
    }
}

#[test]
fn a_command_on_localhost_does_not_see_merlyas_environment() {
    let env = TestEnv::new();
    let out = env
        .merlya(&["exec", "localhost", "--", "printenv"])
        .env("OPENAI_API_KEY", "sk-merlya-only-1d2c")
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("PATH="), "a command still finds its programs: {shown}");
    assert!(!shown.contains("sk-merlya-only-1d2c") && !shown.contains("DBUS_SESSION_BUS_ADDRESS"), "{shown}");
    // merlya's own environment, through /proc, is refused before anything runs.
    let out = env.run(&["exec", "localhost", "--", "cat /proc/$PPID/environ"]);
    assert_ne!(out.status.code(), Some(0));
}
