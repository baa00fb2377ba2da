//! Differential tests against real bash (ADR 0026): generated command lines
//! full of quotes, escapes in every quoting context, control characters,
//! comments, here-documents, nested shells and backticks are run by bash with
//! every program replaced by a shim that records its argv. Two properties:
//!
//! - **agree or refuse**: what bash runs for the original text is what
//!   merlya's parser says each simple command is, or the parse reports a
//!   problem (so the line is never read-only);
//! - **what runs is what was proved**: bash running merlya's *rendering* runs
//!   exactly the simple commands merlya's parse of the original found.
//!
//! The seed is fixed (7); `MERLYA_DIFF_CASES=20000 MERLYA_DIFF_SEED=N` runs the
//! release-length search (docs/adr/0026).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::parse::{Parsed, parse};

/// Programs the generator calls; each is a shim in the sandbox's PATH.
const PROGRAMS: [&str; 8] = ["ls", "cat", "wc", "head", "df", "uname", "id", "grep"];

/// Every program with a shim (the generator's and those an attack would call).
const SHIMS: [&str; 15] =
    ["ls", "cat", "wc", "head", "df", "uname", "id", "grep", "touch", "rm", "tee", "kill", "nc", "base64", "rev"];

/// A folder of shims: each program records its argv (NUL-separated) in a file of its own.
pub(crate) struct Shims {
    dir: tempfile::TempDir,
}

impl Shims {
    /// Shims, with `sh` the system's (dash on Debian) or bash.
    pub(crate) fn new() -> Self {
        Self::with_sh(&std::fs::canonicalize("/bin/sh").unwrap_or_else(|_| PathBuf::from("/bin/sh")))
    }

    pub(crate) fn with_sh(sh: &std::path::Path) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(dir.path().join("log")).expect("log dir");
        std::fs::create_dir_all(&bin).expect("bin dir");
        let shim = "#!/bin/bash\nprintf '%s\\0' \"${0##*/}\" \"$@\" > \"$MERLYA_SHIM_LOG/$$.$RANDOM$RANDOM\"\n";
        for program in SHIMS {
            let path = bin.join(program);
            std::fs::write(&path, shim).expect("shim");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        std::fs::write(dir.path().join("env.sh"), "command_not_found_handle() { return 0; }\n").expect("env");
        // Nested shells are real ones, finding the shims on PATH; bash as `sh` is started as bash
        // (a link would put it in POSIX mode, which skips BASH_ENV).
        if sh.ends_with("bash") {
            std::fs::write(bin.join("sh"), "#!/bin/bash\nexec /bin/bash \"$@\"\n").expect("sh");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(bin.join("sh"), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        } else {
            std::os::unix::fs::symlink(sh, bin.join("sh")).expect("sh link");
        }
        std::os::unix::fs::symlink("/bin/bash", bin.join("bash")).expect("bash link");
        // Real programs whose own languages run commands (sed's `e`, find's `-exec`).
        for real in ["sed", "find", "timeout"] {
            for dir in ["/usr/bin", "/bin"] {
                let path = std::path::Path::new(dir).join(real);
                if path.exists() {
                    std::os::unix::fs::symlink(&path, bin.join(real)).expect("link");
                    break;
                }
            }
        }
        Self { dir }
    }

    /// The working folder of the last run (emptied before each).
    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    /// Runs `script` with `bash -c` in the sandbox; returns every recorded argv.
    pub(crate) fn run(&self, script: &str) -> Vec<Vec<String>> {
        let log = self.log();
        for entry in std::fs::read_dir(&log).expect("log").flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        let work = self.work();
        let _ = std::fs::remove_dir_all(&work);
        let _ = std::fs::create_dir_all(&work);
        let mut child = Command::new("/bin/bash")
            .arg("-c")
            .arg(script)
            .env_clear()
            .env("PATH", self.dir.path().join("bin"))
            .env("MERLYA_SHIM_LOG", &log)
            .env("LC_ALL", "C")
            // A program that is not a shim is "not found" and fails, and `a && b` would then skip
            // `b`: bash calls this instead, so every command merlya saw runs.
            .env("BASH_ENV", self.dir.path().join("env.sh"))
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("bash");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().ok().flatten().is_none() {
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        let _ = child.wait();
        let mut runs = Vec::new();
        for entry in std::fs::read_dir(&log).expect("log").flatten() {
            let bytes = std::fs::read(entry.path()).unwrap_or_default();
            let text = String::from_utf8_lossy(&bytes);
            let mut argv: Vec<String> = text.split('\0').map(str::to_string).collect();
            argv.pop(); // after the last NUL
            runs.push(argv);
        }
        runs.sort();
        runs
    }
}

/// Whether bash accepts the syntax.
fn bash_parses(script: &str) -> bool {
    Command::new("/bin/bash")
        .args(["-n", "-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What merlya's parse says runs: the argv of every command with only literal
/// words, and the name of every command (nested `sh -c`/`bash -c` scripts
/// parsed in turn). `None` when some part has a problem (merlya refuses it).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Expected {
    pub(crate) literal: Vec<Vec<String>>,
    pub(crate) names: Vec<String>,
}

pub(crate) fn expected(parsed: &Parsed, depth: usize) -> Option<Expected> {
    if !parsed.problems.is_empty() || depth > 3 {
        return None;
    }
    let mut out = Expected::default();
    for cmd in &parsed.commands {
        let Some(first) = cmd.words.first() else { continue };
        if !first.is_literal() {
            return None;
        }
        if matches!(first.text.as_str(), "sh" | "bash") {
            let script = cmd.words.iter().position(|w| w.text == "-c").and_then(|i| cmd.words.get(i + 1))?;
            if !script.is_literal() {
                return None;
            }
            let inner = expected(&parse(&script.text), depth + 1)?;
            out.literal.extend(inner.literal);
            out.names.extend(inner.names);
            continue;
        }
        if !SHIMS.contains(&first.text.as_str()) {
            continue; // bash cannot run it here either ("command not found"): nothing to compare
        }
        out.names.push(first.text.clone());
        if cmd.words.iter().all(|w| w.is_literal()) {
            out.literal.push(cmd.words.iter().map(|w| w.text.clone()).collect());
        }
    }
    out.literal.sort();
    out.names.sort();
    Some(out)
}

/// Whether the recorded runs are what `expected` says: the same programs, and
/// every literal command with exactly its argv.
pub(crate) fn agrees(expected: &Expected, runs: &[Vec<String>]) -> Result<(), String> {
    let mut names: Vec<String> = runs.iter().filter_map(|r| r.first().cloned()).collect();
    names.sort();
    if names != expected.names {
        return Err(format!("programs run {names:?}, merlya saw {:?}", expected.names));
    }
    literal_runs_match(expected, runs)
}

/// Whether nothing ran that merlya did not see (a shell that fails part of a
/// line, such as dash on a bash-only construct, may run less).
pub(crate) fn runs_within(expected: &Expected, runs: &[Vec<String>]) -> Result<(), String> {
    let mut seen: BTreeMap<&String, usize> = BTreeMap::new();
    for name in &expected.names {
        *seen.entry(name).or_default() += 1;
    }
    for run in runs {
        let name = run.first().ok_or("an empty argv")?;
        match seen.get_mut(name) {
            Some(n) if *n > 0 => *n -= 1,
            _ => return Err(format!("{run:?} ran; merlya saw only {:?}", expected.names)),
        }
        let literal_same_name: Vec<&Vec<String>> =
            expected.literal.iter().filter(|a| a.first() == Some(name)).collect();
        let all_literal = literal_same_name.len() == expected.names.iter().filter(|n| *n == name).count();
        if all_literal && !literal_same_name.contains(&run) {
            return Err(format!("{run:?} ran; merlya saw {literal_same_name:?}"));
        }
    }
    Ok(())
}

fn literal_runs_match(expected: &Expected, runs: &[Vec<String>]) -> Result<(), String> {
    let mut left: BTreeMap<&Vec<String>, usize> = BTreeMap::new();
    for r in runs {
        *left.entry(r).or_default() += 1;
    }
    for argv in &expected.literal {
        match left.get_mut(argv) {
            Some(n) if *n > 0 => *n -= 1,
            _ => return Err(format!("merlya saw {argv:?}; bash ran {runs:?}")),
        }
    }
    Ok(())
}

fn fragment() -> impl Strategy<Value = String> {
    let plain = prop::sample::select(vec!["a", "b1", "x.y", "-n", "/etc/hosts", "--o=v", "k=v", "%s", "2"]);
    let single = prop::collection::vec(
        prop::sample::select(vec![
            "a", " ", "\\", "\\\\", "\"", "$", "$x", "`", "#", ";", "|", "&", "\t", "\n", "*", "b",
        ]),
        0..5,
    )
    .prop_map(|parts| format!("'{}'", parts.concat()));
    let double = prop::collection::vec(
        prop::sample::select(vec![
            "a", " ", "\\\\", "\\\"", "\\$", "\\`", "\\a", "\\n", "'", "#", ";", "|", "\t", "b", "\\\\\\\"", "\\\\\\",
        ]),
        0..5,
    )
    .prop_map(|parts| format!("\"{}\"", parts.concat().trim_end_matches("\\\\\\")));
    let escaped = prop::sample::select(vec![
        "\\a", "\\ ", "\\'", "\\\"", "\\#", "\\;", "\\|", "\\&", "\\\\", "\\$", "\\`", "\\(", "\\)", "\\<", "\\>",
    ])
    .prop_map(str::to_string);
    let program = prop::sample::select(PROGRAMS.to_vec());
    let backtick = (program.clone(), prop::sample::select(vec!["a", "-n", "\\`id\\`", "\\`ls \\\\\\`cat\\\\\\`\\`"]))
        .prop_map(|(p, w)| format!("`{p} {w}`"));
    let dollar =
        (program, prop::sample::select(vec!["a", "'b c'", "\"$(id)\""])).prop_map(|(p, w)| format!("$({p} {w})"));
    prop_oneof![4 => plain.prop_map(str::to_string), 3 => single, 3 => double, 2 => escaped, 1 => backtick, 1 => dollar]
}

fn word() -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 1..3).prop_map(|f| f.concat())
}

fn simple() -> impl Strategy<Value = String> {
    (prop::sample::select(PROGRAMS.to_vec()), prop::collection::vec(word(), 0..4))
        .prop_map(|(p, words)| std::iter::once(p.to_string()).chain(words).collect::<Vec<_>>().join(" "))
}

fn heredoc() -> impl Strategy<Value = String> {
    let delimiters = vec![("EOF", "EOF"), ("'EOF'", "EOF"), ("E'O'F", "EOF"), ("E'O'F", "E'O'F"), ("\\EOF", "EOF")];
    let lines = prop::collection::vec(
        prop::sample::select(vec!["line", "EOF", "$(id a)", "`id b`", "x \\$y \\\\ \"q\"", "E'O'F", "a'b"]),
        0..4,
    );
    (prop::sample::select(PROGRAMS.to_vec()), prop::sample::select(delimiters), lines).prop_map(
        |(p, (open, close), lines)| {
            format!("{p} <<{open}\n{}{close}\n", lines.iter().map(|l| format!("{l}\n")).collect::<String>())
        },
    )
}

fn statement(depth: u32) -> BoxedStrategy<String> {
    let leaf = prop_oneof![6 => simple(), 1 => heredoc()].boxed();
    if depth == 0 {
        return leaf;
    }
    let nested = (prop::sample::select(vec!["sh", "bash"]), script(depth - 1), any::<bool>()).prop_map(
        |(shell, inner, double)| {
            let quoted = if double {
                // Escaped as a careful person would, and sometimes not (a lone `\\`).
                format!(
                    "\"{}\"",
                    inner.replace('\\', "\\\\").replace('"', "\\\"").replace('$', "\\$").replace('`', "\\`")
                )
            } else {
                format!("'{}'", inner.replace('\'', "'\\''"))
            };
            format!("{shell} -c {quoted}")
        },
    );
    prop_oneof![4 => leaf, 1 => nested].boxed()
}

fn script(depth: u32) -> BoxedStrategy<String> {
    let separator = prop::sample::select(vec!["; ", " && ", " | ", "\n", "; ", " && ", " | ", "\n", " \x0c# c\n"]);
    let tail = prop::sample::select(vec!["", "", "", " # c", " \x0c# ; id x", " \r# ; id z", "\n", " # ; id q"]);
    (statement(depth), prop::collection::vec((separator, statement(depth)), 0..3), tail)
        .prop_map(|(first, rest, tail)| {
            let mut out = first;
            for (sep, stmt) in rest {
                if !out.ends_with('\n') {
                    out.push_str(sep);
                }
                out.push_str(&stmt);
            }
            if !out.ends_with('\n') {
                out.push_str(tail);
            }
            out
        })
        .boxed()
}

/// Runs the two properties over `cases` generated lines; returns the failures.
fn differential(cases: u32, seed: u8) -> (u32, Vec<String>) {
    let shims = Shims::with_sh(std::path::Path::new("/bin/bash"));
    let system_sh = Shims::new();
    let mut runner = TestRunner::new_with_rng(
        Config { cases, ..Config::default() },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    );
    let strategy = script(1);
    let (mut compared, mut failures) = (0, Vec::new());
    for _ in 0..cases {
        let Ok(tree) = strategy.new_tree(&mut runner) else { continue };
        let line = tree.current();
        if !bash_parses(&line) {
            continue;
        }
        let parsed = parse(&line);
        let Some(want) = expected(&parsed, 0) else { continue };
        compared += 1;
        if let Err(why) = agrees(&want, &shims.run(&line)) {
            failures.push(format!("original {line:?}: {why}"));
        }
        match super::analyze_and_render(&line).1 {
            Ok(rendered) => {
                if let Err(why) = agrees(&want, &shims.run(&rendered)) {
                    failures.push(format!("rendering {rendered:?} of {line:?}: {why}"));
                }
                if let Err(why) = runs_within(&want, &system_sh.run(&rendered)) {
                    failures.push(format!("rendering {rendered:?} of {line:?} with the system's sh: {why}"));
                }
            }
            Err(why) => failures.push(format!("no rendering for {line:?}: {why}")),
        }
    }
    (compared, failures)
}

#[test]
fn the_parse_and_the_rendering_agree_with_bash() {
    let cases = std::env::var("MERLYA_DIFF_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(400);
    let seed = std::env::var("MERLYA_DIFF_SEED").ok().and_then(|c| c.parse().ok()).unwrap_or(7);
    let (compared, failures) = differential(cases, seed);
    assert!(failures.is_empty(), "{} of {compared} disagree:\n{}", failures.len(), failures.join("\n"));
    assert!(compared >= cases / 3, "only {compared} of {cases} generated lines were comparable");
}

#[test]
fn the_shims_record_what_bash_runs() {
    let shims = Shims::new();
    let runs = shims.run("ls 'a b' \"c\\\\d\"; cat <<< x | wc -l");
    assert_eq!(
        runs,
        [vec!["cat".to_string()], vec!["ls".into(), "a b".into(), "c\\d".into()], vec!["wc".into(), "-l".into()]]
    );
    let want = expected(&parse("ls 'a b' \"c\\\\d\"; cat <<< x | wc -l"), 0).unwrap();
    assert!(agrees(&want, &runs).is_ok());
    let wrong = expected(&parse("ls 'a b' c; cat | wc -l"), 0).unwrap();
    assert!(agrees(&wrong, &runs).is_err(), "a different argv must not agree");
}
