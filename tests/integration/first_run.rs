//! The first run, through the real binary in tmux against the scripted LLM: `/setup` opens by itself,
//! asks the provider, its base URL, the key and then a model offered from the provider's own list
//! (`GET /v1/models`, OpenAI and Anthropic formats); the chosen model is used by the very next chat
//! message (no restart) and the "no model" note is gone. Where the key went is said as the keyring
//! layer reports it: the Secret Service (gnome-keyring on a D-Bus session of its own) keeps it for
//! the next start; with no usable keyring it is in memory and the console says the next start will
//! not have it.

use crate::support;

use std::time::{Duration, Instant};

use support::TestEnv;
use support::llm::{Recorded, Reply, ScriptedLlm, anthropic, openai};
use support::tmux::Tmux;

const NO_MODEL: &str = "No model is configured";

/// `~/.ssh/config` with two hosts, to import at the end.
fn with_ssh_config(env: &TestEnv) {
    std::fs::write(
        env.home().join(".ssh/config"),
        "Host alpha\n  HostName 192.0.2.21\nHost beta\n  HostName 192.0.2.22\n",
    )
    .unwrap();
}

/// Answers the inventory imports the setup offers last (the test HOME's ~/.ssh/config: yes, this
/// machine's own files: no) until it says it is done.
fn finish_imports(tmux: &Tmux) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let screen = tmux.screen();
        if screen.contains("Setup done") {
            return screen;
        }
        assert!(Instant::now() < deadline, "setup did not finish:\n{screen}");
        if screen.contains("Import ") && screen.contains(".ssh/config") && screen.contains("alpha (192.0.2.21)") {
            tmux.keys(&["y"]);
        } else if screen.contains("Import ") && screen.contains("?") {
            tmux.keys(&["n"]);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// Sends a chat message and waits for the scripted answer.
fn ask(tmux: &Tmux, text: &str, answer: &str) -> String {
    tmux.chat(text);
    tmux.wait_for(answer);
    // The turn is over (a `q` while it is still being wound up asks first).
    tmux.wait_until("the turn to end", |s| !s.contains("… working"))
}

/// The chat requests the scripted LLM received (not the model lists).
fn chats(llm: &ScriptedLlm) -> Vec<Recorded> {
    llm.requests().into_iter().filter(|r| r.method == "POST").collect()
}

fn no_file_holds(env: &TestEnv, secret: &str) {
    for file in support::walk(&env.merlya_home()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{} holds the key", file.display());
    }
}

/// With a Secret Service: an OpenAI-compatible gateway, its model list offered and narrowed, the key
/// stored where the next start finds it, the chosen model in the next chat request.
#[test]
fn first_run_with_a_keyring_offers_the_gateways_models_and_uses_the_chosen_one_at_once() {
    let env = TestEnv::new();
    with_ssh_config(&env);
    let llm = ScriptedLlm::start(|r| match r.path.as_str() {
        "/v1/models" => openai::models(&["model-alpha", "model-beta", "text-embed-1"]),
        _ => openai::text("Answer from model-beta."),
    });
    let runtime = env.dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    support::set_mode(&runtime, 0o700);
    let m = env!("CARGO_BIN_EXE_merlya");
    let inner = format!(
        "printf %s unlock-pw | gnome-keyring-daemon --daemonize --unlock --components=secrets >/dev/null; \
         export MERLYA_HOME={home} HOME={user_home} XDG_RUNTIME_DIR={runtime} USER=tester LANG=C.UTF-8 NO_COLOR=1; \
         {m}; echo EXITED $?; echo KEY=$({m} secret get llm:custom:api_key); read _go; {m}; sleep 60",
        home = env.merlya_home().display(),
        user_home = env.home().display(),
        runtime = runtime.display(),
    );
    let cmd = format!("dbus-run-session -- sh -c '{inner}'");
    let tmux = Tmux::attach(format!("merlya-e2e-first-keyring-{}", std::process::id()), &cmd, 130, 40);
    tmux.wait_for("Language of the console:");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Which model server?");
    for _ in 0..4 {
        tmux.keys(&["Down"]);
    }
    tmux.keys(&["Enter"]);
    tmux.wait_for("Base URL of openai-compatible");
    tmux.type_text(&format!("{}/v1", llm.url));
    tmux.keys(&["Enter"]);
    tmux.wait_for("API key for openai-compatible");
    tmux.type_text("sk-first-run-7");
    let screen = tmux.screen();
    assert!(!screen.contains("sk-first-run-7"), "the key is never drawn:\n{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("3 model(s) offered by");
    assert!(screen.contains("model-alpha") && screen.contains("model-beta"), "{screen}");
    let listed = llm.requests().into_iter().find(|r| r.path == "/v1/models").expect("the list was asked for");
    assert_eq!(listed.method, "GET");
    assert_eq!(listed.header("authorization"), Some("Bearer sk-first-run-7"), "asked with the key typed");
    tmux.type_text("beta");
    tmux.wait_until("the list narrowed", |s| s.contains("▸ model-beta") && !s.contains("model-alpha"));
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("Model set: openai-compatible/model-beta");
    assert!(screen.contains("Secret Service"), "{screen}");
    let screen = finish_imports(&tmux);
    assert!(!screen.contains(NO_MODEL), "the note is gone:\n{screen}");
    assert!(!screen.contains("no model"), "the chat's title says a model is set:\n{screen}");
    // The agent works at once, with the model chosen and the key stored.
    ask(&tmux, "hello", "Answer from model-beta.");
    let chat = chats(&llm).pop().expect("a chat request");
    assert_eq!(chat.path, "/v1/chat/completions");
    assert_eq!(chat.body["model"], "model-beta");
    assert_eq!(chat.header("authorization"), Some("Bearer sk-first-run-7"));
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    tmux.wait_for("KEY=sk-first-run-7");
    // The next start has the model and the key: no note, no setup. (It waits for Enter, so the
    // lines above are read before its screen covers them.)
    tmux.keys(&["Enter"]);
    tmux.wait_alternate_screen(true);
    let screen = tmux.wait_for("Inventory · 3");
    assert!(!screen.contains(NO_MODEL) && !screen.contains("Language of the console"), "{screen}");
    let before = chats(&llm).len();
    ask(&tmux, "again", "Answer from model-beta.");
    assert!(chats(&llm).len() > before);
    let config = std::fs::read_to_string(env.merlya_home().join("config.yaml")).unwrap();
    assert!(config.contains("brain: openai-compatible/model-beta"), "{config}");
    assert!(config.contains(&format!("base_url: {}/v1", llm.url)), "{config}");
    no_file_holds(&env, "sk-first-run-7");
}

/// With no usable keyring (no D-Bus session, a kernel keyring nobody may write to): Anthropic's model
/// list, the key kept in memory and the console saying the next start will not have it.
#[test]
fn first_run_without_a_keyring_says_the_key_will_not_survive_and_still_works_now() {
    let env = TestEnv::new();
    let llm = ScriptedLlm::start(|r: &Recorded| -> Reply {
        match r.path.as_str() {
            "/v1/models" => anthropic::models(&["claude-test-large", "claude-test-small"]),
            _ => anthropic::text("Answer from claude-test-small."),
        }
    });
    let m = env!("CARGO_BIN_EXE_merlya");
    let inner = format!(
        "keyctl setperm @s 0; unset DBUS_SESSION_BUS_ADDRESS; \
         export MERLYA_HOME={home} HOME={user_home} USER=tester LANG=C.UTF-8 NO_COLOR=1; \
         {m}; echo EXITED $?; sleep 60",
        home = env.merlya_home().display(),
        user_home = env.home().display(),
    );
    let cmd = format!("keyctl session - sh -c '{inner}'");
    let tmux = Tmux::attach(format!("merlya-e2e-first-memory-{}", std::process::id()), &cmd, 130, 40);
    tmux.wait_for("Language of the console:");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Which model server?");
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("https://api.anthropic.com");
    tmux.keys(&["C-u"]);
    tmux.type_text(&llm.url);
    tmux.keys(&["Enter"]);
    tmux.wait_for("API key for anthropic");
    tmux.type_text("sk-ant-mem-3");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("2 model(s) offered by");
    assert!(screen.contains("claude-test-large") && screen.contains("claude-test-small"), "{screen}");
    let listed = llm.requests().into_iter().find(|r| r.path == "/v1/models").expect("the list was asked for");
    assert_eq!(listed.header("x-api-key"), Some("sk-ant-mem-3"));
    assert!(listed.header("anthropic-version").is_some());
    tmux.keys(&["Down"]);
    tmux.keys(&["Enter"]);
    tmux.wait_for("Model set: anthropic/claude-test-small");
    let screen = tmux.wait_for("in memory only");
    let said = screen.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(said.contains("NOT have it") && said.contains("model.api_key_env"), "{screen}");
    let screen = finish_imports(&tmux);
    assert!(!screen.contains(NO_MODEL), "the note is gone:\n{screen}");
    ask(&tmux, "hello", "Answer from claude-test-small.");
    let chat = chats(&llm).pop().expect("a chat request");
    assert_eq!(chat.path, "/v1/messages");
    assert_eq!(chat.body["model"], "claude-test-small");
    assert_eq!(chat.header("x-api-key"), Some("sk-ant-mem-3"));
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    no_file_holds(&env, "sk-ant-mem-3");
}
