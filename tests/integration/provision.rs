//! The provisioning cycle with real Terraform on the built-in `terraform_data` template: create,
//! check, state removed outside merlya (missing), an update that does not clear a found drift, the
//! state edited outside merlya (drifted), reconcile, rollback to the answers before the update,
//! snapshot, delete. Every change goes through the change path
//! (`--yes` approves it here).

use serde_json::Value;

use crate::support::{self, TestEnv};

fn json(env: &TestEnv, args: &[&str]) -> Value {
    let out = env.run(args);
    assert!(out.status.success(), "merlya {args:?}: {}\n{}", support::text(&out.stdout), support::text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", support::text(&out.stdout)))
}

fn state_of(env: &TestEnv, name: &str) -> (String, String) {
    let shown = json(env, &["state", "show", name, "--format", "json"]);
    let r = &shown["resource"];
    (r["status"].as_str().unwrap().to_string(), r["drift"].as_str().unwrap().to_string())
}

fn terraform(dir: &std::path::Path, args: &[&str]) {
    let status =
        std::process::Command::new("terraform").args(args).current_dir(dir).env("TF_IN_AUTOMATION", "1").status();
    assert!(status.is_ok_and(|s| s.success()), "terraform {args:?}");
}

#[test]
fn create_check_drift_update_and_delete_a_terraform_data_resource() {
    let env = TestEnv::new();
    let created = env.run(&["provision", "create", "data-marker", "--var", "message=hello", "--name", "m1", "--yes"]);
    assert!(created.status.success(), "{}", support::text(&created.stderr));
    assert_eq!(state_of(&env, "m1"), ("active".into(), "unknown".into()));
    let dir = env.merlya_home().join("resources/m1");
    assert!(dir.join("terraform.tfstate").is_file() && dir.join("main.tf").is_file());
    let shown = json(&env, &["state", "show", "m1", "--format", "json"]);
    assert_eq!(shown["resource"]["outputs"]["message"], "hello", "{shown}");
    assert_eq!(shown["resource"]["answers"]["values"]["message"]["value"], "hello", "{shown}");

    let checked = json(&env, &["state", "check", "--format", "json"]);
    assert_eq!(checked[0]["drift"], "no_drift", "{checked}");

    // The state loses the resource outside merlya: missing.
    terraform(&dir, &["state", "rm", "terraform_data.marker"]);
    let checked = json(&env, &["state", "check", "m1", "--format", "json"]);
    assert_eq!(checked[0]["drift"], "missing", "{checked}");
    assert!(checked[0]["detail"].to_string().contains("terraform_data.marker"), "{checked}");
    // The incident report lists the drift found.
    let report = env.ok(&["report"]);
    assert!(report.contains("## Drift found") && report.contains("| resource | m1 | missing"), "{report}");

    // An update applies (it makes the marker again) but does not clear the drift found: a check does.
    let updated = env.run(&["provision", "update", "m1", "--var", "message=bye", "--yes"]);
    assert!(updated.status.success(), "{}", support::text(&updated.stderr));
    assert_eq!(state_of(&env, "m1"), ("active".into(), "missing".into()));
    assert_eq!(json(&env, &["state", "check", "m1", "--format", "json"])[0]["drift"], "no_drift");
    assert_eq!(json(&env, &["state", "show", "m1", "--format", "json"])["resource"]["outputs"]["message"], "bye");

    // The state edited outside merlya (another input, a new serial): drifted.
    let path = dir.join("terraform.tfstate");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["serial"] = Value::from(state["serial"].as_i64().unwrap() + 1);
    state["resources"][0]["instances"][0]["attributes"]["input"]["value"]["message"] = Value::from("edited");
    std::fs::write(&path, serde_json::to_string(&state).unwrap()).unwrap();
    let checked = json(&env, &["state", "check", "m1", "--format", "json"]);
    assert_eq!(checked[0]["drift"], "drifted", "{checked}");
    assert!(checked[0]["detail"].to_string().contains("outside merlya"), "{checked}");

    // Reconcile applies the expected configuration again: the drift is gone at the next check.
    let reconciled = env.run(&["state", "reconcile", "m1", "--yes"]);
    assert!(reconciled.status.success(), "{}", support::text(&reconciled.stderr));
    assert_eq!(json(&env, &["state", "check", "m1", "--format", "json"])[0]["drift"], "no_drift");

    // Rollback goes back to the answers before the update.
    let rolled = env.run(&["state", "rollback", "m1", "--yes"]);
    assert!(rolled.status.success(), "{}", support::text(&rolled.stderr));
    assert_eq!(json(&env, &["state", "show", "m1", "--format", "json"])["resource"]["outputs"]["message"], "hello");
    env.ok(&["state", "snapshot", "m1"]);
    assert!(json(&env, &["state", "show", "m1", "--format", "json"])["snapshots"].as_u64().unwrap() >= 4);

    // Delete destroys it through the change path.
    let deleted = env.run(&["provision", "delete", "m1", "--yes"]);
    assert!(deleted.status.success(), "{}", support::text(&deleted.stderr));
    assert_eq!(state_of(&env, "m1").0, "deleted");
    let list = json(&env, &["state", "list", "--format", "json"]);
    assert_eq!(list.as_array().unwrap().len(), 1);
    // The changes were audited.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("terraform") && audit.contains("apply"), "{audit}");
}

#[test]
fn provisioning_without_approval_changes_nothing_and_a_bad_variable_is_named() {
    let env = TestEnv::new();
    // No terminal and no --yes: it stops after the summary; the resource stays pending.
    let out = env.run(&["provision", "create", "data-marker", "--var", "message=hello", "--name", "m2"]);
    assert!(!out.status.success());
    assert_eq!(state_of(&env, "m2").0, "pending");
    assert!(!env.merlya_home().join("resources/m2/terraform.tfstate").exists(), "nothing was applied");
    let out = env.run(&["provision", "create", "data-marker", "--var", "colour=red", "--name", "m3"]);
    assert!(!out.status.success());
    assert!(support::text(&out.stderr).contains("colour"), "{}", support::text(&out.stderr));
}

/// A secret answer (a keyring reference) reaches only the rendered file and Terraform: not the
/// database (answers, pipeline record, audit log, snapshots), not what merlya prints.
#[test]
fn a_secret_answer_never_reaches_the_database_the_audit_log_or_the_screen() {
    let env = TestEnv::new();
    let secret = "s3cr3t-Pw-provision-42";
    let m = env!("CARGO_BIN_EXE_merlya");
    let script = format!(
        "printf '{secret}\\n' | '{m}' secret set db:prod:password >/dev/null && \
         '{m}' provision create data-pair --name p1 --var name=db --var password=@db:prod:password --yes && \
         '{m}' state check && '{m}' state show p1 --format json && '{m}' state snapshot p1 && \
         '{m}' audit list --format json && '{m}' pipeline list --format json"
    );
    let out = env.keyring_session(&script).env("MERLYA_SECRETS_BACKEND", "keyring").output().unwrap();
    let (stdout, stderr) = (support::text(&out.stdout), support::text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("\"secret\": \"db:prod:password\""), "the answer is kept as its reference: {stdout}");
    assert!(!stdout.contains(secret) && !stderr.contains(secret), "printed:\n{stdout}{stderr}");
    assert!(!env.database_text().contains(secret), "the database holds the secret");
    let main = std::fs::read_to_string(env.merlya_home().join("resources/p1/main.tf")).unwrap();
    assert!(main.contains(secret), "the rendered file is where it goes");
}

/// The MCP backend against the reference filesystem server: a file made through its change tool
/// (approved), read back by the check: changed outside merlya is drifted, removed is missing.
#[test]
fn a_file_made_through_an_mcp_server_is_checked_for_drift() {
    let root = tempfile::tempdir().unwrap();
    let env = TestEnv::new();
    let server = support::mcp_packages().join("node_modules/.bin/mcp-server-filesystem");
    let root_path = std::fs::canonicalize(root.path()).unwrap();
    std::fs::write(
        env.merlya_home().join("config.yaml"),
        format!(
            "mcp:\n  servers:\n    fs:\n      command: {}\n      args: [\"{}\"]\n",
            server.display(),
            root_path.display()
        ),
    )
    .unwrap();
    let file = root_path.join("motd");
    let path = format!("path={}", file.display());
    // Without approval nothing is written.
    let out =
        env.run(&["provision", "create", "file-marker", "--var", &path, "--var", "content=hello", "--name", "f0"]);
    assert!(!out.status.success() && !file.exists(), "{}", support::text(&out.stderr));
    let out = env.run(&[
        "provision",
        "create",
        "file-marker",
        "--var",
        &path,
        "--var",
        "content=hello",
        "--name",
        "f1",
        "--yes",
    ]);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    assert_eq!(state_of(&env, "f1"), ("active".into(), "unknown".into()));
    let check = |env: &TestEnv| {
        let all = json(env, &["state", "check", "--format", "json"]);
        all.as_array().unwrap().iter().find(|c| c["resource"] == "f1").unwrap()["drift"].as_str().unwrap().to_string()
    };
    assert_eq!(check(&env), "no_drift");
    std::fs::write(&file, "edited by hand").unwrap();
    assert_eq!(check(&env), "drifted");
    std::fs::remove_file(&file).unwrap();
    assert_eq!(check(&env), "missing");
    // The calls are in the audit log, the write approved.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("fs.write_file") && audit.contains("fs.read_text_file"), "{audit}");
}
