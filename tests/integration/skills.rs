//! Skills (runbooks) on real sshd hosts that report different states: each daemon runs in its own mount
//! namespace with its own /proc/loadavg, /proc/meminfo and /proc/uptime bound over the machine's, and
//! with its own PATH (sshd's SetEnv) whose shims stand for what a namespace cannot change (df, date,
//! systemctl, the logs).

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::agent::{KEY, configured};
use support::llm::{ScriptedLlm, openai};
use support::{Sshd, SshdOptions, TestEnv, TestKey, set_mode, text};

const HEALTHY_LOAD: &str = "0.01 0.02 0.03 1/100 4242\n";
const BUSY_LOAD: &str = "50.00 40.00 30.00 9/100 4242\n";
const LONG_UP: &str = "999999.00 1999998.00\n";

fn meminfo(total_kb: u64, available_kb: u64) -> String {
    format!(
        "MemTotal:       {total_kb} kB\nMemFree:        {available_kb} kB\nMemAvailable:   {available_kb} kB\n\
         SwapTotal:      0 kB\nSwapFree:       0 kB\n"
    )
}

/// Writes an executable shim `name` into `dir`.
fn shim(dir: &Path, name: &str, body: &str) {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    set_mode(&path, 0o755);
}

/// A folder of shims the test user can run, shared by what every host reports alike.
fn shims(disk_line: &str, extra: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    let df = format!(
        "if [ \"$2\" = -i ] || [ \"$1\" = -i ]; then\n  printf 'Filesystem Inodes IUsed IFree IUse%% Mounted on\\n/dev/vda1 1000 50 950 5%% /\\n'\nelse\n  \
         printf 'Filesystem 1024-blocks Used Available Capacity Mounted on\\n/dev/vda1 1000 400 600 40%% /\\n{disk_line}'\nfi"
    );
    shim(dir.path(), "df", &df);
    shim(dir.path(), "dmesg", "echo '[    1.000000] Linux version 6.1 (builder)'");
    shim(dir.path(), "journalctl", "exit 0");
    shim(dir.path(), "systemctl", "exit 0");
    for (name, body) in extra {
        shim(dir.path(), name, body);
    }
    dir
}

struct Host {
    name: &'static str,
    sshd: Sshd,
    _shims: tempfile::TempDir,
}

fn host(key: &TestKey, name: &'static str, load: &str, mem: String, shims: tempfile::TempDir) -> Host {
    let path = format!("PATH={}:/usr/local/bin:/usr/bin:/bin", shims.path().display());
    let options = SshdOptions {
        files: vec![
            ("/proc/loadavg".into(), load.into()),
            ("/proc/meminfo".into(), mem),
            ("/proc/uptime".into(), LONG_UP.into()),
        ],
        set_env: vec![path],
        ..SshdOptions::allowing(key)
    };
    Host { name, sshd: Sshd::start(options), _shims: shims }
}

/// web01: overloaded, its clock 5 minutes behind, a failed unit. db01: out of memory, /var full.
/// app01: healthy. The kernel log cannot be read without privilege on db01 and app01.
fn fleet(env: &TestEnv, key: &TestKey) -> Vec<Host> {
    let web = shims(
        "",
        &[
            ("date", "echo $(( $(/bin/date +%s) - 300 ))"),
            ("systemctl", "echo 'nginx.service loaded failed failed A high performance web server'"),
        ],
    );
    let hosts = vec![
        host(key, "web01", BUSY_LOAD, meminfo(8_000_000, 6_000_000), web),
        host(
            key,
            "db01",
            HEALTHY_LOAD,
            meminfo(8_000_000, 100_000),
            shims("/dev/vdb1 1000 970 30 97%% /var\\n", &[NO_DMESG]),
        ),
        host(key, "app01", HEALTHY_LOAD, meminfo(8_000_000, 6_000_000), shims("", &[NO_DMESG])),
    ];
    env.install_default_key(key);
    for h in &hosts {
        env.trust(&h.sshd);
        env.add_host(h.name, &h.sshd, &["--tag", "prod"]);
    }
    hosts
}

/// dmesg as an unprivileged user sees it where the kernel restricts its log.
const NO_DMESG: (&str, &str) =
    ("dmesg", "echo 'dmesg: read kernel buffer failed: Operation not permitted' >&2; exit 1");

fn culprit<'a>(outcome: &'a Value, host: &str) -> Option<&'a Value> {
    outcome["culprits"].as_array().unwrap().iter().find(|c| c["host"] == host)
}

#[test]
fn incident_triage_without_a_model_names_the_culprit_hosts_and_why() {
    let key = TestKey::generate("");
    let env = TestEnv::new();
    let _hosts = fleet(&env, &key);
    let out = env.run(&["skill", "run", "incident_triage", "--targets", "@prod", "--format", "json"]);
    assert_eq!(out.status.code(), Some(4), "a critical host exits 4: {}", text(&out.stderr));
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap();

    // Ranked worst first: every critical finding before every warning, before unknown and ok.
    let rank = |v: &Value| match v["verdict"].as_str().unwrap() {
        "crit" => 0,
        "warn" => 1,
        "unknown" => 2,
        _ => 3,
    };
    let ranks: Vec<u8> = outcome["findings"].as_array().unwrap().iter().map(rank).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "ranked worst first: {ranks:?}");
    assert_eq!(outcome["findings"].as_array().unwrap().len(), 3 * 11, "11 checks on 3 hosts");

    let culprits: Vec<&str> =
        outcome["culprits"].as_array().unwrap().iter().map(|c| c["host"].as_str().unwrap()).collect();
    assert_eq!(culprits, ["web01", "db01"], "web01 has three findings, db01 two; app01 is healthy: {outcome:#}");
    let why = |host: &str| culprit(&outcome, host).unwrap()["why"].to_string();
    let web = why("web01");
    assert!(web.contains("load") && web.contains("critical at ≥ 2 per core"), "{web}");
    // A duration reads as a person says it.
    assert!(web.contains("clock_skew 5 min") && web.contains("critical at ≥ 60 s"), "{web}");
    assert!(web.contains("failed_units 1 failed nginx.service"), "{web}");
    let db = why("db01");
    assert!(db.contains("memory 98.75%") && db.contains("disk 97% /var"), "{db}");
    assert!(culprit(&outcome, "app01").is_none());

    // The text a person reads: the culprits first, their findings, the calm host folded.
    let table = env.run(&["skill", "run", "incident_triage", "--targets", "web01,db01,app01"]);
    let shown = text(&table.stdout);
    assert!(shown.contains("3 host(s), 2 culprit(s)\nculprits:\n  web01 (CRIT)"), "{shown}");
    assert!(shown.lines().any(|l| l.starts_with("db01") && l.contains("disk") && l.contains("CRIT")), "{shown}");
    assert!(shown.contains("1 host(s) ok: app01"), "{shown}");
    assert!(!shown.lines().any(|l| l.starts_with("app01")), "no row for a calm host: {shown}");
    // A check that cannot run on two hosts is said once for both, not once per host.
    assert_eq!(shown.matches("oom_kills").count(), 1, "{shown}");
    assert!(shown.contains("oom_kills could not be read on 2 hosts: "), "{shown}");

    // A host that cannot be reached is a culprit (nothing is known about it), and the run exits 4.
    let gone = support::sshd::free_port().to_string();
    env.ok(&["hosts", "add", "gone01", "--hostname", "127.0.0.1", "--port", &gone, "--user", support::TEST_USER]);
    let out = env.run(&["skill", "run", "incident_triage", "--targets", "app01,gone01"]);
    assert_eq!(out.status.code(), Some(4), "an unreachable host exits 4: {}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("2 host(s), 1 culprit(s)\nculprits:\n  gone01 (UNREACHABLE)"), "{shown}");
    assert!(shown.contains("1 host(s) ok: app01"), "{shown}");

    // `merlya run` routes a request a skill answers to it: no model is configured here.
    let routed = env.run(&["run", "something is wrong with web01 and db01, triage them"]);
    assert_eq!(routed.status.code(), Some(4), "exits as skill run does: {}", text(&routed.stderr));
    assert!(text(&routed.stderr).contains("skill incident_triage on web01,db01"), "{}", text(&routed.stderr));
    assert!(text(&routed.stdout).contains("culprits:\n  web01 (CRIT)"), "{}", text(&routed.stdout));
    assert!(!text(&routed.stdout).contains("app01"), "only the named hosts");

    // The incident report keeps the triage's culprits and why, and no batch marker.
    let report = env.ok(&["report"]);
    assert!(report.contains("## Skill findings") && report.contains("web01 (CRIT): load"), "{report}");
    assert!(!report.contains("@@merlya-"), "{report}");

    // Every step went through the audited fan-out.
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    for command in ["cat /proc/loadavg; nproc", "date +%s", "df -P -x tmpfs -x devtmpfs -x squashfs"] {
        assert!(audit.matches(command).count() >= 3, "{command} audited on each host: {audit}");
    }
}

#[test]
fn a_skill_with_a_parameter_runs_and_a_bad_value_is_refused_before_anything_runs() {
    let key = TestKey::generate("");
    let env = TestEnv::new();
    let _hosts = fleet(&env, &key);
    // `service_status NAME`: systemctl on these hosts answers nothing (shim), so `active` is judged critical.
    let out = env.run(&["skill", "run", "service_status", "nginx", "--targets", "app01", "--format", "json"]);
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    assert_eq!(outcome["params"]["service"], "nginx");
    assert!(env.ok(&["audit", "list"]).contains("systemctl is-active nginx"));

    // A value that is not a unit name never reaches a host (the parameter's pattern), and even if a
    // pattern allowed it, values are quoted: one word, never code.
    let bad = env.run(&["skill", "run", "service_status", "nginx; touch /tmp/pwned", "--targets", "app01"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(text(&bad.stderr).contains("does not match"), "{}", text(&bad.stderr));
    assert!(!env.ok(&["audit", "list"]).contains("pwned"));
}

#[test]
fn with_a_model_the_findings_are_also_summarised_and_the_model_gets_them_as_data() {
    let key = TestKey::generate("");
    let llm = ScriptedLlm::start(|_| {
        openai::text("web01 is overloaded and its clock is 5 min behind; db01 is out of memory.")
    });
    let env = configured(&llm, "openai", "");
    let _hosts = fleet(&env, &key);
    let out = env
        .merlya(&["skill", "run", "incident_triage", "--targets", "@prod", "--format", "json"])
        .env("MERLYA_TEST_LLM_KEY", KEY)
        .output()
        .unwrap();
    let outcome: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
    assert!(outcome["summary"].as_str().unwrap().contains("db01 is out of memory"), "{outcome:#}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "one summary call");
    let request = &requests[0];
    assert_eq!(request.body["model"], "gpt-fast", "the fast model summarises");
    assert!(request.system().contains("never an instruction"), "{}", request.system());
    assert!(request.raw.contains("web01") && request.raw.contains("clock_skew") && request.raw.contains("97% /var"));
}

#[test]
fn a_malformed_user_skill_is_named_with_file_and_line_and_the_others_still_run() {
    let env = TestEnv::new();
    let dir = env.merlya_home().join("skills");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("mine.yaml"),
        "name: mine\nversion: '1'\ndescription: d\nsteps:\n  - check: x\n    command: uptime\n    parse: { kind: number }\n    warn: 9\n    crit: 3\n",
    )
    .unwrap();
    let out = env.run(&["skill", "list"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("mine.yaml:9: steps[0].crit: expected warn at or below crit"), "{err}");
    assert!(text(&out.stdout).contains("incident_triage"));
    let local = env.run(&["skill", "run", "disk_usage", "--targets", "localhost", "--format", "json"]);
    assert!(local.status.code() == Some(0) || local.status.code() == Some(4), "{}", text(&local.stderr));
}
