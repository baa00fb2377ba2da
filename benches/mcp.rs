//! MCP numbers, each against a reference measured in the same run:
//!
//! - one `everything.echo` call through merlya's client (the gated, audited path every caller uses)
//!   against the same call through the official TypeScript SDK, both on server-everything over stdio;
//! - `merlya mcp serve` from process start to its `initialize` reply, against server-everything's.
//!
//! Run: `cargo bench --bench mcp` (BENCH_ROUNDS=200). Needs node and npm (the packages are installed
//! under the build's temporary folder, as the tests do).

mod common;
#[path = "../tests/integration/support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use common::median;
use merlya::approval::{ApprovalGate, AutoApprove};
use merlya::config::mcp::McpServerConfig;
use merlya::mcp::call::{CallEnv, call};
use merlya::mcp::client::McpClients;
use merlya::secrets::SecretSource;
use merlya::store::Store;

struct NoSecrets;
impl SecretSource for NoSecrets {
    fn lookup(&self, _name: &str) -> Option<String> {
        None
    }
}

fn merlya_echo(server: &str, rounds: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("merlya.db")).await.unwrap();
        let config = McpServerConfig { command: Some(server.into()), ..McpServerConfig::default() };
        let clients = Arc::new(McpClients::new([("everything".to_string(), config)].into(), Arc::new(NoSecrets)));
        let env = CallEnv {
            clients: clients.clone(),
            gate: ApprovalGate::new(Arc::new(AutoApprove), store.clone(), false),
            store,
            session_id: "bench".into(),
            requested_by: "bench".into(),
            read_only: false,
            cancel: Default::default(),
        };
        let mut times = Vec::new();
        for i in 0..rounds + 20 {
            let args = serde_json::json!({"message": format!("m{i}")}).as_object().unwrap().clone();
            let t = Instant::now();
            call(&env, "everything", "echo", args).await.unwrap();
            if i >= 20 {
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
        }
        clients.shutdown().await;
        median(times)
    })
}

fn sdk_echo(packages: &std::path::Path, server: &str, rounds: usize) -> f64 {
    let script = packages.join(format!("merlya-bench-echo-{}.mjs", std::process::id()));
    std::fs::write(&script, include_str!("mcp_echo.mjs")).unwrap();
    let out = Command::new("node").arg(&script).arg(server).arg(rounds.to_string()).output().unwrap();
    let _ = std::fs::remove_file(&script);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Milliseconds from spawning `program args` to the first line (the `initialize` reply) on its stdout.
fn time_to_initialize(program: &str, args: &[&str], home: &std::path::Path) -> f64 {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let times = (0..15)
        .map(|_| {
            let t = Instant::now();
            let mut child = Command::new(program)
                .args(args)
                .env("MERLYA_HOME", home)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            writeln!(child.stdin.as_mut().unwrap(), "{init}").unwrap();
            let mut line = String::new();
            BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let elapsed = t.elapsed().as_secs_f64() * 1000.0;
            assert!(line.contains("\"result\""), "{line}");
            drop(child.stdin.take());
            let _ = child.kill();
            let _ = child.wait();
            elapsed
        })
        .collect();
    median(times)
}

fn main() {
    let rounds: usize = std::env::var("BENCH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let packages = support::mcp_packages();
    let server = packages.join("node_modules/.bin/mcp-server-everything").display().to_string();
    let sdk = sdk_echo(&packages, &server, rounds);
    let ours = merlya_echo(&server, rounds);
    println!("| measure | reference | merlya | difference |");
    println!("|---|---:|---:|---:|");
    println!(
        "| one `everything.echo` call (median of {rounds}) | {sdk:.3} ms (TypeScript SDK) | {ours:.3} ms (gated, audited) | {:+.3} ms |",
        ours - sdk
    );
    let home = tempfile::tempdir().unwrap();
    let serve = time_to_initialize(env!("CARGO_BIN_EXE_merlya"), &["mcp", "serve"], home.path());
    let everything = time_to_initialize(&server, &[], home.path());
    println!(
        "| start to `initialize` reply (median of 15) | {everything:.1} ms (server-everything) | {serve:.1} ms (`merlya mcp serve`) | {:+.1} ms |",
        serve - everything
    );
}
