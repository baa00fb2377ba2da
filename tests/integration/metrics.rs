//! The metrics registry: `merlya metrics` and `--metrics-addr` output read back by the official
//! Prometheus client library's OpenMetrics parser (Python), with the home's history in the counters.

use crate::support;

use std::process::Command;

use serde_json::Value;
use support::{TestEnv, text};

/// Parses OpenMetrics text with prometheus_client and returns `{"name{labels}": value}`.
fn parse(exposition: &str) -> Value {
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
        out[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps(out))
"#;
    let mut child = Command::new(support::prometheus_python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), exposition.as_bytes()).unwrap();
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the parser refused it: {}\n{exposition}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn merlya_metrics_is_valid_openmetrics_with_the_homes_history() {
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "true"]);
    let _ = env.run(&["exec", "localhost", "--", "false"]);
    let out = env.ok(&["metrics"]);
    assert!(out.trim_end().ends_with("# EOF"), "{out}");
    let samples = parse(&out);
    assert_eq!(samples["merlya_commands_total{outcome=ok}"], 1.0, "{samples}");
    assert_eq!(samples["merlya_commands_total{outcome=failed}"], 1.0, "{samples}");
    for family in ["merlya_retry_attempts_total{}", "merlya_drift_detected_total{}"] {
        assert!(samples.get(family).is_some(), "{family} in {samples}");
    }
}

#[test]
fn metrics_are_served_on_a_loopback_address_while_mcp_serve_runs() {
    use std::io::{BufRead, BufReader};
    let env = TestEnv::new();
    env.ok(&["exec", "localhost", "--", "true"]);
    let out = env.run(&["--metrics-addr", "0.0.0.0:0", "mcp", "serve", "--http", "127.0.0.1:0"]);
    assert!(
        !out.status.success() && text(&out.stderr).contains("expected a loopback address"),
        "{}",
        text(&out.stderr)
    );

    let port = support::sshd::free_port();
    let mut child = env
        .merlya(&["--metrics-addr", &format!("127.0.0.1:{port}"), "mcp", "serve", "--http", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains(&format!("127.0.0.1:{port}/metrics")), "{line}");
    let scraped = Command::new("curl").args(["-s", &format!("http://127.0.0.1:{port}/metrics")]).output().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let samples = parse(&text(&scraped.stdout));
    assert_eq!(samples["merlya_commands_total{outcome=ok}"], 1.0, "the home's history: {samples}");
}

/// `merlya metrics` counts the model calls, tokens and cost of the home's conversations — what the
/// Metrics pane shows — not only calls made by its own process.
#[test]
fn merlya_metrics_counts_the_homes_model_calls() {
    use support::agent::{configured, run};
    use support::llm::{ScriptedLlm, openai};
    let llm = ScriptedLlm::start(|_| openai::text("all calm"));
    let env = configured(&llm, "openai", "  stream: false\n");
    let out = run(&env, &["--format", "json", "say hello"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let samples = parse(&env.ok(&["metrics"]));
    let calls = samples.as_object().unwrap().iter().find(|(k, _)| k.starts_with("merlya_model_calls_total{model="));
    let (name, value) = calls.unwrap_or_else(|| panic!("no model calls in {samples}"));
    assert!(value.as_f64().unwrap() >= 1.0, "{name} = {value}");
    let tokens =
        samples.as_object().unwrap().iter().filter(|(k, _)| k.starts_with("merlya_model_tokens_total{")).count();
    assert_eq!(tokens, 2, "input and output: {samples}");
}
