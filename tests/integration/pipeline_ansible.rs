//! The Ansible pipeline with real ansible-core against real sshd: a host whose
//! become needs a password from the keyring, a host behind a jump host, the
//! dry-run diff per host, deny, approve, post-check, and the rollback playbook.

use crate::support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{Sshd, SshdOptions, TEST_PASSWORD, TestEnv, TestKey, text};

struct Fleet {
    env: TestEnv,
    _daemons: Vec<Sshd>,
    bastion_logins: Box<dyn Fn() -> usize>,
    bin: std::path::PathBuf,
}

/// web01 plain, web02 with sudo that needs a password, web03 reached only through `bastion`.
fn fleet() -> Fleet {
    let bin = support::ansible_bin();
    let key = TestKey::generate("");
    let env = TestEnv::new();
    env.install_default_key(&key);
    let daemons: Vec<Sshd> = (0..4).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    for sshd in &daemons {
        env.trust(sshd);
    }
    env.add_host("web01", &daemons[0], &[]);
    env.add_host("web02", &daemons[1], &["--elevation", "sudo_password"]);
    env.add_host("bastion", &daemons[2], &[]);
    env.add_host("web03", &daemons[3], &["--jump", "bastion"]);
    let log = daemons[2].log.clone();
    let bastion_logins =
        Box::new(move || std::fs::read_to_string(&log).unwrap_or_default().matches("Accepted publickey").count());
    Fleet { env, _daemons: daemons, bastion_logins, bin }
}

impl Fleet {
    /// `merlya ARGS` in a keyring session where web02's sudo password is stored, ansible on PATH.
    fn merlya(&self, args: &[&str]) -> Output {
        let m = env!("CARGO_BIN_EXE_merlya");
        let quoted: Vec<String> = args.iter().map(|a| format!("'{}'", a.replace('\'', "'\\''"))).collect();
        let script = format!(
            "printf '%s\\n' '{TEST_PASSWORD}' | '{m}' secret set sudo:web02:password >/dev/null && '{m}' {}",
            quoted.join(" ")
        );
        self.env
            .keyring_session(&script)
            .env("PATH", support::path_with(&self.bin))
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    }
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

fn write(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

#[test]
fn ansible_dry_run_per_host_then_deny_approve_check_and_roll_back() {
    let fleet = fleet();
    let dir = tempfile::tempdir().unwrap();
    support::give_to_test_user(dir.path());
    let d = dir.path().display().to_string();
    let root_file = format!("/root/merlya-ansible-{}", std::process::id());
    let play = write(
        dir.path(),
        "site.yml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: write the motd\n      copy:\n        dest: \"{{{{ dir }}}}/{{{{ inventory_hostname }}}}.txt\"\n        content: \"managed by merlya\\n\"\n    - name: a file only root may write\n      become: true\n      copy:\n        dest: {root_file}\n        content: \"x\\n\"\n      when: inventory_hostname == 'web02'\n    - name: a secret file\n      no_log: true\n      copy:\n        dest: \"{{{{ dir }}}}/{{{{ inventory_hostname }}}}.secret\"\n        content: \"nolog-s3cret-value\\n\"\n"
        ),
    );
    let targets = "web01,web02,web03";

    // No terminal, no --yes: the dry run shows each host's diff, then it stops; nothing changed.
    let out = fleet.merlya(&[
        "pipeline",
        "run",
        "ansible",
        &play,
        "--targets",
        targets,
        "-e",
        &format!("dir={d}"),
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stopped = json(&out);
    assert_eq!(stopped["status"], "stopped", "{stopped}");
    let diff = stopped["diff"].as_str().unwrap();
    for host in ["web01", "web02", "web03"] {
        assert!(diff.contains(&format!("+++ b/{host}:{d}/{host}.txt")), "{host} in:\n{diff}");
    }
    assert!(diff.contains("+managed by merlya"), "{diff}");
    assert!(!diff.contains("nolog-s3cret-value"), "a no_log task's diff is never shown: {diff}");
    assert!(diff.contains(&format!("+++ b/web02:{root_file}")), "{diff}");
    assert!(!dir.path().join("web01.txt").exists() && !Path::new(&root_file).exists(), "check mode changed nothing");
    assert!((fleet.bastion_logins)() >= 1, "web03 was reached through the bastion");

    // Approved: every host changed, web02 became root with the password from the keyring, the
    // post-check finds nothing left to change.
    let out = fleet.merlya(&[
        "pipeline",
        "run",
        "ansible",
        &play,
        "--targets",
        targets,
        "-e",
        &format!("dir={d}"),
        "--yes",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}\n{}", text(&out.stdout), text(&out.stderr));
    let done = json(&out);
    assert_eq!(done["status"], "succeeded", "{done}");
    assert_eq!(done["spec"]["extra_vars"], serde_json::json!(["dir"]), "values stay in the run's private folder");
    for host in ["web01", "web02", "web03"] {
        assert_eq!(std::fs::read_to_string(dir.path().join(format!("{host}.txt"))).unwrap(), "managed by merlya\n");
    }
    assert!(Path::new(&root_file).exists(), "become with the stored password worked");
    let _ = std::fs::remove_file(&root_file);
    let stages: Vec<&str> = done["stages"].as_array().unwrap().iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(stages, ["done", "done", "done", "done", "done", "done", "skipped"], "{done}");
    // The become password is never on a command line, in the database, the record or the output.
    for (what, haystack) in
        [("database", fleet.env.database_text()), ("output", text(&out.stdout) + &text(&out.stderr))]
    {
        assert!(!haystack.contains(TEST_PASSWORD), "the become password reached the {what}");
        assert!(!haystack.contains("nolog-s3cret-value"), "a no_log task's content reached the {what}");
    }
    let leftovers = support::walk(&fleet.env.merlya_home());
    assert!(
        !leftovers.iter().any(|p| p.to_string_lossy().contains("host_vars")),
        "password files removed: {leftovers:?}"
    );
    let audit: Vec<Value> =
        serde_json::from_str(&text(&fleet.merlya(&["audit", "list", "--format", "json"]).stdout)).unwrap();
    let applied: Vec<&Value> = audit.iter().filter(|e| e["outcome"] == "ok").collect();
    let hosts: Vec<&str> = applied.iter().map(|e| e["host"].as_str().unwrap()).collect();
    assert_eq!(hosts, ["web01", "web02", "web03"], "one audit entry per host");
    assert!(applied.iter().all(|e| e["approved_by"] == "tester (--yes)"));

    // A change the post-check finds still changing is rolled back with the playbook given with it.
    let flaky = write(
        dir.path(),
        "flaky.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: a file that changes every run\n      copy:\n        dest: \"{{ dir }}/{{ inventory_hostname }}.stamp\"\n        content: \"{{ lookup('pipe', 'date +%s%N') }}\"\n",
    );
    let undo = write(
        dir.path(),
        "undo.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: remove it\n      file:\n        path: \"{{ dir }}/{{ inventory_hostname }}.stamp\"\n        state: absent\n",
    );
    let out = fleet.merlya(&[
        "pipeline",
        "run",
        "ansible",
        &flaky,
        "--targets",
        "web01,web02",
        "--rollback",
        &undo,
        "-e",
        &format!("dir={d}"),
        "--yes",
        "--format",
        "json",
    ]);
    let rolled = json(&out);
    assert_eq!(rolled["status"], "rolled_back", "{rolled}");
    let post = &rolled["stages"][5];
    assert!(post["detail"].as_str().unwrap().starts_with("the playbook would still change something"), "{post}");
    assert!(!dir.path().join("web01.stamp").exists() && !dir.path().join("web02.stamp").exists());

    // On demand: the rollback's approval names the inventory file that will run (prepared before the
    // question), a denial changes nothing, --yes runs the rollback playbook.
    let stable = write(
        dir.path(),
        "stable.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: a kept file\n      copy:\n        dest: \"{{ dir }}/{{ inventory_hostname }}.kept\"\n        content: \"kept\\n\"\n",
    );
    let unkeep = write(
        dir.path(),
        "unkeep.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: remove it\n      file:\n        path: \"{{ dir }}/{{ inventory_hostname }}.kept\"\n        state: absent\n",
    );
    let dir_var = format!("dir={d}");
    let args: [&str; 13] = [
        "pipeline",
        "run",
        "ansible",
        &stable,
        "--targets",
        "web01",
        "--rollback",
        &unkeep,
        "-e",
        &dir_var,
        "--yes",
        "--format",
        "json",
    ];
    let kept = json(&fleet.merlya(&args));
    assert_eq!(kept["status"], "succeeded", "{kept}");
    assert!(dir.path().join("web01.kept").exists());
    let id = kept["id"].as_str().unwrap();
    let path = support::path_with(&fleet.bin);
    let screen = text(&fleet.env.on_a_pty(&["pipeline", "rollback", id], "d\n", &[("PATH", &path)]));
    assert!(screen.contains("APPROVAL NEEDED: roll back change"), "{screen}");
    let inventory = fleet.env.merlya_home().join("pipelines").join(id).join("inventory.yml");
    assert!(screen.contains(&format!("-i {}", inventory.display())), "{screen}");
    assert!(dir.path().join("web01.kept").exists(), "denied: nothing was rolled back");
    let undone = json(&fleet.merlya(&["pipeline", "rollback", id, "--yes", "--format", "json"]));
    assert_eq!(undone["status"], "rolled_back", "{undone}");
    assert!(!dir.path().join("web01.kept").exists(), "the rollback playbook ran");
}

#[test]
fn ansible_names_unreachable_hosts_missing_passwords_and_bad_playbooks() {
    let fleet = fleet();
    let dir = tempfile::tempdir().unwrap();
    support::give_to_test_user(dir.path());
    let play = write(
        dir.path(),
        "ping.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: touch\n      file:\n        path: /tmp/merlya-never\n        state: touch\n",
    );
    // A person at a terminal sees the per-host diff and denies: nothing changes.
    let path = support::path_with(&fleet.bin);
    let screen = text(&fleet.env.on_a_pty(
        &["pipeline", "run", "ansible", &play, "--targets", "web01"],
        "d\n",
        &[("PATH", &path)],
    ));
    assert!(screen.contains("APPROVAL NEEDED: ansible") && screen.contains("web01: touch"), "{screen}");
    let list: Vec<Value> = serde_json::from_str(&fleet.env.ok(&["pipeline", "list", "--format", "json"])).unwrap();
    assert_eq!(list[0]["status"], "denied", "{list:?}");
    assert!(!Path::new("/tmp/merlya-never").exists());
    // A host nobody listens for: the dry run reports it unreachable (exit 4), nothing is asked.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    fleet.env.ok(&[
        "hosts",
        "add",
        "web09",
        "--hostname",
        "127.0.0.1",
        "--port",
        &closed.to_string(),
        "--user",
        "merlyatest",
    ]);
    let run = json(&fleet.merlya(&[
        "pipeline",
        "run",
        "ansible",
        &play,
        "--targets",
        "web01,web09",
        "--yes",
        "--format",
        "json",
    ]));
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(run["stages"][1]["status"], "failed");
    assert!(run["stages"][1]["detail"].as_str().unwrap().contains("web09: unreachable"), "{run}");
    // web02's sudo password is not stored (no keyring session): named, with the fix, before anything runs.
    let out = fleet
        .env
        .merlya(&["pipeline", "run", "ansible", &play, "--targets", "web02", "--yes", "--format", "json"])
        .env("PATH", support::path_with(&fleet.bin))
        .output()
        .unwrap();
    let run = json(&out);
    let detail = run["stages"][0]["detail"].as_str().unwrap();
    assert!(detail.contains("merlya secret set sudo:web02:password"), "{detail}");
    // A playbook with a YAML error: the dry run fails with Ansible's words (file and line), nothing is asked.
    let broken = write(dir.path(), "broken.yml", "- hosts: all\n  tasks:\n    - name: x\n      copy: [\n");
    let run = json(&fleet.merlya(&[
        "pipeline",
        "run",
        "ansible",
        &broken,
        "--targets",
        "web01",
        "--yes",
        "--format",
        "json",
    ]));
    assert_eq!(run["status"], "failed");
    let diff = &run["stages"][1];
    assert!(diff["detail"].as_str().unwrap().starts_with("ansible-playbook --check failed"), "{run}");
    assert!(diff["output"].as_str().unwrap().contains("broken.yml"), "the error names the file: {run}");
    assert_eq!(run["stages"].as_array().unwrap().len(), 2, "nothing after the failed dry run: {run}");
    assert!(!Path::new("/tmp/merlya-never").exists());

    // A model (or a hurried person) cannot move the play: Ansible's own variables and templated values
    // are refused before anything runs.
    let ran = |extra: &str| {
        json(&fleet.merlya(&[
            "pipeline",
            "run",
            "ansible",
            &play,
            "--targets",
            "web01",
            "-e",
            extra,
            "--yes",
            "--format",
            "json",
        ]))
    };
    for extra in ["ansible_connection=local", "ansible_ssh_common_args=-o ProxyCommand=sh", "hostvars=x"] {
        let run = ran(extra);
        assert_eq!(run["status"], "failed", "{extra}: {run}");
        assert!(run["stages"][0]["detail"].as_str().unwrap().contains("is not allowed"), "{run}");
    }
    let run = ran("path={{ lookup('pipe', 'touch /tmp/merlya-never') }}");
    assert!(run["stages"][0]["detail"].as_str().unwrap().contains("may not hold a template"), "{run}");
    // A play aimed elsewhere (`hosts: localhost`) reaches only the approved hosts (--limit): nothing here.
    let marker = dir.path().join("local-marker");
    let local = write(
        dir.path(),
        "local.yml",
        &format!(
            "- hosts: localhost\n  gather_facts: false\n  tasks:\n    - file:\n        path: {}\n        state: touch\n",
            marker.display()
        ),
    );
    let _ = fleet.merlya(&["pipeline", "run", "ansible", &local, "--targets", "web01", "--yes", "--format", "json"]);
    assert!(!marker.exists(), "a play for localhost ran on the operator's machine");
    assert!(!Path::new("/tmp/merlya-never").exists());
}

#[test]
fn a_dry_run_that_runs_code_is_asked_first_and_a_playbook_beside_the_home_applies() {
    let fleet = fleet();
    // The playbook sits in the folder that holds MERLYA_HOME (the default layout: `~` and `~/.merlya`).
    let beside_home = fleet.env.dir.path();
    let elsewhere = tempfile::tempdir().unwrap();
    let marker = elsewhere.path().join("controller-marker");
    let play = write(
        beside_home,
        "site.yml",
        &format!(
            "- hosts: all\n  gather_facts: false\n  tasks:\n    - name: leave a mark on the controller\n      copy: {{dest: \"{}\", content: x}}\n      delegate_to: localhost\n      check_mode: false\n",
            marker.display()
        ),
    );
    // No terminal, no --yes: the "dry run" would write on this machine, so it is asked about; nobody
    // can answer, nothing runs, and the reason names the task.
    let out = fleet.merlya(&["pipeline", "run", "ansible", &play, "--targets", "web01"]);
    assert_ne!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert!(!marker.exists(), "the dry run changed this machine without an approval");
    let shown = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(shown.contains("dry run"), "{shown}");
    let runs = fleet.env.ok(&["pipeline", "list", "--format", "json"]);
    assert!(runs.contains("leave a mark on the controller") && runs.contains("this machine"), "{runs}");
    // --yes approves the dry run too; merlya's own writes beside the playbook do not break the pin.
    let out = fleet.merlya(&["pipeline", "run", "ansible", &play, "--targets", "web01", "--yes", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(json(&out)["status"], "succeeded", "{}", text(&out.stdout));
    assert!(marker.exists());
}

/// A task file is swapped in the playbook's folder while the person reads the approval: the apply
/// runs the playbook as planned, from the run's private copy (issue 24 §4), and says nothing of the
/// swapped one.
#[test]
fn a_task_file_swapped_while_the_approval_waits_is_not_applied() {
    let bin = support::ansible_bin();
    let (_key, _sshd, env) = support::one_trusted_host("web01", &[]);
    let out_dir = tempfile::tempdir().unwrap();
    support::give_to_test_user(out_dir.path());
    let plays = tempfile::tempdir().unwrap();
    let task = |content: &str| {
        format!(
            "- name: write the marker\n  copy:\n    dest: \"{}/marker.txt\"\n    content: \"{content}\\n\"\n",
            out_dir.path().display()
        )
    };
    write(plays.path(), "tasks.yml", &task("planned"));
    let play = write(
        plays.path(),
        "site.yml",
        "- hosts: all\n  gather_facts: false\n  tasks:\n    - include_tasks: tasks.yml\n",
    );
    let path = support::path_with(&bin);
    let swap = || {
        write(plays.path(), "tasks.yml", &task("swapped"));
    };
    let screen = env.answering_on_a_pty(
        &["pipeline", "run", "ansible", &play, "--targets", "web01"],
        &[("PATH", &path)],
        swap,
        "o\n",
    );
    let written = std::fs::read_to_string(out_dir.path().join("marker.txt"))
        .unwrap_or_else(|e| panic!("{e}: nothing was applied: {}", text(&screen)));
    assert_eq!(written, "planned\n", "the swapped task file ran: {}", text(&screen));
    let runs: Vec<Value> = serde_json::from_str(&env.ok(&["pipeline", "list", "--format", "json"])).unwrap();
    assert_eq!(runs[0]["status"], "succeeded", "{}", runs[0]);
    // The approval and the audit name the copy that ran, not the folder that changed.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("/pipelines/") && audit.contains("/planned/0/"), "{audit}");
}
