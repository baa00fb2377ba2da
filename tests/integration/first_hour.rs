//! The first hour (issue 27), through the real binary in tmux: the chat follows the bottom and counts
//! what arrives while the person reads above; notifications take rows of their own and hide no pane
//! text; the Pipeline pane selects the run the approval modal asks about; the unknown keys of hosts
//! that connect together are listed in one modal, each with its fingerprint, and trusted at once.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use support::llm::{ScriptedLlm, openai};
use support::tmux::Tmux;
use support::{Sshd, SshdOptions, TestEnv, TestKey};

/// The number in "question N" of the newest question a chat request carries.
fn question_number(r: &support::llm::Recorded) -> Option<usize> {
    let messages = r.body["messages"].as_array()?;
    let last = messages.iter().rev().find(|m| m["role"] == "user")?;
    last["content"].as_str()?.strip_prefix("question ")?.trim().parse().ok()
}

#[test]
fn the_chat_follows_the_newest_answer_and_counts_what_arrives_while_scrolled_up() {
    // The fourth answer waits until the test lets it go: the person has scrolled up by then.
    let release = Arc::new(AtomicBool::new(false));
    let held = release.clone();
    let llm = ScriptedLlm::start(move |r| {
        if r.path.ends_with("/models") {
            return openai::models(&["gpt-test"]);
        }
        let Some(n) = question_number(r) else { return openai::sse_text(&["Noted."]) };
        if n == 4 {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !held.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let items: Vec<String> = (1..=5).map(|k| format!("- answer {n} point {k}\n")).collect();
        let items: Vec<&str> = items.iter().map(String::as_str).collect();
        openai::sse_text(&items)
    });
    let env = TestEnv::new();
    let tmux = Tmux::start_with_llm("follow", &env, &llm.url, 130, 40);
    tmux.wait_for("Inventory · 1");
    let ask = |n: usize| {
        tmux.keys(&["3", "i"]);
        tmux.type_text(&format!("question {n}"));
        tmux.keys(&["Enter"]);
    };
    for n in 1..=3 {
        ask(n);
        // The newest answer is on screen whole, without a key: the chat followed it.
        let screen = tmux.wait_for(&format!("answer {n} point 5"));
        assert!(screen.contains(&format!("answer {n} point 1")), "{screen}");
        tmux.wait_until("the turn to end", |s| !s.contains("… working"));
    }
    let screen = tmux.screen();
    eprintln!("{screen}");
    assert!(!screen.contains("answer 1 point 1"), "three answers overflow the chat:\n{screen}");

    // A fourth question; while its answer is on its way, the person scrolls up.
    ask(4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !llm.requests().iter().any(|r| question_number(r) == Some(4)) {
        assert!(Instant::now() < deadline, "the fourth question reached the model");
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.keys(&["PPage"]);
    let screen = tmux.wait_until("the chat scrolled up", |s| !s.contains("question 4"));
    eprintln!("{screen}");
    release.store(true, Ordering::SeqCst);
    // The answer arrived below: the view stays where the person reads, the border counts it.
    let screen = tmux.wait_for("new · G follows");
    eprintln!("{screen}");
    assert!(screen.contains("↓ 1 new · G follows"), "{screen}");
    assert!(!screen.contains("answer 4 point"), "the view stayed where the person was reading:\n{screen}");
    // The follow key brings the newest answer back and the count goes.
    tmux.keys(&["G"]);
    let screen = tmux.wait_for("answer 4 point 5");
    assert!(!screen.contains("new · G follows"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

#[test]
fn unknown_keys_of_hosts_run_together_are_listed_in_one_modal_and_trusted_at_once() {
    let key = TestKey::generate("");
    let daemons: Vec<Sshd> = (0..3).map(|_| Sshd::start(SshdOptions::allowing(&key))).collect();
    let env = TestEnv::new();
    env.install_default_key(&key);
    let names = ["db01", "db02", "db03"];
    for (name, sshd) in names.iter().zip(&daemons) {
        env.add_host(name, sshd, &["--tag", "db"]);
    }
    let tmux = Tmux::start("trust-all", &env, 160, 44);
    tmux.wait_for("Inventory · 4");
    tmux.command(":exec @db -- echo first-contact");
    let screen = tmux.wait_until("one modal with the three keys", |s| s.contains("trust all 3 listed"));
    eprintln!("{screen}");
    for (name, sshd) in names.iter().zip(&daemons) {
        assert!(screen.contains(&format!("{name} ([127.0.0.1]:{})", sshd.port)), "{name} by its name:\n{screen}");
        assert!(screen.contains(&sshd.fingerprint()), "{name}'s fingerprint:\n{screen}");
    }
    assert_eq!(screen.matches("Unknown host key").count(), 1, "one modal:\n{screen}");
    assert!(daemons.iter().all(|d| d.accepted_logins() == 0), "nothing logged in before the answer");
    tmux.keys(&["a"]);
    let screen = tmux.wait_for("echo first-contact: 3/3 hosts succeeded");
    eprintln!("{screen}");
    let recorded = std::fs::read_to_string(env.merlya_home().join("known_hosts")).unwrap();
    for sshd in &daemons {
        assert!(recorded.contains(&sshd.known_hosts_line()), "{recorded}");
    }
    // Known now: the next run asks nothing.
    tmux.command(":exec @db -- echo known-now");
    let screen = tmux.wait_for("echo known-now: 3/3 hosts succeeded");
    assert!(!screen.contains("Unknown host key"), "{screen}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}
