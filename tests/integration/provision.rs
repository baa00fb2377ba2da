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

    // The configuration edited by hand (the state untouched): a normal plan is run and says so.
    let main = dir.join("main.tf");
    let rendered = std::fs::read_to_string(&main).unwrap();
    std::fs::write(&main, rendered.replace("\"bye\"", "\"by hand\"")).unwrap();
    let checked = json(&env, &["state", "check", "m1", "--format", "json"]);
    assert_eq!(checked[0]["drift"], "drifted", "{checked}");
    assert!(checked[0]["detail"].to_string().contains("differs from what merlya applied"), "{checked}");
    std::fs::write(&main, rendered).unwrap();

    // Rollback goes back to the answers before the update.
    let rolled = env.run(&["state", "rollback", "m1", "--yes"]);
    assert!(rolled.status.success(), "{}", support::text(&rolled.stderr));
    assert_eq!(json(&env, &["state", "show", "m1", "--format", "json"])["resource"]["outputs"]["message"], "hello");
    let kept = json(&env, &["state", "snapshot", "m1", "--format", "json"]);
    assert!(kept["snapshot"].as_i64().is_some_and(|id| id > 0), "{kept}");
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
    // Each change is a pipeline run of its own: the denied one stopped, the approved one with its
    // diff and its read back.
    let runs = json(&env, &["pipeline", "list", "--format", "json"]);
    let mcp: Vec<&Value> = runs.as_array().unwrap().iter().filter(|r| r["kind"] == "mcp").collect();
    assert_eq!(mcp.len(), 2, "{runs}");
    assert!(mcp.iter().any(|r| r["status"] == "succeeded") && mcp.iter().any(|r| r["status"] != "succeeded"), "{runs}");
    // Reconcile writes what is expected again, through the same path.
    let out = env.run(&["state", "reconcile", "f1", "--yes"]);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hello");
    assert_eq!(check(&env), "no_drift");
}

/// A user template under MERLYA_HOME/templates: one required string variable, a Terraform entry point.
fn user_template(env: &TestEnv, name: &str, (variable, about): (&str, &str), main_tf: &str) {
    let dir = env.merlya_home().join("templates").join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let spec = format!(
        "name: {name}\nversion: 1.0.0\ncategory: storage\ndescription: A test template.\nproviders: [local]\n\
         backends:\n  - backend: terraform\n    entry: main.tf.j2\n\
         variables:\n  - name: {variable}\n    type: string\n    required: true\n    description: {about}\n"
    );
    std::fs::write(dir.join("template.yaml"), spec).unwrap();
    std::fs::write(dir.join("main.tf.j2"), main_tf).unwrap();
}

/// Edits the marker's message in the state outside merlya, as another writer would (a new serial).
fn edit_state(dir: &std::path::Path, message: &str) {
    let path = dir.join("terraform.tfstate");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["serial"] = Value::from(state["serial"].as_i64().unwrap() + 1);
    state["resources"][0]["instances"][0]["attributes"]["input"]["value"]["message"] = Value::from(message);
    std::fs::write(&path, serde_json::to_string(&state).unwrap()).unwrap();
}

/// `state accept` records what is there as expected through the change path (a refresh-only plan,
/// approved, applied, audited): nothing without approval; with it the drift shown is accepted and
/// reported as such, until the state is written again.
#[test]
fn accept_records_what_is_there_through_approval_until_it_changes_again() {
    let env = TestEnv::new();
    env.ok(&["provision", "create", "data-marker", "--var", "message=hello", "--name", "m4", "--yes"]);
    let dir = env.merlya_home().join("resources/m4");
    edit_state(&dir, "edited by hand");
    assert_eq!(json(&env, &["state", "check", "m4", "--format", "json"])[0]["drift"], "drifted");
    let runs_before = json(&env, &["pipeline", "list", "--format", "json"]).as_array().unwrap().len();

    // No terminal and no --yes: it stops before the apply; nothing is accepted.
    let out = env.run(&["state", "accept", "m4"]);
    assert!(!out.status.success(), "{}", support::text(&out.stderr));
    let shown = json(&env, &["state", "show", "m4", "--format", "json"]);
    assert_eq!(shown["resource"]["drift"], "drifted", "{shown}");
    assert_eq!(shown["resource"]["accepted"], serde_json::json!([]), "{shown}");

    let out = env.run(&["state", "accept", "m4", "--yes"]);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let shown = json(&env, &["state", "show", "m4", "--format", "json"]);
    let r = &shown["resource"];
    assert_eq!((r["status"].as_str(), r["drift"].as_str()), (Some("active"), Some("no_drift")), "{shown}");
    assert!(r["drift_detail"].as_str().unwrap().contains("accepted as it is"), "{shown}");
    assert_eq!(r["expected"]["terraform_data.marker"]["input"]["value"]["message"], "edited by hand", "{shown}");
    assert_eq!(json(&env, &["state", "check", "m4", "--format", "json"])[0]["drift"], "no_drift");
    // The accept is a pipeline run of its own, its refresh-only apply audited.
    let runs = json(&env, &["pipeline", "list", "--format", "json"]);
    assert!(runs.as_array().unwrap().len() > runs_before, "{runs}");
    assert!(runs.to_string().contains("accept what is there"), "{runs}");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.matches("terraform apply").count() >= 2, "{audit}");

    // Written again outside merlya: the acceptance no longer covers it.
    edit_state(&dir, "edited again");
    assert_eq!(json(&env, &["state", "check", "m4", "--format", "json"])[0]["drift"], "drifted");
}

/// merlya killed (SIGKILL, its tools with it) while Terraform applies: the operation recorded
/// before it started stays, and the next check makes the resource `unknown`, never `active`.
#[test]
fn merlya_killed_mid_apply_leaves_the_resource_unknown() {
    use std::os::unix::process::CommandExt;
    let env = TestEnv::new();
    // A user template whose apply runs long enough to be killed in (a local-exec, named in the approval).
    user_template(
        &env,
        "slow-marker",
        ("started", "A file touched when the apply starts."),
        "resource \"terraform_data\" \"slow\" {\n  input = \"x\"\n  provisioner \"local-exec\" {\n    \
         command = \"touch {{ started }} && sleep 120\"\n  }\n}\n",
    );
    let started = env.home().join("apply-started");
    let var = format!("started={}", started.display());
    let mut child = env
        .merlya(&["provision", "create", "slow-marker", "--var", &var, "--name", "s1", "--yes"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !started.exists() {
        assert!(std::time::Instant::now() < deadline, "the apply never started");
        assert!(child.try_wait().unwrap().is_none(), "merlya ended before its apply started");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(state_of(&env, "s1").0, "creating", "the operation is recorded before it starts");
    // A check while it runs leaves it alone: a run in flight is not a crash.
    let busy = json(&env, &["state", "check", "s1", "--format", "json"]);
    assert_eq!(busy[0]["crashed"], false, "{busy}");
    assert!(busy[0]["detail"].to_string().contains("under way"), "{busy}");
    assert_eq!(state_of(&env, "s1").0, "creating");
    // A crash: merlya and the tool groups it started (Terraform runs in a group of its own), at once.
    let home = env.merlya_home().display().to_string();
    let groups = support::process_groups_mentioning(&home);
    // SAFETY: kill(2) on process groups this test started (merlya's, and the ones its tools run in).
    unsafe {
        libc::kill(-(child.id() as i32), libc::SIGKILL);
        for group in groups {
            libc::kill(-group, libc::SIGKILL);
        }
    }
    child.wait().unwrap();
    assert_eq!(state_of(&env, "s1").0, "creating");
    let checked = json(&env, &["state", "check", "s1", "--format", "json"]);
    assert_eq!(checked[0]["crashed"], true, "{checked}");
    assert_eq!(state_of(&env, "s1").0, "unknown");
}

/// Provider credentials come from `provision.credentials` (here merlya's environment and a file):
/// Terraform gets them for the apply and for every check's plans, and they reach nothing else —
/// not the database, the audit log, the pipeline record or the screen. A missing one names its
/// config field.
#[test]
fn provider_credentials_reach_terraform_and_nothing_else() {
    let env = TestEnv::new();
    let token = "tok-Cr3d-provision-77";
    user_template(
        &env,
        "cred-marker",
        ("message", "What it holds."),
        "variable \"token\" {\n  type      = string\n  sensitive = true\n}\n\
         resource \"terraform_data\" \"cred\" {\n  input = { message = \"{{ message }}\", token = var.token }\n}\n\
         output \"token_length\" {\n  value = nonsensitive(length(var.token))\n}\n",
    );
    let file = env.home().join("token-file");
    std::fs::write(&file, "from-a-file\n").unwrap();
    std::fs::write(
        env.merlya_home().join("config.yaml"),
        format!(
            "provision:\n  credentials:\n    local:\n      TF_VAR_token: \"env:CRED_TEST_TOKEN\"\n      FILE_CRED: \"file:{}\"\n",
            file.display()
        ),
    )
    .unwrap();
    // Unset: the error names the field, nothing is applied.
    let out = env.run(&["provision", "create", "cred-marker", "--var", "message=hi", "--name", "c0", "--yes"]);
    let stderr = support::text(&out.stderr);
    assert!(!out.status.success() && stderr.contains("provision.credentials.local.TF_VAR_token"), "{stderr}");

    let run = |args: &[&str]| env.merlya(args).env("CRED_TEST_TOKEN", token).output().unwrap();
    let out = run(&["provision", "create", "cred-marker", "--var", "message=hi", "--name", "c1", "--yes"]);
    let (stdout, stderr) = (support::text(&out.stdout), support::text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let shown = json(&env, &["state", "show", "c1", "--format", "json"]);
    assert_eq!(shown["resource"]["outputs"]["token_length"], token.len(), "Terraform got it: {shown}");
    // The check's plans get it too (without it a plan fails: no value for the variable).
    let checked = run(&["state", "check", "c1", "--format", "json"]);
    let checked_out = support::text(&checked.stdout);
    assert!(checked.status.success() && checked_out.contains("no_drift"), "{checked_out}");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    let runs = env.ok(&["pipeline", "list", "--format", "json"]);
    for (what, text) in [
        ("stdout", &stdout),
        ("stderr", &stderr),
        ("the check", &checked_out),
        ("the audit log", &audit),
        ("the pipeline record", &runs),
        ("the state shown", &shown.to_string()),
        ("the database", &env.database_text()),
    ] {
        assert!(!text.contains(token) && !text.contains("from-a-file"), "{what} holds a credential: {text}");
    }
}
