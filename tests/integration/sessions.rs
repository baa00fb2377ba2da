//! Sessions: every `merlya run` task is a stored conversation, continued from another process with
//! `--resume`; past its context tier a conversation is compacted by the fast model (the scripted model
//! asserts on what it receives); usage is kept per conversation and model.

use crate::support;

use serde_json::Value;
use support::agent::{configured, json_out, run};
use support::llm::{Recorded, ScriptedLlm, openai};

/// The text of every message of a request.
fn said(r: &Recorded) -> String {
    r.body["messages"]
        .as_array()
        .map(|m| m.iter().map(|m| m["content"].to_string()).collect::<Vec<_>>().join("\n"))
        .unwrap_or_default()
}

fn is_summary(r: &Recorded) -> bool {
    r.system().contains("Summarise the earlier part of an operations conversation")
}

#[test]
fn a_run_is_a_conversation_resumed_after_a_restart_and_compacted_past_its_tier() {
    let llm = ScriptedLlm::start(|r| {
        if is_summary(r) {
            return openai::text("SUMMARY: web01 disk was 97% full; logs rotated.");
        }
        let last = r.body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .unwrap_or_default();
        openai::text(&format!("answer to: {last}"))
    });
    let env = configured(&llm, "openai", "  stream: false\npolicy:\n  context_tier: minimal\n");
    let first = json_out(&run(&env, &["--format", "json", "question 1: is web01 full?"]));
    let id = first["conversation"].as_str().unwrap().to_string();
    assert_eq!(first["answer"], "answer to: question 1: is web01 full?");

    // Another process continues it: the model is given the first turn.
    let second = json_out(&run(&env, &["--format", "json", "--resume", &id, "question 2: and now?"]));
    assert_eq!(second["conversation"], id);
    let requests = llm.requests();
    let asked = said(requests.last().unwrap());
    assert!(asked.contains("question 1: is web01 full?") && asked.contains("answer to: question 1"), "{asked}");

    // Minimal tier (~10 messages): after enough turns the oldest are summarised by the fast model,
    // the newest kept as they are.
    for n in 3..=7 {
        json_out(&run(&env, &["--format", "json", "--resume", &id, &format!("question {n}: more?")]));
    }
    let requests = llm.requests();
    let summaries: Vec<&Recorded> = requests.iter().filter(|r| is_summary(r)).collect();
    assert!(!summaries.is_empty(), "the fast model summarised the older turns");
    assert_eq!(summaries[0].body["model"], "gpt-fast");
    assert!(said(summaries[0]).contains("question 1: is web01 full?"), "the oldest turns are what is summarised");
    let last = said(requests.iter().rev().find(|r| !is_summary(r)).unwrap());
    assert!(last.contains("SUMMARY: web01 disk was 97% full"), "{last}");
    assert!(!last.contains("question 1: is web01 full?"), "the summarised turns are not sent again: {last}");
    assert!(last.contains("question 6: more?") && last.contains("question 7: more?"), "{last}");

    // An unknown conversation is an error naming it.
    let out = run(&env, &["--resume", "c999", "hello"]);
    assert!(!out.status.success());
    assert!(support::text(&out.stderr).contains("no conversation c999"), "{}", support::text(&out.stderr));
}

#[test]
fn the_console_reopens_the_newest_conversation_with_resume() {
    let llm = ScriptedLlm::start(|_| openai::text("Disk is fine on web01."));
    let env = configured(&llm, "openai", "  stream: false\n");
    let first: Value = json_out(&run(&env, &["--format", "json", "how is the disk on web01?"]));
    let id = first["conversation"].as_str().unwrap().to_string();
    let cmd = format!(
        "MERLYA_HOME='{}' HOME='{}' USER=tester LANG=C.UTF-8 NO_COLOR=1 MERLYA_SETUP=skip MERLYA_TEST_LLM_KEY={} '{}' --resume; echo EXITED $?; sleep 60",
        env.merlya_home().display(),
        env.home().display(),
        support::agent::KEY,
        env!("CARGO_BIN_EXE_merlya"),
    );
    let tmux = support::tmux::Tmux::attach(format!("merlya-e2e-resume-{}", std::process::id()), &cmd, 130, 40);
    let screen = tmux.wait_for(&format!("Conversation {id}, continued."));
    assert!(screen.contains("how is the disk on web01?") && screen.contains("Disk is fine on web01."), "{screen}");
    tmux.chat("/conv");
    let screen = tmux.wait_for("Conversations (open one with /conv ID)");
    assert!(screen.contains(&format!("{id}  how is the disk on web01?  (2 messages")), "{screen}");
    tmux.escape();
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

/// A long output is cut for the model but kept whole in a raw log; the model reads back the line it
/// needs with `read_raw_log` and a grep, so no evidence is lost to trimming.
#[test]
fn a_cut_output_is_read_back_from_its_raw_log() {
    use serde_json::json;
    use support::agent::{fleet, is_main};
    let llm = ScriptedLlm::start(|r| {
        if is_main(r) {
            return if r.tool_results().is_empty() {
                openai::tool_call("delegate_diagnostic", json!({"target": "web01", "task": "find line 17"}))
            } else {
                openai::text(&format!("main saw: {}", r.tool_results().join(" | ")))
            };
        }
        let results = r.tool_results();
        match results.len() {
            0 => openai::tool_call("run_command", json!({"command": "seq 1 20000"})),
            1 => {
                let id = results[0].split("is raw log ").nth(1).map(|s| s[..13].to_string()).unwrap_or_default();
                openai::tool_call("read_raw_log", json!({"id": id, "grep": "^17$"}))
            }
            _ => openai::text(&format!("found {}", results[1])),
        }
    });
    let env = configured(&llm, "openai", "  stream: false\n");
    let key = support::TestKey::generate("");
    let _fleet = fleet(1, &key, &env);
    let out = json_out(&run(&env, &["--format", "json", "what is on line 17 of the output?"]));
    let answer = out["answer"].as_str().unwrap();
    assert!(answer.contains("found 17: 17"), "{answer}");
    let specialist = llm.requests().into_iter().filter(|r| !is_main(r)).nth(1).unwrap();
    let cut = &specialist.tool_results()[0];
    assert!(cut.len() < 5_000 && !cut.contains("\n17\n") && cut.contains("20000"), "the model got the tail only");
}
