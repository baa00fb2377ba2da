//! The console's inventory actions and conversations, driven through the real
//! binary in tmux: add, check, edit and delete hosts against a real sshd
//! (results read back through the CLI from the same SQLite file), and a
//! follow-up question that carries the conversation to the scripted LLM.

use crate::support;

use serde_json::Value;
use support::tmux::Tmux;
use support::{TEST_USER, TestEnv};

fn host_json(env: &TestEnv, name: &str) -> Option<Value> {
    let out = env.merlya(&["hosts", "show", name, "--format", "json"]).output().unwrap();
    out.status.success().then(|| serde_json::from_slice(&out.stdout).expect("hosts show prints JSON"))
}

/// Opens the inventory filter, types `text`, and leaves the filter.
fn filter(tmux: &Tmux, text: &str) {
    tmux.escape();
    tmux.keys(&["/"]);
    tmux.type_text(text);
    tmux.keys(&["Enter"]);
}

#[test]
fn inventory_adds_checks_edits_and_deletes_hosts_against_a_real_sshd() {
    let (_key, sshd, env) = support::one_trusted_host("web01", &["--tag", "web"]);
    let tmux = Tmux::start("inventory", &env, 140, 40);
    tmux.wait_for("Inventory · 2");

    // Add web02 (the same daemon) through the form.
    tmux.keys(&["1", "n"]);
    tmux.wait_for("Add a host");
    tmux.type_text("web02");
    tmux.keys(&["Tab"]);
    tmux.type_text("127.0.0.1");
    tmux.keys(&["Tab", "C-u"]);
    tmux.type_text(&sshd.port.to_string());
    tmux.keys(&["Tab"]);
    tmux.type_text(TEST_USER);
    tmux.keys(&["Tab"]);
    tmux.type_text("web,canary");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Inventory · 3");
    let web02 = host_json(&env, "web02").expect("web02 is in the database");
    assert_eq!(web02["port"], u64::from(sshd.port));
    assert_eq!(web02["tags"], serde_json::json!(["canary", "web"]));

    // Check both web hosts: real logins, results recorded with the time.
    let logins = sshd.accepted_logins();
    filter(&tmux, "@web");
    tmux.keys(&["a", "c"]);
    tmux.wait_for("web01 is reachable");
    tmux.wait_for("web02 is reachable");
    assert!(sshd.accepted_logins() > logins, "the check logged in");
    for name in ["web01", "web02"] {
        let host = host_json(&env, name).unwrap();
        assert_eq!(host["reachable"], true, "{name}: {host}");
        assert!(host["last_check"].as_str().is_some_and(|t| t.starts_with("20")), "{name}: {host}");
    }

    // A host on a closed port is reported unreachable, then deleted after a confirmation.
    tmux.escape();
    tmux.keys(&["n"]);
    tmux.type_text("dead");
    tmux.keys(&["Tab"]);
    tmux.type_text("127.0.0.1");
    tmux.keys(&["Tab", "C-u"]);
    tmux.type_text("1");
    tmux.keys(&["Enter"]);
    tmux.wait_for("Inventory · 4");
    filter(&tmux, "dead");
    tmux.keys(&["c"]);
    tmux.wait_for("dead is unreachable");
    assert_eq!(host_json(&env, "dead").unwrap()["reachable"], false);
    tmux.keys(&["d"]);
    let screen = tmux.wait_for("Delete dead from the inventory?");
    assert!(screen.contains("[y/o] yes"), "{screen}");
    tmux.keys(&["y"]);
    tmux.escape();
    tmux.wait_for("Inventory · 3");
    assert!(host_json(&env, "dead").is_none(), "deleted from the database");

    // Edit web02's address; the change is saved in place.
    filter(&tmux, "web02");
    tmux.keys(&["e"]);
    tmux.wait_for("Edit web02");
    tmux.keys(&["Tab", "C-u"]);
    tmux.type_text("localhost");
    tmux.keys(&["Enter"]);
    tmux.wait_for("host web02 saved");
    assert_eq!(host_json(&env, "web02").unwrap()["hostname"], "localhost");
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn a_follow_up_question_carries_the_conversation_and_conv_reopens_it() {
    use support::llm::{ScriptedLlm, openai};
    let llm = ScriptedLlm::start(|r| {
        let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
        let last_user = messages.iter().rev().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str());
        let last_user = last_user.unwrap_or_default().to_string();
        if last_user.starts_with("second") {
            openai::sse_text(&["Second ", "answer."])
        } else if last_user.starts_with("third") {
            openai::sse_text(&["Third answer."])
        } else {
            openai::sse_text(&["First answer: **web01** is fine."])
        }
    });
    let env = TestEnv::new();
    let tmux = Tmux::start_with_llm("conv", &env, &llm.url, 130, 40);
    tmux.wait_for("Inventory · 1");
    let ask = |text: &str, answer: &str| {
        tmux.chat(text);
        tmux.wait_for(answer)
    };
    let screen = ask("first question: is web01 ok?", "First answer: web01 is fine.");
    assert!(!screen.contains("**"), "Markdown is rendered, not shown raw:\n{screen}");
    ask("second question: and its disk?", "Second answer.");
    // Chat requests only: the start-up check also lists the models once.
    let chats = || llm.requests().into_iter().filter(|r| r.path.ends_with("/chat/completions")).collect::<Vec<_>>();
    let requests = chats();
    let second = &requests[1].raw;
    assert!(
        second.contains("first question: is web01 ok?") && second.contains("First answer: **web01** is fine."),
        "the follow-up carries the first turn: {second}"
    );

    tmux.chat("/conv");
    let screen = tmux.wait_for("Conversations (open one with /conv ID)");
    assert!(screen.contains("c1  first question: is web01 ok?  (4 messages"), "{screen}");

    tmux.chat("/new");
    tmux.wait_for("New conversation.");
    ask("third question: anything else?", "Third answer.");
    let third = &chats()[2].raw;
    assert!(!third.contains("first question"), "a new conversation starts empty: {third}");

    tmux.chat("/conv c1");
    // The chat was emptied by /new: the old questions are back only if c1 was loaded.
    let screen = tmux.wait_for("second question: and its disk?");
    assert!(!screen.contains("third question"), "{screen}");
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn slash_secret_stores_a_hidden_value_in_the_kernel_keyring() {
    let env = TestEnv::new();
    let m = env!("CARGO_BIN_EXE_merlya");
    let inner = format!(
        "export MERLYA_HOME={home} HOME={user_home} USER=tester LANG=C.UTF-8 NO_COLOR=1 MERLYA_SETUP=skip MERLYA_SECRETS_BACKEND=keyring; \
         {m}; echo EXITED $?; echo VALUE=$({m} secret get api:web01:token); sleep 60",
        home = env.merlya_home().display(),
        user_home = env.home().display(),
    );
    let cmd = format!("keyctl session - sh -c '{inner}'");
    let tmux = Tmux::attach(format!("merlya-e2e-secret-{}", std::process::id()), &cmd, 120, 34);
    tmux.wait_for("Inventory · 1");
    tmux.chat("/secret set api:web01:token");
    tmux.wait_for("Secret api:web01:token");
    tmux.type_text("s3cr3t-value");
    let screen = tmux.wait_for("••••••••••••");
    assert!(!screen.contains("s3cr3t-value"), "the value is never drawn:\n{screen}");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("api:web01:token stored in the kernel keyring");
    assert!(!screen.contains("keyring keyring"), "{screen}");
    tmux.chat("/secret list");
    let screen = tmux.wait_for("Secrets (1):");
    assert!(screen.contains("api:web01:token  (kernel keyring"), "{screen}");
    assert!(!screen.contains("s3cr3t-value"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
    tmux.wait_for("VALUE=s3cr3t-value");
    for file in support::walk(&env.merlya_home()) {
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains("s3cr3t-value"), "{} holds the secret", file.display());
    }
}

#[test]
fn a_line_selection_reaches_the_clipboard_through_osc52() {
    let env = TestEnv::new();
    let tmux = Tmux::start("copy", &env, 120, 34);
    // tmux keeps what applications put on the clipboard (OSC 52) as a paste buffer.
    tmux.tmux(&["set-option", "-g", "set-clipboard", "on"]);
    tmux.wait_for("Inventory · 1");
    tmux.keys(&["!"]);
    tmux.type_text("printf 'one\\ntwo\\nthree\\n'");
    tmux.keys(&["Enter"]);
    tmux.wait_for("✓ localhost · exit 0");
    // From the newest line (the run's summary): up past the outcome to "three", start the
    // selection, extend it to "one", copy.
    tmux.keys(&["2", "k", "k", "v", "k", "k"]);
    tmux.wait_for("selecting 3 lines");
    tmux.keys(&["y"]);
    tmux.wait_for("copied 3 lines");
    assert_eq!(tmux.tmux(&["show-buffer"]), "one\ntwo\nthree");
    // The layout follows the terminal's size.
    tmux.tmux(&["resize-window", "-t", "0", "-x", "72", "-y", "20"]);
    // The redraw after a resize can be captured half-way: wait for the whole frame.
    let screen = tmux.wait_until("the 72-column frame with its status bar", |screen| {
        screen.contains("╭ Inventory · 1 ───────╮") && screen.lines().last().is_some_and(|l| l.contains("OUTPUT"))
    });
    let lines: Vec<&str> = screen.lines().collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 72), "{screen}");
    assert!(lines.last().is_some_and(|l| l.contains("OUTPUT")), "the status bar is on the last row:\n{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

/// Runbooks in the console without a model: `/skill NAME TARGETS`, and a chat message a skill answers
/// (naming a host of the inventory) runs it too; the findings table lands in the chat.
#[test]
fn skills_run_from_the_console_and_from_a_chat_message_without_a_model() {
    let env = TestEnv::new();
    let tmux = Tmux::start("skills", &env, 150, 45);
    tmux.wait_for("Inventory · 1");
    tmux.chat("/skill");
    let screen = tmux.wait_for("incident_triage");
    assert!(screen.contains("service_status"), "{screen}");

    tmux.chat("/skill disk_usage localhost");
    let screen = tmux.wait_for("1 host(s), ");
    assert!(screen.contains("host(s) ok: localhost") || screen.contains("culprits:"), "{screen}");

    tmux.chat("/new");
    tmux.wait_for("New conversation.");
    tmux.chat("how full are the disks on localhost?");
    let screen = tmux.wait_for("disk_usage 1.0");
    assert!(!screen.contains("no model is configured"), "routed to the skill, not the agent: {screen}");

    // `/report FILE`: this session's incident report, with the runbook's audited commands.
    let report = env.dir.path().join("incident.md");
    tmux.chat(&format!("/report {}", report.display()));
    tmux.wait_for("Incident report (");
    let written = std::fs::read_to_string(&report).unwrap();
    assert!(written.starts_with("# Incident report — session ") && written.contains("df -P"), "{written}");
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}
