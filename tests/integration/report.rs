//! The incident report of a scripted session, compared to a snapshot (times and ids normalised).

use crate::support;

use support::{TestEnv, text};

fn normalised(report: &str) -> String {
    let time = regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z").unwrap();
    let change = regex::Regex::new(r"\d{8}-\d{6}-[0-9a-f]+").unwrap();
    change.replace_all(&time.replace_all(report, "TIME"), "CHANGE").into_owned()
}

#[test]
fn the_report_of_a_session_is_a_markdown_timeline_with_secrets_masked() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "echo hi"]);
    let refused = env.run(&["exec", "localhost", "--", "rm -rf /tmp/merlya-report-nothing"]);
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused.stderr));
    let failed =
        env.run(&["exec", "localhost", "--", "curl -sf -H 'Authorization: Bearer sekrit-tok' http://127.0.0.1:1"]);
    assert!(!failed.status.success());

    let out = env.dir.path().join("incident.md");
    let written = env.run(&["report", "--out", &out.display().to_string()]);
    assert!(written.status.success(), "{}", text(&written.stderr));
    let report = std::fs::read_to_string(&out).unwrap();
    assert!(!report.contains("sekrit-tok"), "a secret in a command is masked");
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&out).unwrap().permissions().mode() & 0o777, 0o600);
    }
    insta::assert_snapshot!("incident_report", normalised(&report));

    // One session alone, as JSON.
    let audit: serde_json::Value = serde_json::from_str(&env.ok(&["audit", "list", "--format", "json"])).unwrap();
    let first_session = audit[0]["session_id"].as_str().unwrap().to_string();
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["report", "--session", &first_session, "--format", "json"])).unwrap();
    let timeline = json["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 1, "{json}");
    assert_eq!(timeline[0]["text"], "echo hi");
    assert_eq!(timeline[0]["outcome"], "exit 0 · approved: not required");
}
