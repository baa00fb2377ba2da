//! merlya as an MCP client, against the real reference servers from npm
//! (`@modelcontextprotocol/server-everything` over stdio and streamable HTTP,
//! `@modelcontextprotocol/server-filesystem`): list, call, gating of changes,
//! the audit log, `${VAR}` resolution, a server that dies mid-call, timeouts
//! and cancellation.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use merlya::approval::{ApprovalGate, AutoApprove};
use merlya::config::mcp::McpServerConfig;
use merlya::mcp::McpError;
use merlya::mcp::call::{CallEnv, call};
use merlya::mcp::client::McpClients;
use merlya::secrets::SecretSource;
use merlya::store::Store;
use serde_json::{Value, json};
use support::{TestEnv, text};
use tokio_util::sync::CancellationToken;

fn bin(name: &str) -> String {
    support::mcp_packages().join("node_modules/.bin").join(name).display().to_string()
}

/// A test home with `everything` (stdio) and `fs` (filesystem server on `root`) configured.
fn configured(root: &Path, env_line: &str) -> TestEnv {
    let env = TestEnv::new();
    let config = format!(
        "mcp:\n  servers:\n    everything:\n      command: {}\n{env_line}    fs:\n      command: {}\n      args: [\"{}\"]\n",
        bin("mcp-server-everything"),
        bin("mcp-server-filesystem"),
        root.display()
    );
    std::fs::write(env.merlya_home().join("config.yaml"), config).unwrap();
    env
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn stdio_servers_are_listed_called_and_their_changes_need_an_approval() {
    let root = tempfile::tempdir().unwrap();
    let env = configured(root.path(), "");
    let listed = env.ok(&["mcp", "list"]);
    assert!(listed.contains("everything") && listed.contains("mcp-server-filesystem"), "{listed}");

    // Tools with their annotations: echo is read-only, write_file is a change.
    let tools = json_of(&env.ok(&["mcp", "tools", "fs", "--format", "json"]));
    let find = |name: &str| tools.as_array().unwrap().iter().find(|t| t["name"] == name).cloned().unwrap();
    assert_eq!(find("read_text_file")["read_only"], true);
    assert_eq!(find("write_file")["read_only"], false);
    assert!(find("write_file")["input_schema"]["properties"]["content"].is_object(), "schema kept");

    // A read: runs at once. The server's tools/list_changed notification arrives before its reply.
    let out = env.ok(&["mcp", "call", "everything.echo", "--args", r#"{"message":"hello from merlya"}"#]);
    assert_eq!(out.trim(), "Echo: hello from merlya");

    // A change without a terminal or --yes: refused, nothing written, the refusal audited.
    let target = root.path().join("note.txt");
    let args = json!({"path": target, "content": "written through MCP"}).to_string();
    let out = env.run(&["mcp", "call", "fs.write_file", "--args", &args]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("denied by nobody (no terminal)"), "{}", text(&out.stderr));
    assert!(!target.exists(), "a refused call changed nothing");

    // With --yes: written, and audited with who approved it.
    env.ok(&["mcp", "call", "fs.write_file", "--args", &args, "--yes"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written through MCP");
    let audit = json_of(&env.ok(&["audit", "list", "--format", "json"]));
    let rows: Vec<(String, String, String)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["host"].as_str().unwrap().to_string(),
                e["outcome"].as_str().unwrap().to_string(),
                e["command"].as_str().unwrap().split(' ').next().unwrap().to_string(),
            )
        })
        .collect();
    let has = |host: &str, outcome: &str, tool: &str| rows.contains(&(host.into(), outcome.into(), tool.into()));
    assert!(has("mcp:everything", "ok", "everything.echo"), "{rows:?}");
    assert!(has("mcp:fs", "denied", "fs.write_file"), "{rows:?}");
    assert!(has("mcp:fs", "ok", "fs.write_file"), "{rows:?}");
    assert!(env.ok(&["audit", "verify"]).contains("intact: 5 entries"), "the chain still verifies");

    // The filesystem server's stderr banner went to merlya's log, never to the terminal.
    assert!(!text(&out.stderr).contains("Secure MCP Filesystem Server"), "stderr leaked to the screen");
    let logs: String = std::fs::read_dir(env.merlya_home().join("logs"))
        .unwrap()
        .flatten()
        .map(|f| std::fs::read_to_string(f.path()).unwrap_or_default())
        .collect();
    assert!(logs.contains("Secure MCP Filesystem Server"), "stderr drained into the log");
}

#[test]
fn variables_are_resolved_when_the_server_starts_and_a_missing_one_names_the_server() {
    let root = tempfile::tempdir().unwrap();
    let env = configured(
        root.path(),
        "      env:\n        MCPTEST_REGION: \"${MCPTEST_REGION}\"\n        MCPTEST_LEVEL: \"${MCPTEST_LEVEL:-info}\"\n",
    );
    // The configuration loads although the variable is unset: only that server cannot start.
    let out = env.run(&["mcp", "test", "everything"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("MCP server everything: environment variable MCPTEST_REGION is not set"),
        "{}",
        text(&out.stderr)
    );
    env.ok(&["mcp", "test", "fs"]);

    let out = env
        .merlya(&["mcp", "call", "everything.get-env"])
        .env("MCPTEST_REGION", "eu-west-3")
        .env("OPENAI_API_KEY", "sk-never-for-mcp-servers")
        .env("MCPTEST_UNNAMED", "not-in-the-config")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("\"MCPTEST_REGION\": \"eu-west-3\""), "{shown}");
    assert!(shown.contains("\"MCPTEST_LEVEL\": \"info\""), "{shown}");
    // A clean environment: merlya's own variables (the model's key) never reach a server.
    assert!(!shown.contains("sk-never-for-mcp-servers") && !shown.contains("OPENAI_API_KEY"), "{shown}");
    assert!(!shown.contains("not-in-the-config"), "{shown}");
    assert!(shown.contains("\"PATH\""), "a server still finds its programs: {shown}");
}

/// server-everything over streamable HTTP on a free loopback port.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> Self {
        let port = support::sshd::free_port();
        let script = support::mcp_packages().join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
        let child = Command::new("node")
            .arg(script)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the HTTP server never listened");
            std::thread::sleep(Duration::from_millis(100));
        }
        Self { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_streamable_http_server_is_added_listed_and_called() {
    let server = HttpServer::start();
    let env = TestEnv::new();
    env.ok(&[
        "mcp",
        "add",
        "web",
        "--url",
        &server.url,
        "--header",
        "X-Merlya-Test=${MCPTEST_H:-yes}",
        "--timeout",
        "20",
    ]);
    let config = std::fs::read_to_string(env.merlya_home().join("config.yaml")).unwrap();
    assert!(config.contains("${MCPTEST_H:-yes}"), "references are written as given: {config}");
    let tools = json_of(&env.ok(&["mcp", "tools", "web", "--format", "json"]));
    assert!(tools.as_array().unwrap().iter().any(|t| t["name"] == "get-sum"), "{tools}");
    let out = env.ok(&["mcp", "call", "web.get-sum", "--args", r#"{"a": 19, "b": 23}"#]);
    assert!(out.contains("42"), "{out}");
    env.ok(&["mcp", "remove", "web"]);
    assert!(!env.ok(&["mcp", "list"]).contains("web"));
    let out = env.run(&["mcp", "add", "bad__name", "--url", &server.url]);
    assert!(!out.status.success() && text(&out.stderr).contains("mcp.servers.bad__name"), "{}", text(&out.stderr));
}

struct NoSecrets;
impl SecretSource for NoSecrets {
    fn lookup(&self, _name: &str) -> Option<String> {
        None
    }
}

/// Library-level: one process, several calls on the same clients.
async fn clients_with(servers: &[(&str, McpServerConfig)]) -> (tempfile::TempDir, CallEnv) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("merlya.db")).await.unwrap();
    let servers: BTreeMap<String, McpServerConfig> = servers.iter().map(|(n, c)| (n.to_string(), c.clone())).collect();
    let clients = Arc::new(McpClients::new(servers, Arc::new(NoSecrets)));
    let env = CallEnv {
        clients,
        gate: ApprovalGate::new(Arc::new(AutoApprove), store.clone(), false),
        store,
        session_id: "test".into(),
        requested_by: "tester".into(),
        read_only: false,
        cancel: CancellationToken::new(),
    };
    (dir, env)
}

fn stdio(program: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        command: Some(program.into()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..McpServerConfig::default()
    }
}

fn long_operation(seconds: u64) -> serde_json::Map<String, Value> {
    json!({"duration": seconds, "steps": seconds}).as_object().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_mid_call_is_reported_and_restarted_on_next_use() {
    let pid_file = tempfile::NamedTempFile::new().unwrap();
    let pid_path: PathBuf = pid_file.path().into();
    let script = format!("echo $$ > {}; exec {}", pid_path.display(), bin("mcp-server-everything"));
    let (_dir, env) = clients_with(&[("everything", stdio("/bin/sh", &["-c", &script]))]).await;

    let killer = {
        let pid_path = pid_path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            let pid = std::fs::read_to_string(&pid_path).unwrap();
            Command::new("kill").args(["-9", pid.trim()]).status().unwrap();
        })
    };
    let started = Instant::now();
    let died = call(&env, "everything", "trigger-long-running-operation", long_operation(20)).await;
    killer.await.unwrap();
    assert!(matches!(died, Err(McpError::Died { .. })), "{died:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "the death was noticed at once");

    // The next use starts it again.
    let echo = json!({"message": "back"}).as_object().unwrap().clone();
    let again = call(&env, "everything", "echo", echo).await.unwrap();
    assert_eq!(again.text, "Echo: back");
    let audit = env.store.list_audit(&Default::default()).await.unwrap();
    assert!(audit.iter().any(|e| e.command.starts_with("everything.trigger-long-running-operation")
        && e.outcome == merlya::store::audit::AuditOutcome::Failed));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_time_out_and_are_cancelled_and_the_server_stays_usable() {
    let mut slow = stdio(&bin("mcp-server-everything"), &[]);
    slow.timeout = Some(1);
    let (_dir, env) = clients_with(&[("everything", slow)]).await;
    let started = Instant::now();
    let timed_out = call(&env, "everything", "trigger-long-running-operation", long_operation(10)).await;
    assert!(matches!(timed_out, Err(McpError::TimedOut { secs: 1, .. })), "{timed_out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));

    let mut cancelled_env = env.clone();
    cancelled_env.cancel = CancellationToken::new();
    let cancel = cancelled_env.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel.cancel();
    });
    let cancelled = call(&cancelled_env, "everything", "trigger-long-running-operation", long_operation(10)).await;
    assert!(matches!(cancelled, Err(McpError::Cancelled { .. })), "{cancelled:?}");

    // Still answering after both.
    let sum = json!({"a": 2, "b": 3}).as_object().unwrap().clone();
    let result = call(&env, "everything", "get-sum", sum).await.unwrap();
    assert!(result.text.contains('5'), "{}", result.text);
    let outcomes: Vec<_> =
        env.store.list_audit(&Default::default()).await.unwrap().into_iter().map(|e| e.outcome).collect();
    use merlya::store::audit::AuditOutcome;
    assert!(outcomes.contains(&AuditOutcome::TimedOut) && outcomes.contains(&AuditOutcome::Cancelled), "{outcomes:?}");
}

/// The agent end to end: the scripted model calls `everything.echo` itself, then has the execution
/// specialist try `fs.write_file`, which nobody can approve here.
#[test]
fn the_agent_calls_a_read_only_mcp_tool_and_its_write_is_refused_without_approval() {
    use support::agent::{fleet, is_main, json_out, run};
    use support::llm::{Recorded, ScriptedLlm, openai};

    let root = tempfile::tempdir().unwrap();
    let target = root.path().join("agent-note.txt");
    let write = json!({"path": target, "content": "from the agent"});
    let script = move |r: &Recorded| {
        let results = r.tool_results();
        if is_main(r) {
            match results.len() {
                0 => openai::tool_call("everything__echo", json!({"message": "ping"})),
                1 => openai::tool_call("delegate_execution", json!({"target": "web01", "task": "write the note"})),
                _ => openai::text(&format!("done: {}", results.join(" | ").replace('\n', " "))),
            }
        } else if results.is_empty() {
            openai::tool_call("fs__write_file", write.clone())
        } else {
            openai::text(results[0].lines().next().unwrap_or(""))
        }
    };
    let llm = ScriptedLlm::start(script);
    let env = support::agent::configured(
        &llm,
        "openai",
        &format!(
            "  stream: false\nmcp:\n  servers:\n    everything:\n      command: {}\n    fs:\n      command: {}\n      args: [\"{}\"]\n",
            bin("mcp-server-everything"),
            bin("mcp-server-filesystem"),
            root.path().display()
        ),
    );
    let key = support::TestKey::generate("");
    let _fleet = fleet(1, &key, &env);

    let out = run(&env, &["--format", "json", "echo ping, then write the note on web01"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = json_out(&out);
    assert!(!target.exists(), "the write was not approved");

    let requests = llm.requests();
    let main = requests.iter().find(|r| is_main(r)).unwrap();
    let tool = |r: &Recorded, name: &str| {
        r.body["tools"].as_array().unwrap().iter().find(|t| t["function"]["name"] == name).cloned()
    };
    let echo = tool(main, "everything__echo").expect("the read-only MCP tool is offered to the main agent");
    assert!(echo["function"]["description"].as_str().unwrap().starts_with("MCP tool everything.echo (read-only)"));
    assert!(echo["function"]["parameters"]["properties"]["message"].is_object(), "the server's schema: {echo}");
    assert!(tool(main, "fs__write_file").is_none(), "a change tool is not offered to the main agent");
    let specialist = requests.iter().find(|r| !is_main(r)).unwrap();
    assert!(tool(specialist, "fs__write_file").is_some(), "the execution specialist is offered it");

    let main_results = requests.iter().rev().find(|r| is_main(r)).unwrap().tool_results();
    assert_eq!(main_results[0], "MCP tool everything.echo answered:\nEcho: ping");
    let refused = &requests.iter().rev().find(|r| !is_main(r)).unwrap().tool_results()[0];
    assert!(refused.starts_with("REFUSED, not run: denied by nobody (no terminal)"), "{refused}");
    let calls = report["tool_calls"].as_array().unwrap();
    assert!(calls.iter().any(|c| c["host"] == "mcp:fs" && c["refused"].as_str().unwrap_or("").contains("denied")));

    let audit = json_of(&env.ok(&["audit", "list", "--format", "json"]));
    let rows = audit.as_array().unwrap();
    assert!(
        rows.iter().any(|e| e["host"] == "mcp:everything" && e["outcome"] == "ok" && e["requested_by"] == "agent@main")
    );
    assert!(
        rows.iter()
            .any(|e| e["host"] == "mcp:fs" && e["outcome"] == "denied" && e["requested_by"] == "agent@execution")
    );
}

/// A hostile server's escape sequences never reach the terminal raw: its tool list and its answer are shown
/// with control characters made visible.
#[test]
fn a_hostile_servers_escape_sequences_are_shown_not_interpreted() {
    let packages = support::mcp_packages();
    let script = packages.join(format!("merlya-hostile-{}.mjs", std::process::id()));
    std::fs::write(&script, include_str!("support/mcp_hostile_server.mjs")).unwrap();
    let env = TestEnv::new();
    env.ok(&["mcp", "add", "hostile", "--command", "node", "--arg", &script.display().to_string()]);
    let listed = env.run(&["mcp", "tools", "hostile"]);
    let called = env.run(&["mcp", "call", "hostile.evil"]);
    let _ = std::fs::remove_file(&script);
    for out in [&listed, &called] {
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert!(
            !out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07),
            "raw control bytes: {:?}",
            text(&out.stdout)
        );
    }
    assert!(text(&listed.stdout).contains("Harmless"), "{}", text(&listed.stdout));
    assert!(text(&called.stdout).contains("done"), "{}", text(&called.stdout));
}

/// A server given a token in its environment (from a variable with a secret-like name) cannot show it:
/// its answer and structured content are masked; a password passed as an argument never reaches the
/// audit log.
#[test]
fn a_servers_token_and_secret_arguments_are_masked_in_answers_and_the_audit_log() {
    let packages = support::mcp_packages();
    let script = packages.join(format!("merlya-leaky-{}.mjs", std::process::id()));
    std::fs::write(&script, include_str!("support/mcp_hostile_server.mjs")).unwrap();
    let env = TestEnv::new();
    let add = ["mcp", "add", "leaky", "--command", "node", "--arg", &script.display().to_string()];
    env.ok(&[&add[..], &["--env", "HOSTILE_TOKEN=${LEAKY_API_TOKEN}"]].concat());
    let called = env
        .merlya(&[
            "mcp",
            "call",
            "leaky.leak",
            "--format",
            "json",
            "--args",
            r#"{"repo":"ops","password":"hunter2-pw"}"#,
        ])
        .env("LEAKY_API_TOKEN", "tok-9f8e7d6c5b")
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&script);
    assert!(called.status.success(), "{}", text(&called.stderr));
    let shown = text(&called.stdout);
    assert!(shown.contains("the token is ***"), "{shown}");
    assert!(!shown.contains("tok-9f8e7d6c5b"), "{shown}");
    let audit = env.ok(&["audit", "list", "--format", "json"]);
    assert!(audit.contains("leaky.leak") && audit.contains("ops"), "{audit}");
    assert!(!audit.contains("hunter2-pw"), "{audit}");
    assert!(!env.database_text().contains("hunter2-pw"));
}
