//! merlya as an MCP server (`merlya mcp serve`), driven by merlya's own MCP
//! client and by an independent client on the official TypeScript SDK: the
//! handshake, tools/list with annotations, `list_hosts`, `run_readonly` of a
//! mutating command refused, `ask` answered by the scripted model, progress,
//! and a client cancellation that stops the run and its remote command.

mod support;

use serde_json::{Value, json};
use support::agent::{KEY, configured, fleet, is_main};
use support::llm::{Recorded, ScriptedLlm, openai};
use support::{TestEnv, TestKey, text};

/// The served agent's model: says hello, or (for a task about sleeping) has a diagnostic specialist
/// run `sleep 30` on web01.
fn script(r: &Recorded) -> support::llm::Reply {
    let results = r.tool_results();
    if is_main(r) {
        let asked = r.body["messages"]
            .as_array()
            .map(|m| m.iter().any(|m| m["content"].as_str().is_some_and(|c| c.contains("sleep"))))
            .unwrap_or(false);
        match (asked, results.len()) {
            (true, 0) => openai::tool_call("delegate_diagnostic", json!({"target": "web01", "task": "sleep"})),
            (true, _) => openai::text("slept"),
            (false, _) => openai::text("hello from the served agent"),
        }
    } else if results.is_empty() {
        openai::tool_call("run_command", json!({"command": "sleep 30"}))
    } else {
        openai::text(&results[0])
    }
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn merlya_serves_its_agent_to_its_own_mcp_client() {
    let llm = ScriptedLlm::start(script);
    let server = configured(&llm, "openai", "  stream: false\n");
    server.ok(&["hosts", "add", "web01", "--hostname", "192.0.2.10", "--tag", "web"]);
    let client = TestEnv::new();
    let home = format!("MERLYA_HOME={}", server.merlya_home().display());
    let key = format!("MERLYA_TEST_LLM_KEY={KEY}");
    client.ok(&[
        "mcp",
        "add",
        "merlya",
        "--command",
        env!("CARGO_BIN_EXE_merlya"),
        "--arg",
        "mcp",
        "--arg",
        "serve",
        "--env",
        &home,
        "--env",
        &key,
    ]);

    let tools = json_of(&client.ok(&["mcp", "tools", "merlya", "--format", "json"]));
    let flags: Vec<(String, bool)> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_string(), t["read_only"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        flags,
        [("ask".to_string(), false), ("list_hosts".to_string(), true), ("run_readonly".to_string(), true)]
    );
    let hosts = json_of(&client.ok(&["mcp", "call", "merlya.list_hosts", "--args", r#"{"tag": "web"}"#]));
    assert_eq!(hosts[0]["name"], "web01");
    assert_eq!(hosts.as_array().unwrap().len(), 1);

    let out = client.run(&[
        "mcp",
        "call",
        "merlya.run_readonly",
        "--args",
        r#"{"targets": "web01", "command": "rm -rf /srv"}"#,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).starts_with("REFUSED by merlya's safety policy"), "{}", text(&out.stdout));

    // `ask` may change things, so merlya's client asks for it: refused without --yes, answered with it.
    let out = client.run(&["mcp", "call", "merlya.ask", "--args", r#"{"task": "say hello"}"#]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let answer = client.ok(&["mcp", "call", "merlya.ask", "--args", r#"{"task": "say hello"}"#, "--yes"]);
    assert_eq!(answer.trim(), "hello from the served agent");
    let asked = llm.requests().iter().any(|r| r.body["messages"].to_string().contains("say hello"));
    assert!(asked, "the task reached the served agent's model");
}

#[test]
fn an_independent_typescript_client_lists_calls_and_cancels() {
    let packages = support::mcp_packages();
    let llm = ScriptedLlm::start(script);
    let server = configured(&llm, "openai", "  stream: false\n");
    let key = TestKey::generate("");
    let _fleet = fleet(1, &key, &server);
    let script_path = packages.join(format!("merlya-ts-client-{}.mjs", std::process::id()));
    std::fs::write(&script_path, include_str!("support/mcp_ts_client.mjs")).unwrap();
    let out = server
        .command("node")
        .arg(&script_path)
        .arg(env!("CARGO_BIN_EXE_merlya"))
        .env("MERLYA_TEST_LLM_KEY", KEY)
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&script_path);
    assert!(out.status.success(), "node client failed:\n{}\n{}", text(&out.stdout), text(&out.stderr));
    let seen = json_of(text(&out.stdout).trim());

    assert_eq!(seen["server"]["name"], "merlya");
    let tools = seen["tools"].as_array().unwrap();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(tool("list_hosts")["readOnly"], true);
    assert_eq!(tool("run_readonly")["readOnly"], true);
    assert_eq!(tool("ask")["readOnly"], false);
    assert_eq!(tool("run_readonly")["required"], json!(["targets", "command"]));
    assert_eq!(seen["hosts"], json!(["localhost", "web01"]));
    assert_eq!(seen["refused"]["isError"], true);
    assert!(seen["refused"]["text"].as_str().unwrap().contains("REFUSED"), "{seen}");
    assert_eq!(seen["answer"], "hello from the served agent");

    // The cancellation reached the server: the remote `sleep 30` was stopped, not waited for.
    assert!(seen["cancelled"].as_str().unwrap().contains("operator cancelled"), "{seen}");
    assert!(seen["cancelledAfterMs"].as_u64().unwrap() < 20_000, "{seen}");
    let progress = seen["progress"].as_array().unwrap();
    assert!(progress.iter().any(|p| p.as_str().unwrap().contains("delegate_diagnostic")), "{seen}");
    assert_eq!(seen["afterCancel"], json!(["web01"]));
    let audit = json_of(&server.ok(&["audit", "list", "--format", "json"]));
    let sleep = audit.as_array().unwrap().iter().find(|e| e["command"] == "sleep 30").cloned();
    let sleep = sleep.unwrap_or_else(|| panic!("no audit row for the sleep: {audit}"));
    assert_eq!(sleep["outcome"], "cancelled", "{sleep}");
}
