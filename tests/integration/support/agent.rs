//! Running the agent binary against the scripted LLM and a fleet of real sshd.

use super::llm::{Recorded, ScriptedLlm};
use super::sshd::{Sshd, SshdOptions};
use super::{TestEnv, TestKey, text};

pub const KEY: &str = "sk-test-merlya-0123456789";

/// A home whose config points both roles at the scripted server.
pub fn configured(llm: &ScriptedLlm, provider: &str, extra: &str) -> TestEnv {
    let env = TestEnv::new();
    let (model, base) = match provider {
        "anthropic" => ("anthropic/claude-test", llm.url.clone()),
        _ => ("openai/gpt-test", format!("{}/v1", llm.url)),
    };
    let fast = model.replace("test", "fast");
    let config = format!(
        "model:\n  brain: {model}\n  fast: {fast}\n  base_url: {base}\n  api_key_env: MERLYA_TEST_LLM_KEY\n  retry_base_ms: 10\n  \
         prices:\n    gpt-test: {{ input_per_mtok: 1000, output_per_mtok: 2000 }}\n{extra}"
    );
    std::fs::write(env.merlya_home().join("config.yaml"), config).unwrap();
    env
}

pub fn run(env: &TestEnv, args: &[&str]) -> std::process::Output {
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    env.merlya(&full).env("MERLYA_TEST_LLM_KEY", KEY).output().unwrap()
}

pub fn json_out(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_str(&text(&out.stdout))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", text(&out.stdout), text(&out.stderr)))
}

pub fn is_main(r: &Recorded) -> bool {
    r.system().contains("You are merlya, an SRE")
}

pub fn fleet(n: usize, key: &TestKey, env: &TestEnv) -> Vec<Sshd> {
    let daemons: Vec<Sshd> = (0..n).map(|_| Sshd::start(SshdOptions::allowing(key))).collect();
    env.install_default_key(key);
    for (i, d) in daemons.iter().enumerate() {
        env.trust(d);
        env.add_host(&format!("web0{}", i + 1), d, &["--tag", "web"]);
    }
    daemons
}
