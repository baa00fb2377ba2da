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
        tmux.chat(&format!("question {n}"));
    };
    for n in 1..=3 {
        ask(n);
        // The newest answer is on screen whole, without a key: the chat followed it.
        let screen = tmux.wait_for(&format!("answer {n} point 5"));
        assert!(screen.contains(&format!("answer {n} point 1")), "{screen}");
        tmux.wait_until("the turn to end", |s| !s.contains("… working"));
    }
    let screen = tmux.screen();
    assert!(!screen.contains("answer 1 point 1"), "three answers overflow the chat:\n{screen}");

    // A fourth question; while its answer is on its way, the person scrolls up.
    ask(4);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !llm.requests().iter().any(|r| question_number(r) == Some(4)) {
        assert!(Instant::now() < deadline, "the fourth question reached the model");
        std::thread::sleep(Duration::from_millis(100));
    }
    tmux.keys(&["PPage"]);
    let scrolled = tmux.wait_until("the chat scrolled up", |s| !s.contains("question 4"));
    assert!(!scrolled.contains("new · G follows"), "nothing new yet:\n{scrolled}");
    release.store(true, Ordering::SeqCst);
    // The answer arrived below: the view stays where the person reads, the border counts it.
    let screen = tmux.wait_for("new · G follows");
    assert!(screen.contains("↓ 1 new · G follows"), "{screen}");
    assert!(!screen.contains("answer 4 point"), "the view stayed where the person was reading:\n{screen}");
    // The follow key (once the input is left) brings the newest answer back and the count goes.
    tmux.escape();
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
    for (name, sshd) in names.iter().zip(&daemons) {
        assert!(screen.contains(&format!("{name} ([127.0.0.1]:{})", sshd.port)), "{name} by its name:\n{screen}");
        assert!(screen.contains(&sshd.fingerprint()), "{name}'s fingerprint:\n{screen}");
    }
    assert_eq!(screen.matches("Unknown host key").count(), 1, "one modal:\n{screen}");
    assert!(daemons.iter().all(|d| d.accepted_logins() == 0), "nothing logged in before the answer");
    tmux.keys(&["a"]);
    let screen = tmux.wait_for("echo first-contact: 3/3 hosts succeeded");
    for name in names {
        assert!(screen.contains(&format!("{name} │ first-contact")), "{name} ran it:\n{screen}");
    }
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

/// The output lines on `screen` (`outNN-…`), each from its marker to the pane's border.
fn output_rows(screen: &str) -> Vec<String> {
    screen
        .lines()
        .filter_map(|l| {
            let at = l.match_indices("out").map(|(i, _)| i).find(|&i| {
                let digits = l.as_bytes().get(i + 3..i + 6);
                digits.is_some_and(|d| d[0].is_ascii_digit() && d[1].is_ascii_digit() && d[2] == b'-')
            })?;
            Some(l[at..].trim_end().trim_end_matches(['│', '┃']).trim_end().to_string())
        })
        .collect()
}

/// The non-empty rows inside the Output pane (the top-right pane) on `screen`, borders cut.
fn output_pane(screen: &str) -> Vec<String> {
    let mut lines = screen.lines();
    let top = lines.next().unwrap_or_default();
    // The second top-left corner on the first row: where the top-right pane starts.
    let mut corners = top.chars().enumerate().filter(|(_, c)| *c == '╭' || *c == '┏');
    let Some((left, _)) = corners.nth(1) else { return Vec::new() };
    lines
        .map(|l| l.chars().skip(left).collect::<String>())
        .take_while(|l| !l.starts_with(['╰', '┗']))
        .map(|l| l.trim_matches(['│', '┃', ' ']).to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn notifications_take_rows_of_their_own_and_hide_no_output_line() {
    let (_key, _sshd, env) = support::one_trusted_host("web01", &["--tag", "fleet"]);
    // A host nobody answers on: its check fails, with a long notification.
    let closed = support::sshd::free_port().to_string();
    env.ok(&["hosts", "add", "dead01", "--hostname", "127.0.0.1", "--port", &closed, "--tag", "fleet"]);
    let tmux = Tmux::start("notices", &env, 140, 40);
    tmux.wait_for("Inventory · 3");
    // Lines nearly as wide as the Output pane, from its top row down (where a corner overlay sat).
    let filler = "x".repeat(70);
    tmux.command(&format!(":exec web01 -- seq -f 'out%02g-{filler}' 1 12"));
    let before = tmux.wait_until("the run's twelve lines and its end", |s| {
        s.contains("1/1 hosts succeeded") && output_rows(s).len() == 12
    });
    let rows = output_rows(&before);
    assert!(rows.iter().all(|r| r.ends_with(&filler)), "each line whole before any notification:\n{before}");
    assert!(!before.contains("is unreachable"), "{before}");
    let pane = output_pane(&before);
    assert!(pane.first().is_some_and(|l| l.starts_with("── $ seq")) && pane.len() >= 15, "{pane:?}");
    // Check both fleet hosts: two notifications, one of them long (the failure).
    tmux.keys(&["1", "/"]);
    tmux.type_text("@fleet");
    tmux.keys(&["Enter", "a", "c"]);
    let during = tmux
        .wait_until("both notifications", |s| s.contains("dead01 is unreachable") && s.contains("web01 is reachable"));
    assert_eq!(output_rows(&during), rows, "every output line is still on screen, whole:\n{during}");
    assert_eq!(output_pane(&during), output_pane(&before), "the pane shows what it showed:\n{before}\n{during}");
    // The notifications are rows of their own, above the input line, outside every pane.
    for notice in ["dead01 is unreachable", "web01 is reachable"] {
        let line = during.lines().find(|l| l.contains(notice)).unwrap_or_default();
        assert!(line.starts_with(['✓', '✗']), "{notice} has a row of its own: {line:?}\n{during}");
        assert!(!line.contains(['│', '┃']), "{notice} is drawn over no pane: {line:?}\n{during}");
    }
    // They fade, and the panes take their rows back.
    let after = tmux.wait_until("the notifications to fade", |s| !s.contains("is unreachable"));
    assert_eq!(output_pane(&after), output_pane(&before), "{after}");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}

/// Whether the row of the list on a styled screen that starts with `status` is drawn reversed (selected).
fn row_is_selected(styled: &str, status: &str) -> Option<bool> {
    let line = styled.lines().find(|l| l.contains(status))?;
    let at = line.find(status)?;
    let before = &line[..at];
    let border = before.rfind(['│', '┃'])?;
    Some(before[border..].contains("7m"))
}

#[test]
fn the_pipeline_pane_selects_the_run_awaiting_approval() {
    let env = TestEnv::new();
    // Two earlier changes in the store, approved on the command line.
    let work = env.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    for n in 1..=2 {
        let marker = work.join(format!("earlier-{n}"));
        let touch = format!("touch {}", marker.display());
        env.ok(&["pipeline", "run", "bash", "--targets", "localhost", "--yes", "--", &touch]);
        assert!(marker.exists());
    }
    let infra = env.dir.path().join("infra");
    std::fs::create_dir_all(&infra).unwrap();
    std::fs::write(infra.join("main.tf"), "resource \"terraform_data\" \"awaiting\" {\n  input = \"asked\"\n}\n")
        .unwrap();
    let rc = env.dir.path().join("terraformrc");
    std::fs::write(&rc, "").unwrap();
    let tf = format!("TF_CLI_CONFIG_FILE='{}'", rc.display());
    let tmux = Tmux::start_with("pipeline-select", &env, &tf, 150, 44);
    tmux.wait_for("Inventory · 1");
    // The person reads the oldest run.
    tmux.keys(&["4"]);
    tmux.wait_for("2 runs");
    tmux.keys(&["G"]);
    tmux.wait_for("earlier-1 (mutating)");
    // A change waits for approval: the pane moves to it (its stages and its diff), not the oldest run.
    tmux.command(&format!(":change terraform {}", infra.display()));
    let screen = tmux.wait_until("the approval and the awaiting run in the pane", |s| {
        s.contains("[y/o] once") && s.contains("3 runs")
    });
    assert!(screen.contains("… Approval"), "the selected run's stages wait at the approval:\n{screen}");
    assert!(screen.contains("── terraform_data.awaiting · unified"), "the pane shows its diff:\n{screen}");
    assert!(!screen.contains("earlier-1 (mutating)"), "not the run the person was on:\n{screen}");
    let styled = tmux.styled_screen();
    assert_eq!(row_is_selected(&styled, "awaiting approval"), Some(true), "{styled}");
    assert_eq!(row_is_selected(&styled, "succeeded"), Some(false), "{styled}");
    // Denied, it stays the selected run.
    tmux.keys(&["n"]);
    let screen = tmux.wait_for("✗ Approval");
    assert!(screen.contains("── terraform_data.awaiting · unified"), "{screen}");
    assert!(!infra.join("terraform.tfstate").exists(), "nothing applied");
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0");
}
