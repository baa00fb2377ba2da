//! One agent turn end to end, as the reference was measured: `merlya run
//! --yes "say hello"` against a scripted OpenAI-compatible server on
//! loopback (the same one the tests use), median wall time of 7 runs, peak
//! RSS, and the requests and bytes the model received.
//!
//! Run: `cargo bench --bench agent_turn`.

#[path = "common/mod.rs"]
mod common;
#[path = "../tests/integration/support/llm.rs"]
#[allow(dead_code)]
mod llm;

fn main() {
    let server = llm::ScriptedLlm::start(|_| llm::openai::text("Hello! All hosts look fine."));
    let home = tempfile::tempdir().expect("temporary MERLYA_HOME");
    std::fs::write(
        home.path().join("config.yaml"),
        format!("model:\n  brain: openai/gpt-bench\n  base_url: {}/v1\n  api_key_env: MERLYA_BENCH_KEY\n", server.url),
    )
    .expect("config.yaml");
    let env = [("MERLYA_BENCH_KEY", "sk-bench"), ("NO_COLOR", "1")];
    let (seconds, rss) = common::measure_with(&["run", "--yes", "say hello"], home.path(), &env);
    let requests = server.requests();
    let per_turn = requests.len() / 7;
    let bytes: usize = requests.iter().map(|r| r.raw.len()).sum::<usize>() / 7;
    let first = &requests[0];
    let tools = first.body["tools"].as_array().map(Vec::len).unwrap_or(0);
    let system = first.system().len();
    println!("{:<40} {:>12} {:>22}", "merlya run --yes \"say hello\"", "merlya", "reference (0.8.5)");
    println!("{:<40} {:>11.3}s {:>22}", "wall time (median of 7)", seconds, "2.4 s");
    println!("{:<40} {:>9.1} MiB {:>22}", "peak RSS", rss as f64 / 1024.0, "145 MiB");
    println!("{:<40} {:>12} {:>22}", "requests to the model per turn", per_turn, "2");
    println!("{:<40} {:>10.1} KB {:>22}", "request bodies per turn", bytes as f64 / 1000.0, "17.6 KB");
    println!("{:<40} {:>12} {:>22}", "tools advertised", tools, "12");
    println!("{:<40} {:>10.1} KB {:>22}", "system prompt", system as f64 / 1000.0, "3 KB");
}
