//! Host baselines on real sshd hosts, each in its own mount namespace (a private /etc/issue.net
//! and dpkg database): a package and a file changed between two captures are reported with their
//! field; the host that differs from its group is named and the calm ones are not; an ignore rule
//! and an accept each remove a finding and are counted.

use serde_json::Value;

use crate::support::{self, Sshd, SshdOptions, TestEnv, TestKey};

/// The newest version of `package` in a dpkg status file changed to `version`.
fn with_version(status: &str, package: &str, version: &str) -> String {
    let mut out = String::new();
    let mut in_package = false;
    for line in status.lines() {
        if let Some(name) = line.strip_prefix("Package: ") {
            in_package = name == package;
        }
        if in_package && line.starts_with("Version: ") {
            out.push_str(&format!("Version: {version}\n"));
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

fn drift(env: &TestEnv, args: &[&str]) -> Value {
    let mut all = vec!["drift"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--format", "json"]);
    let out = env.run(&all);
    assert!(out.status.success(), "merlya {all:?}: {}\n{}", support::text(&out.stdout), support::text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("drift --format json")
}

/// `(section, key, kind, hosts)` of each row.
fn rows(report: &Value) -> Vec<(String, String, String, Vec<String>)> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let hosts = r["hosts"].as_array().unwrap().iter().map(|h| h.as_str().unwrap().to_string()).collect();
            (
                r["section"].as_str().unwrap().to_string(),
                r["key"].as_str().unwrap().to_string(),
                r["kind"].as_str().unwrap().to_string(),
                hosts,
            )
        })
        .collect()
}

#[test]
fn package_and_file_changes_are_reported_the_odd_host_is_named_and_rules_are_counted() {
    support::sshd::ensure_test_user();
    let key = TestKey::generate("");
    let status = std::fs::read_to_string("/var/lib/dpkg/status").expect("a dpkg host");
    let env = TestEnv::new();
    env.install_default_key(&key);
    let sshds: Vec<Sshd> = (1..=3)
        .map(|_| {
            let mut options = SshdOptions::allowing(&key);
            options.files =
                vec![("/etc/issue.net".into(), "Debian\n".into()), ("/var/lib/dpkg/status".into(), status.clone())];
            Sshd::start(options)
        })
        .collect();
    for (i, sshd) in sshds.iter().enumerate() {
        env.trust(sshd);
        env.add_host(&format!("web{}", i + 1), sshd, &["--tag", "web"]);
    }
    let captured = env.ok(&["baseline", "capture", "@web"]);
    assert_eq!(captured.matches("baseline recorded").count(), 3, "{captured}");

    // Nothing changed: no drift, and the volatile rules say what they hid.
    let calm = drift(&env, &["@web"]);
    assert_eq!(rows(&calm), [], "{calm}");

    // web2: a package upgraded and a file edited (in place: the bind mount keeps the inode).
    let web2 = &sshds[1];
    std::fs::write(web2.dir.path().join("file0"), "Debian GNU/Linux, edited\n").unwrap();
    std::fs::write(web2.dir.path().join("file1"), with_version(&status, "openssh-server", "1:99.0p1-1")).unwrap();
    let found = drift(&env, &["@web"]);
    let found_rows = rows(&found);
    assert!(
        found_rows.contains(&("packages".into(), "openssh-server".into(), "changed".into(), vec!["web2".into()])),
        "{found}"
    );
    assert!(found_rows.contains(&("files".into(), "/etc/issue.net".into(), "changed".into(), vec!["web2".into()])));
    let package = found["rows"].as_array().unwrap().iter().find(|r| r["section"] == "packages").unwrap();
    assert_eq!(package["found"], "1:99.0p1-1");
    assert!(found_rows.iter().all(|(_, _, _, hosts)| hosts == &["web2".to_string()]), "calm hosts named: {found}");

    // Against the group: web2 is the odd one, the two others are not named.
    let group = drift(&env, &["@web", "--against", "group"]);
    let group_rows = rows(&group);
    assert!(
        group_rows.contains(&("packages".into(), "openssh-server".into(), "changed".into(), vec!["web2".into()])),
        "{group}"
    );
    assert!(group_rows.iter().all(|(_, _, _, hosts)| hosts == &["web2".to_string()]), "{group}");
    let row = group["rows"].as_array().unwrap().iter().find(|r| r["section"] == "packages").unwrap();
    assert_eq!(row["agree"], serde_json::json!([2, 3]), "{row}");

    // An ignore rule hides the file and counts it under its name.
    let config = env.merlya_home().join("config.yaml");
    let old = std::fs::read_to_string(&config).unwrap_or_default();
    std::fs::write(
        &config,
        format!(
            "{old}\ndrift:\n  ignore:\n    - {{name: banners, section: files, key: /etc/issue*, hosts: \"@web\"}}\n"
        ),
    )
    .unwrap();
    let ignored = drift(&env, &["@web"]);
    assert!(rows(&ignored).iter().all(|(section, ..)| section != "files"), "{ignored}");
    assert_eq!(ignored["hidden"]["ignore: banners"], 1, "{ignored}");

    // An ignore rule decided at the command line: asked first (no terminal, no --yes: refused),
    // then kept, and counted under its name like the config's.
    let refused = env.run(&["baseline", "ignore", "--name", "ssh", "--section", "packages", "--key", "openssh-*"]);
    assert!(!refused.status.success(), "{}", support::text(&refused.stdout));
    env.ok(&[
        "baseline",
        "ignore",
        "--name",
        "ssh",
        "--section",
        "packages",
        "--key",
        "openssh-*",
        "--hosts",
        "web2",
        "--yes",
    ]);
    let decided = drift(&env, &["@web"]);
    assert!(rows(&decided).iter().all(|(section, ..)| section != "packages"), "{decided}");
    assert_eq!(decided["hidden"]["ignore: ssh"], 1, "{decided}");

    // Accept rebases web2 (asked first too): its changes are no longer drift.
    let baseline = || env.ok(&["baseline", "show", "web2", "--format", "json"]);
    let before = baseline();
    assert!(!env.run(&["baseline", "accept", "web2"]).status.success(), "accepted without approval");
    assert_eq!(baseline(), before, "a refused accept keeps the baseline");
    env.ok(&["baseline", "accept", "web2", "--yes"]);
    let accepted = drift(&env, &["@web"]);
    assert_eq!(rows(&accepted), [], "{accepted}");

    // The capture ran as audited reads, as merlya's rendering.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("dpkg-query -W"), "{audit}");
    assert!(
        audit.contains("merlya baseline accept web2") && audit.contains("merlya baseline ignore --name ssh"),
        "{audit}"
    );
}

#[test]
fn a_malformed_ignore_rule_names_the_field() {
    let env = TestEnv::new();
    std::fs::write(
        env.merlya_home().join("config.yaml"),
        "drift:\n  ignore:\n    - {name: x, section: fils, key: /etc/x}\n",
    )
    .unwrap();
    let out = env.run(&["drift", "localhost"]);
    assert!(!out.status.success());
    let err = support::text(&out.stderr);
    assert!(err.contains("drift.ignore") && err.contains("files"), "{err}");
}
