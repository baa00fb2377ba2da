//! Change pipelines end to end with real peers: Bash on real sshd hosts,
//! Terraform with the real binary and the built-in `terraform_data` resource.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Sshd, SshdOptions, TestEnv, TestKey, text};

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn stages(run: &Value) -> Vec<(String, String)> {
    run["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap().to_string(), s["status"].as_str().unwrap().to_string()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// Two hosts on two real sshd, trusted, with the same key.
fn two_hosts() -> (TestKey, Vec<Sshd>, TestEnv) {
    let key = TestKey::generate("");
    let env = TestEnv::new();
    env.install_default_key(&key);
    let daemons: Vec<Sshd> = (0..2).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    for (i, sshd) in daemons.iter().enumerate() {
        env.trust(sshd);
        env.add_host(&format!("web0{}", i + 1), sshd, &[]);
    }
    (key, daemons, env)
}

#[test]
fn a_bash_change_needs_an_approval_checks_and_rolls_back_on_every_host() {
    let (_key, daemons, env) = two_hosts();
    let dir = tempfile::tempdir().unwrap();
    support::give_to_test_user(dir.path());
    let marker = dir.path().join("made").display().to_string();
    let touch = format!("touch {marker}");

    // No terminal and no --yes: it stops after Summary, nothing runs, nothing connects.
    let out = env.run(&["pipeline", "run", "bash", "--targets", "web01,web02", "--format", "json", "--", &touch]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(
        stages(&stopped),
        pairs(&[("Plan", "done"), ("Diff", "skipped"), ("Summary", "done"), ("Approval", "skipped")])
    );
    assert!(!Path::new(&marker).exists());
    assert!(daemons.iter().all(|d| d.accepted_logins() == 0), "nothing connected before an approval");

    // --yes: applied on both hosts, checked, no rollback needed; every stage timed and stored.
    let check = format!("test -f {marker}");
    let rollback = format!("rm -f {marker}");
    let args = ["pipeline", "run", "bash", "--targets", "web01,web02", "--check", &check, "--rollback", &rollback];
    let out = env.run(&[&args[..], &["--yes", "--format", "json", "--", &touch]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let done = json(&out);
    assert_eq!(done["status"], "succeeded");
    assert!(Path::new(&marker).exists());
    assert_eq!(done["decision"], "approved by tester (--yes)");
    let apply = &done["stages"][4];
    assert_eq!(apply["detail"], "2/2 hosts succeeded");
    assert!(apply["output"].as_str().unwrap().contains("== web02 (exit 0) =="), "{apply}");
    assert!(daemons.iter().all(|d| d.accepted_logins() >= 1), "the change ran on every host");
    let audit: Vec<Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let applied: Vec<&Value> = audit.iter().filter(|e| e["command"] == touch.as_str()).collect();
    assert_eq!(applied.iter().filter(|e| e["outcome"] == "ok").count(), 2, "{audit:?}");
    let id = done["id"].as_str().unwrap();
    assert!(applied.iter().any(|e| e["approval_ref"] == format!("pipeline {id} (Apply)")), "{applied:?}");

    // On demand: `rollback ID` asks again and undoes the change on every host.
    let out = env.run(&["pipeline", "rollback", &id[..id.len() - 2], "--yes", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rolled = json(&out);
    assert_eq!(rolled["status"], "rolled_back");
    assert!(!Path::new(&marker).exists(), "the rollback ran");
    let tail: Vec<(String, String)> = stages(&rolled).split_off(7);
    assert_eq!(tail, pairs(&[("Approval", "done"), ("Rollback", "done")]));

    // A post-check that fails runs the rollback, approved with the change, on the hosts it failed on.
    let args = ["pipeline", "run", "bash", "--targets", "web01,web02", "--check", "test -f /nonexistent/never"];
    let out = env.run(&[&args[..], &["--rollback", &rollback, "--yes", "--format", "json", "--", &touch]].concat());
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let undone = json(&out);
    assert_eq!(undone["status"], "rolled_back");
    assert_eq!(stages(&undone)[5..], pairs(&[("Post-check", "failed"), ("Rollback", "done")]));
    assert!(!Path::new(&marker).exists());

    // A post-check that could change something is refused at Plan, and audited.
    let out =
        env.run(&["pipeline", "run", "bash", "--targets", "web01", "--check", "rm -f /tmp/x", "--yes", "--", &touch]);
    assert_ne!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains("is not read-only"), "{}", text(&out.stderr));
    assert!(!Path::new(&marker).exists());

    // The leak check covers every target host, not only the first.
    let out = env.run(&[
        "pipeline",
        "run",
        "bash",
        "--targets",
        "web01,web02",
        "--format",
        "json",
        "--",
        "echo pw | sudo -S true",
    ]);
    let leaked = json(&out);
    let summary = leaked["stages"][2]["output"].as_str().unwrap();
    assert!(summary.contains("sudo:web01:password") && summary.contains("sudo:web02:password"), "{summary}");

    // list and show read the same records.
    let list: Vec<Value> = serde_json::from_str(&env.ok(&["pipeline", "list", "--format", "json"])).unwrap();
    assert_eq!(list.len(), 5);
    assert_eq!(list[4]["status"], "stopped", "oldest last");
    let shown = env.ok(&["pipeline", "show", id]);
    assert!(shown.contains("decision:  approved by tester (--yes)") && shown.contains("✓ Apply"), "{shown}");
    let out = env.run(&["pipeline", "resume", id]);
    assert!(text(&out.stderr).contains("only an interrupted, stopped or cancelled change"), "{}", text(&out.stderr));
}

/// A Terraform folder and the environment its runs need here.
struct Tf {
    env: TestEnv,
    dir: PathBuf,
    rc: PathBuf,
}

impl Tf {
    fn new() -> Self {
        let env = TestEnv::new();
        let dir = env.dir.path().join("infra");
        std::fs::create_dir_all(&dir).unwrap();
        let rc = env.dir.path().join("terraformrc");
        std::fs::write(&rc, "").unwrap();
        Self { env, dir, rc }
    }

    fn write(&self, main_tf: &str) {
        std::fs::write(self.dir.join("main.tf"), main_tf).unwrap();
    }

    fn merlya(&self, args: &[&str]) -> Command {
        let mut cmd = self.env.merlya(args);
        cmd.env("TF_CLI_CONFIG_FILE", &self.rc);
        cmd
    }

    fn run(&self, extra: &[&str]) -> Output {
        let dir = self.dir.display().to_string();
        let args = [&["pipeline", "run", "terraform", dir.as_str(), "--format", "json"][..], extra].concat();
        self.merlya(&args).output().unwrap()
    }

    /// `terraform state list`, straight from the tool.
    fn state(&self) -> Vec<String> {
        let out = Command::new("terraform")
            .args(["state", "list"])
            .current_dir(&self.dir)
            .env("TF_CLI_CONFIG_FILE", &self.rc)
            .output()
            .unwrap();
        text(&out.stdout).lines().map(str::to_string).collect()
    }
}

const V1: &str = r#"
variable "greeting" {
  type    = string
  default = "hi"
}
variable "token" {
  type      = string
  default   = "tok-sensitive-4242"
  sensitive = true
}
resource "terraform_data" "a" {
  input = var.greeting
}
resource "terraform_data" "b" {
  input = var.token
}
"#;

#[test]
fn terraform_plans_asks_applies_the_saved_plan_checks_and_rolls_back() {
    let tf = Tf::new();
    tf.write(V1);

    // No terminal, no --yes: planned and summarised, then stopped; nothing applied.
    let out = tf.run(&[]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "stopped");
    assert_eq!(stopped["summary"], format!("terraform {}: 2 to add, 0 to change, 0 to destroy", tf.dir.display()));
    assert!(tf.state().is_empty(), "nothing applied");
    // The dry run ran in the run's copy of the folder: it leaves nothing behind in the folder.
    assert!(!tf.dir.join("terraform.tfstate").exists(), "the plan left a state file in the folder");

    // `pipeline plan`: the plan and its diff, then it stops where it was asked to (exit 0), even with
    // --yes: nothing applied.
    let dir = tf.dir.display().to_string();
    let planned = tf.merlya(&["pipeline", "plan", "terraform", &dir, "--yes", "--format", "json"]).output().unwrap();
    assert_eq!(planned.status.code(), Some(0), "{}", text(&planned.stderr));
    let plan = json(&planned);
    assert_eq!(plan["status"], "planned", "{plan}");
    assert_eq!(plan["decision"], "plan only", "{plan}");
    assert!(plan["diff"].as_str().unwrap_or_default().contains("terraform_data.a"), "{plan}");
    assert!(tf.state().is_empty(), "a plan applies nothing");
    // Nothing was asked, so nothing was denied: no refusal in the audit log, none in the report.
    let audit: Vec<Value> = serde_json::from_str(&tf.env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let denials_before = audit.iter().filter(|e| e["outcome"] == "denied").count();
    let planned_again = tf.merlya(&["pipeline", "plan", "terraform", &dir, "--format", "json"]).output().unwrap();
    assert_eq!(planned_again.status.code(), Some(0), "{}", text(&planned_again.stderr));
    let audit: Vec<Value> = serde_json::from_str(&tf.env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert_eq!(audit.iter().filter(|e| e["outcome"] == "denied").count(), denials_before, "a plan is not a denial");

    // Approved: applies, the post-check plan finds nothing left; the sensitive value is never shown or stored.
    let out = tf.run(&["--yes", "--var", "greeting=one"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first = json(&out);
    assert_eq!(first["status"], "succeeded", "{first}");
    assert_eq!(stages(&first)[5], ("Post-check".to_string(), "done".to_string()));
    assert_eq!(tf.state(), ["terraform_data.a", "terraform_data.b"]);
    let diff = first["diff"].as_str().unwrap();
    assert!(diff.contains("+++ b/terraform_data.a") && diff.contains("\"input\": \"one\""), "{diff}");
    assert!(diff.contains("(sensitive value)"), "{diff}");
    let everything = format!("{}{}", tf.env.database_text(), text(&out.stderr));
    assert!(!everything.contains("tok-sensitive-4242"), "a sensitive value reached the database or the screen");
    let audit: Vec<Value> = serde_json::from_str(&tf.env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let applied = audit.iter().find(|e| e["outcome"] == "ok").unwrap();
    assert!(applied["command"].as_str().unwrap().starts_with("terraform apply -input=false"), "{applied}");
    assert_eq!(applied["approved_by"], "tester (--yes)");

    // A change whose post-check fails (a resource that is replaced on every plan): rolled back to the
    // configuration of the last good change, through a plan of its own.
    tf.write(&format!("{V1}\nresource \"terraform_data\" \"c\" {{\n  triggers_replace = timestamp()\n}}\n"));
    let out = tf.run(&["--yes", "--var", "greeting=one"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let second = json(&out);
    assert_eq!(second["status"], "rolled_back", "{second}");
    let rollback = second["stages"].as_array().unwrap().last().unwrap();
    assert_eq!(rollback["detail"], "rolled back: 0 to add, 0 to change, 1 to destroy", "{rollback}");
    assert_eq!(tf.state(), ["terraform_data.a", "terraform_data.b"], "c was destroyed by the rollback");

    // A failed apply (a provisioner that fails) is rolled back too.
    tf.write(&format!(
        "{V1}\nresource \"terraform_data\" \"d\" {{\n  provisioner \"local-exec\" {{\n    command = \"exit 3\"\n  }}\n}}\n"
    ));
    let out = tf.run(&["--yes", "--var", "greeting=one"]);
    let third = json(&out);
    assert_eq!(third["status"], "rolled_back", "{third}");
    // What runs on this machine is named in the approval (issue 24 §4).
    let summary = third["stages"][2]["output"].as_str().unwrap_or_default();
    assert!(summary.contains("a local-exec provisioner runs `exit 3` on this machine"), "{summary}");
    assert_eq!(stages(&third)[4], ("Apply".to_string(), "failed".to_string()));
    assert_eq!(tf.state(), ["terraform_data.a", "terraform_data.b"]);

    // On demand: the first change rolls back to nothing (its state was empty before it).
    tf.write(V1);
    let id = first["id"].as_str().unwrap();
    let out = tf.merlya(&["pipeline", "rollback", id, "--yes", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(json(&out)["status"], "rolled_back");
    assert!(tf.state().is_empty(), "{:?}", tf.state());

    // Every apply's audit entry is finished (the finish is written beside the stage that follows),
    // with the apply's outcome, and the chain verifies.
    let audit: Vec<Value> = serde_json::from_str(&tf.env.ok(&["audit", "list", "--format", "json"])).unwrap();
    assert!(audit.len() >= 5, "{audit:?}");
    assert!(audit.iter().all(|e| e["outcome"] != "unfinished"), "{audit:?}");
    assert_eq!(audit.iter().filter(|e| e["outcome"] == "failed").count(), 1, "the apply that failed: {audit:?}");
    tf.env.ok(&["audit", "verify"]);
}

#[test]
fn a_kill_9_during_terraform_apply_is_found_interrupted_and_resumed_only_with_a_new_approval() {
    let tf = Tf::new();
    let slow = tf.dir.join("slow");
    std::fs::write(&slow, "").unwrap();
    // A variable whose value is a secret: the resumed run needs it, the database never holds it.
    tf.write(
        "variable \"token\" {\n  type = string\n  sensitive = true\n}\nresource \"terraform_data\" \"slow\" {\n  input = var.token\n  provisioner \"local-exec\" {\n    command = \"if [ -f slow ]; then sleep 60; fi\"\n  }\n}\n",
    );
    let dir = tf.dir.display().to_string();
    let secret = "token=tf-var-s3cr3t-77";
    let mut child = tf.merlya(&["pipeline", "run", "terraform", &dir, "--var", secret, "--yes"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let list: Vec<Value> =
            serde_json::from_slice(&tf.merlya(&["pipeline", "list", "--format", "json"]).output().unwrap().stdout)
                .unwrap_or_default();
        if let Some(run) = list.first().filter(|r| r["status"] == "applying") {
            break run["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "the change never reached Apply: {list:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The machine "crashes": merlya and the terraform it started die at once.
    child.kill().unwrap();
    child.wait().unwrap();
    let home = tf.env.merlya_home().display().to_string();
    Command::new("pkill").args(["-9", "-f", &home]).status().unwrap();

    let list: Vec<Value> =
        serde_json::from_slice(&tf.merlya(&["pipeline", "list", "--format", "json"]).output().unwrap().stdout).unwrap();
    assert_eq!(list[0]["status"], "interrupted", "{list:?}");
    assert_eq!(stages(&list[0])[4], ("Apply".to_string(), "interrupted".to_string()));
    let shown = text(&tf.merlya(&["pipeline", "show", &id]).output().unwrap().stdout);
    assert!(shown.contains("merlya stopped while this change was in flight"), "{shown}");

    // Resuming plans again and asks again: without an approval nothing is applied.
    std::fs::remove_file(&slow).unwrap();
    let out = tf.merlya(&["pipeline", "resume", &id, "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "stopped");
    let second = stopped["id"].as_str().unwrap().to_string();
    // Resumed once: the original names the run that resumed it, and a second resume says so.
    let list: Vec<Value> =
        serde_json::from_slice(&tf.merlya(&["pipeline", "list", "--format", "json"]).output().unwrap().stdout).unwrap();
    let original = list.iter().find(|r| r["id"] == id.as_str()).unwrap();
    assert_eq!(
        (original["status"].as_str(), original["resumed_by"].as_str()),
        (Some("resumed"), Some(second.as_str()))
    );
    let out = tf.merlya(&["pipeline", "resume", &id, "--yes"]).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains(&format!("change {id} was already resumed by change {second}")),
        "{}",
        text(&out.stderr)
    );
    // The stopped resume is itself resumed, with an approval this time.
    let out = tf.merlya(&["pipeline", "resume", &second, "--yes", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let resumed = json(&out);
    assert_eq!(
        (resumed["status"].as_str(), resumed["resumed_from"].as_str()),
        (Some("succeeded"), Some(second.as_str()))
    );
    assert!(resumed["summary"].as_str().unwrap().contains(&format!("resumes interrupted run {second}")), "{resumed}");
    assert_eq!(tf.state(), ["terraform_data.slow"]);
    assert_eq!(resumed["spec"]["vars"], serde_json::json!(["token"]), "only the name is stored");
    assert!(!tf.env.database_text().contains("tf-var-s3cr3t-77"), "a --var value reached the database");
}

#[test]
fn terraform_errors_name_what_is_wrong_and_change_nothing() {
    let tf = Tf::new();
    // No configuration in the folder.
    let out = tf.run(&["--yes"]);
    let run = json(&out);
    assert_eq!(run["status"], "failed");
    assert!(run["stages"][0]["detail"].as_str().unwrap().contains("holds no Terraform configuration"), "{run}");
    // A syntax error: the plan fails with terraform's own words.
    tf.write("resource \"terraform_data\" \"a\" {\n  input = \n}\n");
    let run = json(&tf.run(&["--yes"]));
    assert_eq!(run["status"], "failed");
    let detail = run["stages"][0]["detail"].as_str().unwrap();
    assert!(detail.starts_with("terraform init failed (exit code 1)"), "{detail}");
    assert!(run["stages"][0]["output"].as_str().unwrap().contains("main.tf line 2"), "{run}");
    // terraform not on PATH.
    tf.write(V1);
    let dir = tf.dir.display().to_string();
    let out = tf
        .merlya(&["pipeline", "run", "terraform", &dir, "--yes", "--format", "json"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let run = json(&out);
    assert!(run["stages"][0]["detail"].as_str().unwrap().starts_with("terraform was not found"), "{run}");
    // A folder that does not exist.
    let out = tf.merlya(&["pipeline", "run", "terraform", "/nonexistent/infra", "--format", "json"]).output().unwrap();
    assert!(json(&out)["stages"][0]["detail"].as_str().unwrap().contains("is not a folder"));
    assert!(tf.state().is_empty());
    // A database merlya cannot open: `init`, started before the store opens, is stopped and waited
    // for; the error names the file, which is left as it was, and nothing is planned or applied.
    let db = tf.env.merlya_home().join("merlya.db");
    std::fs::write(&db, "not a database, and it must stay exactly so").unwrap();
    let out = tf.run(&["--yes", "--var", "greeting=one"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&db.display().to_string()), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "no record: {}", text(&out.stdout));
    assert_eq!(std::fs::read_to_string(&db).unwrap(), "not a database, and it must stay exactly so");
    assert!(tf.state().is_empty());
    // An SSH configuration that cannot be read fails the command after the store opened, before the
    // plan: the early `init` is stopped and waited for too, and no change is recorded.
    std::fs::remove_file(&db).unwrap();
    let ssh = tf.env.home().join(".ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("config"), "Host bad\n  Port not-a-port\n").unwrap();
    let out = tf.run(&["--yes", "--var", "greeting=one"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("not-a-port") || text(&out.stderr).contains("line 2"), "{}", text(&out.stderr));
    let listed = tf.env.ok(&["pipeline", "list", "--format", "json"]);
    assert_eq!(serde_json::from_str::<Value>(&listed).unwrap(), serde_json::json!([]), "no change was recorded");
    assert!(tf.state().is_empty());
}

/// Processes whose command line contains `needle` (from /proc).
fn processes_with(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(needle) {
                found.push(format!("{}: {cmdline}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// A plan that fails after the CLI started `init` early (here the run's own folder cannot be made)
/// leaves nothing of that `init` running: its whole process group is stopped, the `git` it started
/// to fetch a module from a server that never answers included, before merlya exits.
#[test]
fn an_init_started_early_is_stopped_with_its_children_when_the_plan_fails_before_taking_it() {
    let tf = Tf::new();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    silent.set_nonblocking(true).unwrap();
    let url = format!("127.0.0.1:{}", silent.local_addr().unwrap().port());
    tf.write(&format!("module \"slow\" {{\n  source = \"git::http://{url}/modules.git\"\n}}\n"));
    let home = tf.env.merlya_home();
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("pipelines"), "a file where the runs' folders go").unwrap();
    // The store's lock held here: merlya waits for it while its early `init` gets to the module.
    let lock = std::fs::File::create(home.join("merlya.db.lock")).unwrap();
    lock.lock().unwrap();
    let dir = tf.dir.display().to_string();
    let mut child = tf
        .merlya(&["pipeline", "run", "terraform", &dir, "--yes", "--timeout", "600", "--format", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let _fetching = loop {
        if let Ok((conn, _)) = silent.accept() {
            break conn;
        }
        assert!(Instant::now() < deadline, "terraform init never asked the module's server");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!processes_with(&url).is_empty(), "git fetches the module");
    drop(lock);
    // Left alone, the fetch would run into the 600 s stage timeout: ending at all says it was stopped.
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("merlya did not end; still running: {:?}", processes_with(&url));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let run = json(&out);
    assert_eq!(run["status"], "failed", "{run}");
    assert!(run["stages"][0]["detail"].as_str().unwrap().starts_with("cannot make"), "{run}");
    assert_eq!(processes_with(&url), Vec::<String>::new(), "nothing of the init is left");
}

/// A kubeconfig whose only cluster listens nowhere (no API server can be had on these machines).
fn unreachable_cluster(env: &TestEnv) -> PathBuf {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let path = env.dir.path().join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- cluster: {{server: \"https://127.0.0.1:{closed}\"}}\n  name: c\ncontexts:\n- context: {{cluster: c, user: u}}\n  name: staging\ncurrent-context: staging\nusers:\n- name: u\n  user: {{token: t}}\n"
        ),
    )
    .unwrap();
    path
}

const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: web, image: nginx}]}\n";

#[test]
fn kubernetes_manifests_and_kustomize_are_checked_and_an_unreachable_cluster_changes_nothing() {
    let env = TestEnv::new();
    let kubeconfig = unreachable_cluster(&env);
    let k = |args: &[&str]| env.merlya(args).env("KUBECONFIG", &kubeconfig).output().unwrap();
    let manifests = env.dir.path().join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(manifests.join("10-deploy.yaml"), DEPLOYMENT).unwrap();
    std::fs::write(manifests.join("20-svc.yml"), "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports: [{port: 80}]\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n").unwrap();
    let dir = manifests.display().to_string();

    // A folder of manifests: every object read; the dry run cannot reach the cluster, so the run fails
    // at Diff with kubectl's words and nothing is asked or applied.
    let run = json(&k(&["pipeline", "run", "kubernetes", &dir, "--yes", "--format", "json"]));
    assert_eq!(run["status"], "failed", "{run}");
    let plan = run["stages"][0]["detail"].as_str().unwrap();
    assert!(plan.ends_with("3 object(s): Deployment/web, Service/web, ConfigMap/cfg"), "{plan}");
    let diff = run["stages"][1]["detail"].as_str().unwrap();
    assert!(diff.starts_with("kubectl diff failed (exit code 2)") && diff.contains("connection refused"), "{diff}");
    assert_eq!(run["stages"].as_array().unwrap().len(), 2, "nothing after the failed dry run: {run}");
    // The context pinned at plan is kept with the run: a resume or rollback goes to the same cluster.
    assert_eq!(run["spec"]["context"], "staging", "{run}");
    let stored = json(&k(&["pipeline", "show", run["id"].as_str().unwrap(), "--format", "json"]));
    assert_eq!(stored["spec"]["context"], "staging", "{stored}");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert_eq!(audit.trim(), "[]", "nothing ran that changes anything");

    // A kustomize folder is rendered by kubectl kustomize.
    let kz = env.dir.path().join("kz");
    std::fs::create_dir_all(&kz).unwrap();
    std::fs::write(kz.join("kustomization.yaml"), "namePrefix: prod-\nresources:\n  - deploy.yaml\n").unwrap();
    std::fs::write(kz.join("deploy.yaml"), DEPLOYMENT).unwrap();
    let kz_dir = kz.display().to_string();
    let run = json(&k(&["pipeline", "run", "kubernetes", &kz_dir, "--namespace", "shop", "--format", "json"]));
    let plan = run["stages"][0]["detail"].as_str().unwrap();
    assert!(plan.starts_with("kustomize ") && plan.ends_with("1 object(s): Deployment/prod-web"), "{plan}");

    // A broken kustomization, a manifest without a name, an unknown context, no kubectl: each named.
    std::fs::write(kz.join("kustomization.yaml"), "resources:\n  - missing.yaml\n").unwrap();
    let run = json(&k(&["pipeline", "run", "kubernetes", &kz_dir, "--format", "json"]));
    assert!(run["stages"][0]["detail"].as_str().unwrap().starts_with("kubectl kustomize"), "{run}");
    std::fs::write(manifests.join("30-bad.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {}\n").unwrap();
    let run = json(&k(&["pipeline", "run", "kubernetes", &dir, "--format", "json"]));
    let detail = run["stages"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("30-bad.yaml, document 1: `metadata.name` is missing"), "{detail}");
    let file = manifests.join("10-deploy.yaml").display().to_string();
    let run = json(&k(&["pipeline", "run", "kubernetes", &file, "--context", "prod", "--format", "json"]));
    let detail = run["stages"][0]["detail"].as_str().unwrap();
    assert_eq!(detail, "no context `prod` in the kubeconfig (known: staging)");
    let out = env
        .merlya(&["pipeline", "run", "kubernetes", &file, "--format", "json"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert!(json(&out)["stages"][0]["detail"].as_str().unwrap().starts_with("kubectl was not found"));

    // A Secret's data never reaches the record, and the current context is pinned at plan time (a
    // context switched after the approval cannot move the change to another cluster).
    let secret = env.dir.path().join("secret.yaml");
    std::fs::write(
        &secret,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: k8s-s3cret-val\n",
    )
    .unwrap();
    let run = json(&k(&["pipeline", "run", "kubernetes", &secret.display().to_string(), "--yes", "--format", "json"]));
    assert!(run["stages"][0]["detail"].as_str().unwrap().ends_with(": 1 object(s): Secret/db"), "{run}");
    assert!(!run.to_string().contains("k8s-s3cret-val"), "{run}");
    assert!(!env.database_text().contains("k8s-s3cret-val"));
    assert!(run["stages"][0]["detail"].as_str().unwrap().contains("(context staging)"), "{run}");
}

#[test]
fn host_capabilities_are_probed_once_cached_and_forgotten_when_the_host_changes() {
    let (_key, sshd, env) = support::one_trusted_host("web01", &[]);
    let probes = || {
        let audit: Vec<Value> = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
        audit.iter().filter(|e| e["command"].as_str().unwrap_or("").contains("merlya-context")).count()
    };
    let shown: Value = serde_json::from_str(&env.ok(&["hosts", "show", "web01", "--format", "json"])).unwrap();
    let tools: Vec<&str> =
        shown["capabilities"]["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap()).collect();
    assert!(tools.contains(&"python3"), "the host's python was found over SSH: {shown}");
    assert_eq!(probes(), 1, "the probe is audited like any command");
    let text = env.ok(&["hosts", "show", "web01"]);
    assert!(text.contains("pipeline_tools: ") && text.contains("python3"), "{text}");
    assert_eq!(probes(), 1, "the second look uses the cache");
    // Replacing the host's record forgets what was found.
    env.ok(&["hosts", "rm", "web01"]);
    env.add_host("web01", &sshd, &[]);
    env.ok(&["hosts", "show", "web01"]);
    assert_eq!(probes(), 2);
    env.ok(&["hosts", "show", "web01", "--refresh"]);
    assert_eq!(probes(), 3);
}

#[test]
fn a_person_at_a_terminal_reads_the_plan_and_denies_it() {
    let tf = Tf::new();
    tf.write(V1);
    let dir = tf.dir.display().to_string();
    let rc = tf.rc.display().to_string();
    let screen = tf.env.on_a_pty(&["pipeline", "run", "terraform", &dir], "d\n", &[("TF_CLI_CONFIG_FILE", &rc)]);
    let screen = text(&screen);
    // The summary first, then the whole per-resource diff, then the question.
    let summary = screen.find("APPROVAL NEEDED: terraform").expect("the approval was shown");
    let diff = screen.find("+++ b/terraform_data.a").expect("the diff was shown");
    let question = screen.find("[o]nce").expect("the question was asked");
    assert!(summary < diff && diff < question, "{screen}");
    assert!(!screen.contains("tok-sensitive-4242"), "{screen}");
    let list: Vec<Value> = serde_json::from_str(&tf.env.ok(&["pipeline", "list", "--format", "json"])).unwrap();
    assert_eq!(list[0]["status"], "denied");
    assert_eq!(list[0]["decision"], "denied by tester (prompt)");
    assert!(tf.state().is_empty(), "a denied plan changes nothing");
}

/// A script that a `local-exec` provisioner runs is swapped while the person reads the approval: the
/// apply runs the script as it was planned, from the run's private copy of the folder (the plan file
/// holds the configuration, not the script), and the folder's own state is what the apply updates.
#[test]
fn a_script_swapped_while_the_approval_waits_is_not_applied() {
    let tf = Tf::new();
    let marker = tf.env.dir.path().join("swapped-script-ran");
    let planned = tf.env.dir.path().join("planned-script-ran");
    std::fs::write(tf.dir.join("step.sh"), format!("touch '{}'\n", planned.display())).unwrap();
    tf.write(
        "resource \"terraform_data\" \"s\" {\n  provisioner \"local-exec\" {\n    command = \"sh ./step.sh\"\n  }\n}\n",
    );
    let dir = tf.dir.display().to_string();
    let rc = tf.rc.display().to_string();
    // While the approval is on screen the script is swapped; then the person approves.
    let swap = || std::fs::write(tf.dir.join("step.sh"), format!("touch '{}'\n", marker.display())).unwrap();
    let rest =
        tf.env.answering_on_a_pty(&["pipeline", "run", "terraform", &dir], &[("TF_CLI_CONFIG_FILE", &rc)], swap, "o\n");
    assert!(!marker.exists(), "the swapped script ran: {}", text(&rest));
    assert!(planned.exists(), "the planned script did not run: {}", text(&rest));
    let list: Vec<Value> = serde_json::from_str(&tf.env.ok(&["pipeline", "list", "--format", "json"])).unwrap();
    let apply = list[0]["stages"].as_array().unwrap().iter().find(|s| s["name"] == "Apply").unwrap().clone();
    assert_eq!(apply["status"], "done", "{apply}");
    assert_eq!(tf.state(), vec!["terraform_data.s".to_string()], "the folder's own state was updated");
    assert!(!tf.dir.join("terraform.tfstate").is_symlink(), "the folder's state is a file of its own");
}
