//! `merlya doctor`: every check with and without what it checks — a model that answers or refuses the
//! key (the scripted server's real model-list endpoint), a broken configuration, a damaged database, MCP
//! servers that start or do not, pipeline tools on PATH or not.

use crate::support;

use serde_json::{Value, json};
use support::agent::{KEY, configured};
use support::llm::{Recorded, Reply, ScriptedLlm};
use support::{TestEnv, text};

fn doctor(env: &TestEnv, path: Option<&str>) -> (i32, Vec<Value>) {
    let mut cmd = env.merlya(&["doctor", "--format", "json"]);
    cmd.env("MERLYA_TEST_LLM_KEY", KEY);
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    let out = cmd.output().unwrap();
    let checks: Vec<Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)));
    (out.status.code().unwrap_or(-1), checks)
}

fn status<'a>(checks: &'a [Value], name: &str) -> &'a str {
    let check = checks.iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no check {name}: {checks:?}"));
    check["status"].as_str().unwrap()
}

fn models(r: &Recorded) -> Reply {
    assert_eq!(r.path, "/v1/models", "the doctor lists models, it does not chat");
    if r.header("authorization") == Some(&format!("Bearer {KEY}")) {
        Reply::Json { status: 200, body: json!({"object": "list", "data": [{"id": "gpt-test"}]}), headers: vec![] }
    } else {
        Reply::Json { status: 401, body: json!({"error": {"message": "bad key"}}), headers: vec![] }
    }
}

#[test]
fn doctor_reads_the_keymap_and_theme_the_console_reads() {
    let env = TestEnv::new();
    let keymaps = env.merlya_home().join("keymaps");
    std::fs::create_dir_all(&keymaps).unwrap();
    std::fs::write(keymaps.join("default.yaml"), "global:\n  teleport: [t]\n").unwrap();
    let (code, checks) = doctor(&env, None);
    assert_eq!(status(&checks, "ui.keymap"), "FAIL", "{checks:?}");
    assert_eq!(code, 1);
    let check = checks.iter().find(|c| c["name"] == "ui.keymap").unwrap();
    let detail = check["detail"].as_str().unwrap_or_default();
    // The words of the loader the console starts with (app::keymap::Keymap::load).
    assert!(detail.contains("default.yaml") && detail.contains("global.teleport: unknown action"), "{detail}");
    assert_eq!(status(&checks, "ui.theme"), "OK");
    std::fs::remove_file(keymaps.join("default.yaml")).unwrap();
    let (_, checks) = doctor(&env, None);
    assert_eq!(status(&checks, "ui.keymap"), "OK");
}

#[test]
fn a_fresh_home_is_ready_without_a_model_and_names_what_is_missing() {
    let env = TestEnv::new();
    // A PATH without terraform, kubectl or ansible-playbook.
    let (code, checks) = doctor(&env, Some("/usr/bin:/bin"));
    assert_eq!(code, 0, "WARNs do not fail: {checks:?}");
    assert_eq!(status(&checks, "home"), "OK", "a home merlya made is its owner's alone");
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "config",
            "ui.theme",
            "ui.keymap",
            "ui.language",
            "home",
            "disk",
            "memory",
            "ssh-agent",
            "keyring",
            "database",
            "audit",
            "model",
            "ansible-playbook",
            "terraform",
            "kubectl"
        ]
    );
    assert_eq!(status(&checks, "database"), "OK");
    assert_eq!(status(&checks, "audit"), "OK", "no key yet is fine: the first command creates it");
    assert_eq!(status(&checks, "model"), "WARN");
    assert_eq!(status(&checks, "ssh-agent"), "WARN", "the test environment has no agent");
    assert_eq!(status(&checks, "terraform"), "WARN");
    assert!(checks.iter().filter(|c| c["status"] != "OK").all(|c| !c["hint"].as_str().unwrap_or("").is_empty()));

    // With terraform on PATH it is found.
    let terraform = std::process::Command::new("sh").args(["-c", "command -v terraform"]).output().unwrap();
    let dir = std::path::Path::new(text(&terraform.stdout).trim()).parent().unwrap().display().to_string();
    let (_, checks) = doctor(&env, Some(&format!("{dir}:/usr/bin:/bin")));
    assert_eq!(status(&checks, "terraform"), "OK");

    // Text for people: one line per check, the fix under it.
    let out = env.run(&["doctor"]);
    let shown = text(&out.stdout);
    assert!(shown.lines().any(|l| l.starts_with("OK    database")), "{shown}");
    assert!(shown.contains("→ type /setup in the console, or: merlya config set model.brain"), "{shown}");
}

#[test]
fn the_model_check_lists_models_with_the_key_and_fails_on_a_refused_key() {
    let llm = ScriptedLlm::start(models);
    let env = configured(&llm, "openai", "");
    let (code, checks) = doctor(&env, None);
    assert_eq!(status(&checks, "model"), "OK", "{checks:?}");
    assert!(code == 0 || checks.iter().any(|c| c["status"] == "FAIL" && c["name"] != "model"));
    let found = checks.iter().find(|c| c["name"] == "model").unwrap();
    assert!(found["detail"].as_str().unwrap().contains("gpt-test (openai) reachable, 1 model(s) listed"), "{found}");

    let out = env.merlya(&["doctor", "--format", "json"]).env("MERLYA_TEST_LLM_KEY", "sk-wrong").output().unwrap();
    assert_eq!(out.status.code(), Some(1), "a FAIL exits 1");
    let checks: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status(&checks, "model"), "FAIL");
    assert!(!text(&out.stdout).contains("sk-wrong"), "the key is never shown");
}

#[test]
fn a_broken_config_or_database_or_mcp_server_fails_and_everything_else_is_still_checked() {
    let env = TestEnv::new();
    std::fs::write(env.merlya_home().join("config.yaml"), "policy:\n  max_parallel: many\n").unwrap();
    let (code, checks) = doctor(&env, None);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "config"), "FAIL");
    let config = checks.iter().find(|c| c["name"] == "config").unwrap();
    assert!(config["detail"].as_str().unwrap().contains("config.yaml:2"), "names the line: {config}");
    assert_eq!(status(&checks, "database"), "OK", "the rest is checked with the defaults");

    // MCP servers: one that starts, one that cannot.
    let everything = support::mcp_packages().join("node_modules/.bin/mcp-server-everything");
    let yaml = format!(
        "mcp:\n  servers:\n    everything:\n      command: {}\n    broken:\n      command: /nonexistent/mcp-server\n",
        everything.display()
    );
    std::fs::write(env.merlya_home().join("config.yaml"), yaml).unwrap();
    let (code, checks) = doctor(&env, None);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "mcp:everything"), "OK");
    assert_eq!(status(&checks, "mcp:broken"), "FAIL");

    // A damaged database: reported, the file left as it was.
    std::fs::write(env.merlya_home().join("config.yaml"), "").unwrap();
    let db = env.merlya_home().join("merlya.db");
    let mut bytes = std::fs::read(&db).unwrap();
    for b in bytes.iter_mut().skip(4096).take(4096) {
        *b = 0xA5;
    }
    std::fs::write(&db, &bytes).unwrap();
    let (code, checks) = doctor(&env, None);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "database"), "FAIL");
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "left untouched");
}

fn detail<'a>(checks: &'a [Value], name: &str) -> &'a str {
    checks.iter().find(|c| c["name"] == name).and_then(|c| c["detail"].as_str()).unwrap_or_default()
}

#[tokio::test]
async fn a_dropped_table_fails_the_database_check_like_the_commands_that_need_it() {
    let env = TestEnv::new();
    env.ok(&["hosts", "add", "web01", "--hostname", "10.0.0.1", "--tag", "web"]);
    let db = env.merlya_home().join("merlya.db");
    {
        use sqlx::Connection;
        let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display())).await.unwrap();
        sqlx::query("DROP TABLE host_tags").execute(&mut conn).await.unwrap();
        conn.close().await.unwrap();
    }
    // The command that needs it fails...
    let out = env.run(&["hosts", "list"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // ...and the doctor says FAIL, naming what is missing, where it said OK.
    let (code, checks) = doctor(&env, None);
    assert_eq!(code, 1);
    assert_eq!(status(&checks, "database"), "FAIL", "{checks:?}");
    let found = detail(&checks, "database");
    assert!(found.contains("lacks table host_tags") && found.contains(&db.display().to_string()), "{found}");
}

#[test]
fn a_missing_or_broken_audit_key_fails_like_the_commands_that_need_it() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "true"]);
    let (code, checks) = doctor(&env, None);
    assert_eq!(status(&checks, "audit"), "OK", "{checks:?}");
    assert!(detail(&checks, "audit").contains("audit chain intact"), "{checks:?}");
    assert!(code == 0 || checks.iter().any(|c| c["status"] == "FAIL" && c["name"] != "audit"));

    let key = env.merlya_home().join("audit.key");
    let kept = std::fs::read(&key).unwrap();
    for (what, broken) in [("missing", None), ("cut short", Some(&kept[..16])), ("a folder", Some(&[][..]))] {
        std::fs::remove_file(&key).ok();
        std::fs::remove_dir(&key).ok();
        match broken {
            None => {}
            Some([]) => std::fs::create_dir(&key).unwrap(),
            Some(bytes) => std::fs::write(&key, bytes).unwrap(),
        }
        // A recorded command stops...
        let out = env.run(&["exec", "localhost", "--", "true"]);
        assert_ne!(out.status.code(), Some(0), "{what}: {}", text(&out.stdout));
        assert!(text(&out.stderr).contains("audit.key"), "{what}: {}", text(&out.stderr));
        // ...and the doctor says FAIL, naming the key.
        let (code, checks) = doctor(&env, None);
        assert_eq!(code, 1, "{what}");
        assert_eq!(status(&checks, "audit"), "FAIL", "{what}: {checks:?}");
        let found = checks.iter().find(|c| c["name"] == "audit").unwrap();
        assert!(found.to_string().contains("audit.key"), "{what}: {found}");
    }
    std::fs::remove_dir(&key).unwrap();
    std::fs::write(&key, &kept).unwrap();
    let (_, checks) = doctor(&env, None);
    assert_eq!(status(&checks, "audit"), "OK", "restored: {checks:?}");
}

/// A home others may enter (made by hand, 0755) is said, with the command that fixes it.
#[test]
fn a_home_open_to_others_is_a_warning_with_its_fix() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    env.ok(&["hosts", "list"]);
    std::fs::set_permissions(env.merlya_home(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, checks) = doctor(&env, None);
    let home = checks.iter().find(|c| c["name"] == "home").unwrap();
    assert_eq!(home["status"], "WARN", "{home}");
    assert!(
        home["detail"].as_str().unwrap().contains("755") && home["hint"].as_str().unwrap().contains("chmod 700"),
        "{home}"
    );
}
