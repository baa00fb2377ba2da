//! merlya as an MCP server (`merlya mcp serve`), driven by merlya's own MCP
//! client and by an independent client on the official TypeScript SDK: the
//! handshake, tools/list with annotations, `list_hosts`, `run_readonly` of a
//! mutating command refused, `ask` answered by the scripted model, progress,
//! and a client cancellation that stops the run and its remote command.

use crate::support;

use serde_json::{Value, json};
use support::agent::{KEY, configured, fleet, is_main};
use support::llm::{Recorded, ScriptedLlm, openai};
use support::{TestEnv, TestKey, text};

/// The served agent's model: says hello; for a task about sleeping has a diagnostic specialist run
/// `sleep 30` on web01; for a task about the marker has the execution specialist propose `touch MARKER`.
fn script(marker: String) -> impl Fn(&Recorded) -> support::llm::Reply + Send + Sync {
    move |r: &Recorded| {
        let results = r.tool_results();
        let said = |word: &str| r.body["messages"].to_string().contains(word);
        if is_main(r) {
            match (said("sleep"), said("marker"), results.len()) {
                (true, _, 0) => openai::tool_call("delegate_diagnostic", json!({"target": "web01", "task": "sleep"})),
                (_, true, 0) => {
                    openai::tool_call("delegate_execution", json!({"target": "web01", "task": "create the marker"}))
                }
                (_, _, 0) => openai::text("hello from the served agent"),
                _ => openai::text(&results[0].replace('\n', " ")),
            }
        } else if results.is_empty() && said("create the marker") {
            openai::tool_call(
                "propose_change",
                json!({"summary": "create the marker", "command": format!("touch {marker}")}),
            )
        } else if results.is_empty() {
            openai::tool_call("run_command", json!({"command": "sleep 30"}))
        } else {
            openai::text(&results[0])
        }
    }
}

fn json_of(out: &str) -> Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn merlya_serves_its_agent_to_its_own_mcp_client() {
    let llm = ScriptedLlm::start(script(String::new()));
    // Speelka's options: the tool's name and description, the system prompt, the tools it may use.
    let serve = "mcp:\n  serve:\n    tool_name: ops_agent\n    tool_description: The on-call agent.\n    \
                 system_prompt: You are merlya, an SRE answering another agent. Be brief.\n    tools: [list_hosts]\n";
    // localhost open to the served tools, so that a read has a host to run on.
    let server = configured(&llm, "openai", &format!("  stream: false\n{serve}policy:\n  agent_localhost: true\n"));
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
        [("ops_agent".to_string(), false), ("list_hosts".to_string(), true), ("run_readonly".to_string(), true)]
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
    // A proven read returns each host's output, not only how many hosts answered.
    let args = r#"{"targets": "localhost", "command": "uname -s"}"#;
    let read = client.ok(&["mcp", "call", "merlya.run_readonly", "--args", args]);
    assert!(read.contains("1/1 hosts succeeded") && read.contains("== localhost (exit 0) ==\nLinux"), "{read}");
    // Bounded: a host printing 600 KB gives its last 16 KiB (the end of the output, not its start).
    let args = r#"{"targets": "localhost", "command": "seq 1 100000"}"#;
    let long = client.ok(&["mcp", "call", "merlya.run_readonly", "--args", args]);
    assert!(long.len() < 20 * 1024, "{} bytes returned", long.len());
    assert!(long.trim_end().ends_with("\n100000") && !long.contains("\n1\n2\n3\n"), "{long}");
    // Masked and made visible: a secret's shape is masked, an escape sequence shown, not sent raw.
    let args = r#"{"targets": "localhost", "command": "printf 'PGPASSWORD=s3cret-77 \\033[2J done\\n'"}"#;
    let masked = client.ok(&["mcp", "call", "merlya.run_readonly", "--args", args]);
    assert!(masked.contains("PGPASSWORD=***") && !masked.contains("s3cret-77"), "{masked}");
    assert!(!masked.contains('\u{1b}') && masked.contains("done"), "{masked}");

    // `ask` may change things, so merlya's client asks for it: refused without --yes, answered with it.
    let out = client.run(&["mcp", "call", "merlya.ops_agent", "--args", r#"{"task": "say hello"}"#]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let answer = client.ok(&["mcp", "call", "merlya.ops_agent", "--args", r#"{"task": "say hello"}"#, "--yes"]);
    assert_eq!(answer.trim(), "hello from the served agent");
    let requests = llm.requests();
    let asked = requests.iter().find(|r| r.body["messages"].to_string().contains("say hello")).unwrap();
    assert_eq!(asked.system(), "You are merlya, an SRE answering another agent. Be brief.");
    let offered: Vec<&str> =
        asked.body["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap()).collect();
    assert_eq!(offered, ["list_hosts"], "only the tools mcp.serve.tools names");
    assert_eq!(tools[0]["description"], "The on-call agent.");
}

#[test]
fn an_independent_typescript_client_lists_calls_and_cancels() {
    let packages = support::mcp_packages();
    let dir = tempfile::tempdir().unwrap();
    support::give_to_test_user(dir.path());
    let marker = dir.path().join("marker");
    let llm = ScriptedLlm::start(script(marker.display().to_string()));
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

    // Elicitation: the client's person saw the change, refused it once (nothing ran), then approved it.
    let asked = seen["elicitations"].as_array().unwrap();
    assert_eq!(asked.len(), 2, "{seen}");
    assert!(asked[0].as_str().unwrap().contains(&format!("touch {}", marker.display())), "{seen}");
    assert!(seen["denied"].as_str().unwrap().contains("DENIED by the MCP client's user (elicitation)"), "{seen}");
    assert!(marker.exists(), "the approved change ran on web01");
    let audit = json_of(&server.ok(&["audit", "list", "--format", "json"]));
    let touches: Vec<(&str, &str)> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["command"].as_str().unwrap().starts_with("touch "))
        .map(|e| (e["outcome"].as_str().unwrap(), e["approved_by"].as_str().unwrap()))
        .collect();
    assert_eq!(
        touches,
        [("denied", "the MCP client's user (elicitation)"), ("ok", "the MCP client's user (elicitation)")]
    );
}

/// Starts `mcp serve --http` on a free loopback port; returns the child and the URL once it listens.
fn serve_http(server: &TestEnv, token: Option<&str>) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let port = support::sshd::free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut args = vec!["mcp", "serve", "--http", &addr];
    let mut command = server.merlya(&[]);
    if let Some(token) = token {
        args.extend(["--token-env", "MCPTEST_TOKEN"]);
        command.env("MCPTEST_TOKEN", token);
    }
    let mut child = command.args(&args).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let url = format!("http://{addr}/mcp");
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    while !said.contains(&url) {
        let before = said.len();
        reader.read_line(&mut said).unwrap();
        assert!(said.len() > before, "the server ended before listening: {said}");
    }
    (child, url)
}

/// The HTTP status curl gets for a ping with these extra arguments.
fn curl_status(url: &str, extra: &[&str]) -> String {
    let status = std::process::Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", url])
        .args(["-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream"])
        .args(extra)
        .args(["-d", r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#])
        .output()
        .unwrap();
    text(&status.stdout)
}

#[test]
fn the_http_server_always_needs_a_bearer_token() {
    let llm = ScriptedLlm::start(script(String::new()));
    let server = configured(&llm, "openai", "  stream: false\n");
    server.ok(&["hosts", "add", "web01", "--hostname", "192.0.2.10"]);

    // A guessable token is refused before anything listens.
    let out = server
        .merlya(&["mcp", "serve", "--http", "127.0.0.1:0", "--token-env", "T"])
        .env("T", "short")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("use at least 16"), "{}", text(&out.stderr));

    // No token given, on loopback too: one is generated into a 0600 file, never printed.
    let (mut child, url) = serve_http(&server, None);
    let token_file = server.merlya_home().join("mcp-http.token");
    let generated = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    assert_eq!(generated.len(), 64);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(curl_status(&url, &[]), "401", "a local process without the token is refused");
    assert_eq!(curl_status(&url, &["-H", "Authorization: Bearer wrong-token-0123456789"]), "401");
    let client = TestEnv::new();
    client.ok(&["mcp", "add", "remote", "--url", &url, "--header", "Authorization=Bearer ${MCPTEST_TOKEN}"]);
    let listed =
        client.merlya(&["mcp", "call", "remote.list_hosts"]).env("MCPTEST_TOKEN", &generated).output().unwrap();
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(text(&listed.stdout).contains("web01"));
    let _ = child.kill();
    let _ = child.wait();

    // A chosen token: clients without it get 401, merlya's client with the header is served.
    let token = "s3cret-token-0123456789";
    let (mut child, url) = serve_http(&server, Some(token));
    assert_eq!(curl_status(&url, &[]), "401");
    client.ok(&["mcp", "remove", "remote"]);
    client.ok(&["mcp", "add", "remote", "--url", &url, "--header", "Authorization=Bearer ${MCPTEST_TOKEN}"]);
    let listed = client.merlya(&["mcp", "call", "remote.list_hosts"]).env("MCPTEST_TOKEN", token).output().unwrap();
    assert!(listed.status.success(), "{}", text(&listed.stderr));
    assert!(text(&listed.stdout).contains("web01"));
    let wrong = client.merlya(&["mcp", "call", "remote.list_hosts"]).env("MCPTEST_TOKEN", "wrong").output().unwrap();
    assert!(!wrong.status.success(), "a wrong token is refused");
    // The token is a secret: masked wherever the client shows the server's words.
    assert!(!text(&wrong.stderr).contains(token));
    let _ = child.kill();
    let _ = child.wait();
}

/// Sessions a client never closes are bounded: past `mcp.serve.max_sessions` a new one gets 503,
/// and one unused for `mcp.serve.session_idle_secs` is closed (its id then unknown), which makes
/// room again.
#[test]
fn idle_http_sessions_are_closed_and_open_ones_are_capped() {
    let llm = ScriptedLlm::start(script(String::new()));
    let server = configured(&llm, "openai", "  stream: false\n");
    let config = server.merlya_home().join("config.yaml");
    let mut text_config = std::fs::read_to_string(&config).unwrap();
    text_config.push_str("mcp:\n  serve:\n    max_sessions: 2\n    session_idle_secs: 2\n");
    std::fs::write(&config, text_config).unwrap();
    let token = "s3cret-token-0123456789";
    let (mut child, url) = serve_http(&server, Some(token));
    let auth = format!("Authorization: Bearer {token}");
    // One `initialize` (a new session): the status and the session id it was given.
    let open = || {
        let out = std::process::Command::new("curl")
            .args(["-s", "-D", "-", "-o", "/dev/null", "-X", "POST", &url])
            .args(["-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream"])
            .args(["-H", &auth])
            .args(["-d", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#])
            .output()
            .unwrap();
        let head = text(&out.stdout);
        let status = head.split_whitespace().nth(1).unwrap_or_default().to_string();
        let id = head
            .lines()
            .find_map(|l| l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|_| l[15..].trim().to_string()));
        (status, id)
    };
    let (first, id) = open();
    assert_eq!(first, "200");
    let id = id.expect("a session id");
    assert_eq!(open().0, "200");
    assert_eq!(open().0, "503", "the third open session is refused while two are open");
    // Unused past the idle limit: closed, so new sessions fit again and the old id is gone.
    std::thread::sleep(std::time::Duration::from_secs(4));
    assert_eq!(open().0, "200");
    let ping = curl_status(&url, &["-H", &auth, "-H", &format!("Mcp-Session-Id: {id}")]);
    assert_eq!(ping, "404", "the idle session was closed");
    let _ = child.kill();
    let _ = child.wait();
}
