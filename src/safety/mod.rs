//! Command safety, enforced in code: every command is parsed into the simple
//! commands it would run and each is classified `read_only`, `mutating` or
//! `dangerous`, with reasons a person (or a model) can read.
//!
//! The diagnostic and security specialists may only run commands whose every
//! part is proven read-only: each simple command must be a program with a
//! spec in `specs.yaml`, used with options and operands that spec allows
//! (default deny), and the table's own examples hold (checked on first use).
//! Nothing here trusts a prompt.

pub mod checks;
pub mod clearance;
pub mod credential_table;
pub mod credentials;
pub mod danger;
pub mod egress;
pub mod egress_nodata;
mod input;
pub mod invocation;
pub mod leaks;
pub mod parse;
pub mod paths;
pub mod program_reads;
pub mod render;
pub mod secret_endpoints;
pub mod secret_vars;
pub mod spec;
pub mod sql;
pub mod table;
pub mod tool_checks;
pub mod web_actions;
pub mod words;
pub mod workdir;

use std::collections::HashMap;

use serde::Serialize;

use parse::{SimpleCommand, Word};
pub use paths::{normal_path, set_private_home};
use render::Override;
use spec::Check;
use workdir::Workdirs;

/// How much a command can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Proven to change nothing.
    ReadOnly,
    /// Changes something (or could not be proven not to).
    Mutating,
    /// Destroys data or availability.
    Dangerous,
}

impl Class {
    /// The stable name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::ReadOnly => "read_only",
            Class::Mutating => "mutating",
            Class::Dangerous => "dangerous",
        }
    }
}

/// The analysis of one command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Analysis {
    /// The worst class of any part.
    pub class: Class,
    /// Why it is not read-only (empty when it is).
    pub reasons: Vec<String>,
    /// The simple commands found, as text.
    pub commands: Vec<String>,
    /// The rule keys of every command that is not read-only: what an "always
    /// allow" rule must match. A key names the program, its subcommands and
    /// every option with its value as the program parses them (`systemctl
    /// restart [--now]`), so a rule never covers an option the person did not
    /// see; a command that cannot be fully parsed has an exact key (`= …`).
    /// `None` when part of the risk is not a command (a redirection, a parse
    /// problem, an assignment): such a line is never approved by a stored rule.
    pub rule_keys: Option<Vec<String>>,
}

const MAX_DEPTH: usize = 4;

/// Analyzes a command line.
pub fn analyze(command: &str) -> Analysis {
    if let Err(broken) = examples_hold() {
        let mut analysis =
            Analysis { class: Class::ReadOnly, reasons: Vec::new(), commands: Vec::new(), rule_keys: Some(Vec::new()) };
        analysis.raise(Class::Mutating, format!("the read-only table does not hold its own examples ({broken})"));
        return analysis;
    }
    analyze_depth(command, 0).0
}

/// A command's analysis and the text merlya runs for it: the rendering of its
/// own parse (ADR 0026), or why there is none. A read-only clearance carries
/// this rendering, never the text that was checked.
pub fn analyze_and_render(command: &str) -> (Analysis, Result<String, String>) {
    if examples_hold().is_err() {
        return (analyze(command), Err("the read-only table does not hold its own examples".into()));
    }
    analyze_depth(command, 0)
}

/// What the analysis changes in the rendering of a line: nested scripts
/// replaced by their own renderings, `--` before expansions.
#[derive(Default)]
struct Rewrites {
    overrides: HashMap<usize, Override>,
    broken: Option<String>,
}

impl Rewrites {
    fn set(&mut self, word: &Word, change: Override) {
        match word.id {
            Some(id) => {
                self.overrides.insert(id, change);
            }
            None => {
                self.broken.get_or_insert_with(|| format!("`{}` is not a word of the command", word.text));
            }
        }
    }

    /// Puts a nested script's rendering (or its failure) in place of `word`.
    fn nested(&mut self, word: &Word, rendering: Result<String, String>) {
        match rendering {
            Ok(text) => self.set(word, Override::Replace(render::quote(&text))),
            Err(why) => {
                self.broken.get_or_insert(why);
            }
        }
    }
}

/// Every spec's `allow` and `refuse` examples, checked once when the table is
/// first used: a table that contradicts its own examples proves nothing, so
/// then no command is read-only (fail closed).
fn examples_hold() -> &'static Result<(), String> {
    static CHECKED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    // The table's examples hold whatever the operator's `policy.egress_allow` says.
    CHECKED.get_or_init(|| egress::with_allow(egress::EgressAllow::default(), check_examples))
}

fn check_examples() -> Result<(), String> {
    let programs = table::programs().map_err(str::to_string)?;
    for program in programs {
        if let Some(cmd) = program.allow.iter().find(|c| !analyze_depth(c, 0).0.is_read_only()) {
            return Err(format!("{}: `{cmd}` should be read-only", program.names[0]));
        }
        if let Some(cmd) = program.refuse.iter().find(|c| analyze_depth(c, 0).0.is_read_only()) {
            return Err(format!("{}: `{cmd}` should be refused", program.names[0]));
        }
    }
    Ok(())
}

/// The programs `command` runs: the first word of every simple command the parser finds (a skill's
/// `tools_allowed` is checked against these).
pub fn programs(command: &str) -> Vec<String> {
    parse::parse(command).commands.iter().filter_map(|c| c.words.first().map(|w| w.text.clone())).collect()
}

fn analyze_depth(command: &str, depth: usize) -> (Analysis, Result<String, String>) {
    analyze_nested(command, depth, &Workdirs::default())
}

/// `analyze_depth` inside a line whose commands may run in the folders `outer`.
fn analyze_nested(command: &str, depth: usize, outer: &Workdirs) -> (Analysis, Result<String, String>) {
    let mut analysis =
        Analysis { class: Class::ReadOnly, reasons: Vec::new(), commands: Vec::new(), rule_keys: Some(Vec::new()) };
    if command.trim().is_empty() {
        analysis.raise(Class::Mutating, "empty command".into());
        return (analysis, Err("an empty command".into()));
    }
    if depth > MAX_DEPTH {
        analysis.raise(Class::Mutating, "shell nesting is too deep to check".into());
        return (analysis, Err("nesting too deep".into()));
    }
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(":(){") || compact.contains("(){:|:&") {
        analysis.raise(Class::Dangerous, "fork bomb".into());
    }
    if !crate::secrets::reference::references(command).is_empty() {
        analysis.raise(
            Class::Mutating,
            "uses a secret reference: a person approves every command that holds a secret".into(),
        );
    }
    let parsed = parse::parse(command);
    for problem in &parsed.problems {
        analysis.raise(Class::Mutating, problem.clone());
    }
    let mut rewrites = Rewrites::default();
    let mut dirs = outer.after(&parsed.commands);
    dirs.changed |= parsed.commands.iter().any(|c| c.words.iter().any(|w| matches!(w.text.as_str(), "cd" | "pushd")));
    for cmd in &parsed.commands {
        analysis.commands.push(cmd.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "));
        check_redirects(cmd, &dirs, &mut analysis);
        check_assignments(cmd, &mut analysis);
        let feeder = program_reads::Feeder::of(cmd, &parsed.commands, &dirs);
        let at = (&dirs, input::line_feeds_nothing(cmd, &parsed.commands), feeder);
        if !cmd.words.is_empty() && check_words(&cmd.words, depth, &mut analysis, &mut rewrites, at) {
            input::check_sent_input(cmd, &parsed.commands, &mut analysis);
        }
    }
    check_pipelines(&parsed.commands, &mut analysis);
    let rendering = match rewrites.broken {
        Some(why) => Err(why),
        None => parsed.render(&rewrites.overrides),
    };
    (analysis, rendering)
}

impl Analysis {
    /// A risk that no command describes: rules can never cover this line.
    fn raise(&mut self, class: Class, reason: String) {
        self.rule_keys = None;
        self.raise_for(class, reason);
    }

    /// A risk carried by a command with this rule key.
    fn raise_command(&mut self, class: Class, reason: String, key: &str) {
        if let Some(keys) = self.rule_keys.as_mut()
            && !keys.iter().any(|k| k == key)
        {
            keys.push(key.to_string());
        }
        self.raise_for(class, reason);
    }

    fn raise_for(&mut self, class: Class, reason: String) {
        self.class = self.class.max(class);
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    fn absorb(&mut self, inner: Analysis) {
        match (self.rule_keys.as_mut(), inner.rule_keys) {
            (Some(mine), Some(theirs)) => {
                for k in theirs {
                    if !mine.contains(&k) {
                        mine.push(k);
                    }
                }
            }
            _ => self.rule_keys = None,
        }
        self.class = self.class.max(inner.class);
        for r in inner.reasons {
            if !self.reasons.contains(&r) {
                self.reasons.push(r);
            }
        }
    }

    /// Whether every part is proven read-only.
    pub fn is_read_only(&self) -> bool {
        self.class == Class::ReadOnly
    }
}

/// Only `/dev/null` and descriptor copies may be written; nothing may be
/// opened on `/dev/tcp` or `/dev/udp`, which bash turns into connections.
fn check_redirects(cmd: &SimpleCommand, dirs: &Workdirs, analysis: &mut Analysis) {
    for r in &cmd.redirects {
        let Some(target) = &r.target else { continue };
        let raw_disk = || (r.op == "<").then(|| credentials::raw_disk_read("<", target, true)).flatten();
        if let Some(reason) = program_reads::side_effect(target, dirs)
            .or_else(|| credentials::credential_read(target, dirs))
            .or_else(raw_disk)
        {
            analysis.raise(Class::Mutating, reason);
            continue;
        }
        let normal = normal_path(&target.text);
        let t = normal.as_str();
        // A literal /dev/tcp path was caught above; one only known at run time may be one.
        if !target.is_literal() && t.contains("/dev/") {
            analysis.raise(Class::Mutating, format!("`{} {t}` may open a network connection", r.op));
            continue;
        }
        let writes = r.op.contains('>');
        let duplicates = matches!(r.op.as_str(), ">&" | "<&") && (t == "-" || t.chars().all(|c| c.is_ascii_digit()));
        if duplicates {
            continue;
        }
        if !writes {
            if !target.is_literal() {
                analysis.raise(Class::Mutating, format!("reads from a file only known at run time ({t})"));
            }
            continue;
        }
        if target.is_literal() && t == "/dev/null" {
            continue;
        }
        let block = ["/dev/sd", "/dev/nvme", "/dev/vd", "/dev/hd", "/dev/xvd", "/dev/mmcblk", "/dev/dm-", "/dev/md"];
        if block.iter().any(|b| t.starts_with(b)) {
            analysis.raise(Class::Dangerous, format!("writes to the block device {t}"));
        } else if ["/etc/passwd", "/etc/shadow", "/etc/sudoers", "/boot/"].iter().any(|p| t.starts_with(p)) {
            analysis.raise(Class::Dangerous, format!("overwrites {t}"));
        } else if !target.is_literal() {
            analysis.raise(Class::Mutating, format!("writes to a file only known at run time ({t})"));
        } else {
            analysis.raise(Class::Mutating, format!("writes to {t} with {}", r.op));
        }
    }
}

/// `NAME=value cmd`: only names that change how output looks, with literal values.
fn check_assignments(cmd: &SimpleCommand, analysis: &mut Analysis) {
    for a in &cmd.assignments {
        if let Err(reason) = assignment_allowed(a) {
            analysis.raise(Class::Mutating, reason);
        }
    }
}

/// Whether the environment assignment `NAME=value` is harmless for a read-only command.
fn assignment_allowed(assignment: &str) -> Result<(), String> {
    let (name, value) = assignment.split_once('=').unwrap_or((assignment, ""));
    let harmless =
        matches!(name, "LANG" | "LANGUAGE" | "TZ" | "COLUMNS" | "LINES" | "TERM" | "NO_COLOR" | "TIME_STYLE")
            || name
                .strip_prefix("LC_")
                .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_uppercase()));
    if !harmless {
        return Err(format!("{name}= may change which code runs or how it behaves"));
    }
    if value.contains(['$', '`', '(', ')', '{', '*', '?', '[']) {
        return Err(format!("{name}= has a value only known at run time"));
    }
    // A value with a `/` is a file the program opens (`TZ=/proc/kmsg date` consumes kernel
    // messages, `TZ=/dev/watchdog` arms the watchdog): only zone names (`Europe/Paris`) pass.
    let zone = name == "TZ"
        && !value.starts_with(['/', ':', '.'])
        && !value.split('/').any(|p| p == ".." || p.is_empty())
        && value.chars().all(|c| c.is_ascii_alphanumeric() || "_+-/".contains(c));
    if value.contains('/') && !zone {
        return Err(format!("{name}={value} names a file the program would open"));
    }
    Ok(())
}

/// What one simple command has shown so far, wrapper by wrapper.
#[derive(Default)]
struct Levels {
    keys: Vec<String>,
    refusals: Vec<String>,
    danger: Option<String>,
    sends_input: bool,
    /// The line changes directory: a bare name may then be `/proc`'s `kmsg`.
    after_cd: bool,
    /// The folders the command may run in (relative paths are resolved against each).
    dirs: Workdirs,
    /// Where the names an `xargs` reads come from.
    feeder: program_reads::Feeder,
    /// The standard input is proved to hold at most an empty line (ADR 0030: a request then
    /// carries nothing read from it).
    input_empty: bool,
}

/// Reads one simple command: unwraps wrappers, parses each level against its
/// spec and runs the spec's checker; returns whether the innermost program
/// sends its input off the host.
fn check_words(
    words: &[Word],
    depth: usize,
    analysis: &mut Analysis,
    rewrites: &mut Rewrites,
    (dirs, input_empty, feeder): (&Workdirs, bool, program_reads::Feeder),
) -> bool {
    let mut levels = Levels { after_cd: dirs.changed, dirs: dirs.clone(), input_empty, feeder, ..Levels::default() };
    check_levels(words, depth, analysis, &mut levels, rewrites);
    let key = levels.keys.join(" ");
    for reason in levels.refusals {
        analysis.raise_command(Class::Mutating, reason, &key);
    }
    if let Some(reason) = levels.danger {
        analysis.raise_command(Class::Dangerous, reason, &key);
    }
    levels.sends_input
}

/// Checks a simple command level by level, through every wrapper.
fn check_levels(words: &[Word], depth: usize, analysis: &mut Analysis, levels: &mut Levels, rewrites: &mut Rewrites) {
    let mut words: Vec<Word> = words.to_vec();
    let mut rounds = 0;
    while let Some(next) = check_level(&words, depth, analysis, levels, rewrites) {
        rounds += 1;
        if rounds == 16 {
            levels.refusals.push("too many nested wrappers".into());
            break;
        }
        words = next;
    }
}

/// Checks one level of a simple command; returns the wrapped command's words, if any.
fn check_level(
    words: &[Word],
    depth: usize,
    analysis: &mut Analysis,
    levels: &mut Levels,
    rewrites: &mut Rewrites,
) -> Option<Vec<Word>> {
    let first = words.first()?;
    let refuse = |levels: &mut Levels, reason: String| {
        levels.refusals.push(reason);
        levels.keys.push(exact_key(words));
        None
    };
    if !first.is_literal() {
        return refuse(levels, format!("the command name `{}` is only known at run time", first.text));
    }
    let name = match program_name(&first.text) {
        Ok(name) => name.to_string(),
        Err(reason) => return refuse(levels, reason),
    };
    let args = &words[1..];
    if let Some(reason) = danger::judge(&name, args) {
        levels.danger = Some(reason);
    }
    if let Some(reason) = args.iter().find_map(|a| program_reads::side_effect(a, &levels.dirs)) {
        levels.refusals.push(reason);
    }
    if !credentials::METADATA_ONLY.contains(&name.as_str())
        && !program_reads::prints_no_secret(&name, args)
        && let Some(reason) = args.iter().find_map(|a| credentials::credential_read(a, &levels.dirs))
    {
        levels.refusals.push(reason);
    }
    if let Some(reason) = program_reads::check(&name, args, &levels.feeder) {
        levels.refusals.push(reason);
    }
    if let Some(reason) =
        args.iter().find_map(secret_vars::expands_a_secret).or_else(|| secret_vars::prints_a_secret(&name, args))
    {
        levels.refusals.push(reason);
    }
    let spec = match table::lookup(&name) {
        Ok(Some(spec)) => spec,
        Ok(None) => return refuse(levels, format!("`{name}` is not a program merlya knows to be read-only")),
        Err(broken) => return refuse(levels, format!("the read-only table could not be loaded ({broken})")),
    };
    // A wrapper's words are its program's: the program that reads them is judged at its level.
    if spec.wraps_after.is_none()
        && let Some(reason) = args.iter().find_map(|a| credentials::raw_disk_read(&name, a, levels.after_cd))
    {
        levels.refusals.push(reason);
    }
    if spec.check == Some(Check::Test) {
        levels.keys.push(exact_key(words));
        if let Err(reason) = checks::test_expression(&name, args) {
            levels.refusals.push(reason);
        }
        return None;
    }
    let reading = invocation::read(&name, spec, args);
    if let Some(id) = reading.end_options_before {
        rewrites.overrides.insert(id, Override::EndOptions);
    }
    if let Some(id) = reading.end_options_after {
        rewrites.overrides.insert(id, Override::EndOptionsAfter);
    }
    for (id, text) in &reading.literal_globs {
        rewrites.overrides.insert(*id, Override::Replace(render::quote(text)));
    }
    for (id, added) in &reading.added_after {
        let words: Vec<String> = added
            .iter()
            .flat_map(|(option, value)| std::iter::once(option.clone()).chain(value.clone()))
            .map(|w| render::quote(&w))
            .collect();
        rewrites.overrides.insert(*id, Override::Append(words.join(" ")));
    }
    if !reading.added.is_empty() {
        let words: Vec<String> = reading
            .added
            .iter()
            .flat_map(|(option, value)| std::iter::once(option.clone()).chain(value.clone()))
            .map(|w| render::quote(&w))
            .collect();
        match first.id {
            Some(id) if !rewrites.overrides.contains_key(&id) => {
                rewrites.overrides.insert(id, Override::Append(words.join(" ")));
            }
            _ => levels.refusals.push(format!("merlya cannot add {} to `{name}` here", words.join(" "))),
        }
    }
    levels.keys.push(if reading.complete { canonical_key(&reading.invocation) } else { exact_key(words) });
    levels.refusals.extend(reading.refusals.iter().cloned());
    let inv = reading.invocation;
    if let Some(reason) = program_reads::check_reading(&inv, &levels.dirs) {
        levels.refusals.push(reason);
    }
    levels.sends_input = inv.sends_stdin;
    if reading.complete && reading.refusals.is_empty() {
        // Where it sends something, and whether a GET may act (ADR 0030): approved one command at
        // a time, so an "always" rule covers this exact line, never another destination or URL.
        if let Some(reason) = egress::check(&inv, levels.input_empty).and_then(|()| web_actions::check(&inv)).err() {
            levels.refusals.push(reason);
            if let Some(key) = levels.keys.last_mut() {
                *key = exact_key(words);
            }
        }
        match inv.check {
            Some(Check::Shell) => {
                check_shell(&name, &inv, (depth, &levels.dirs), analysis, &mut levels.refusals, rewrites);
                return None;
            }
            Some(check) => {
                if let Err(reason) = checks::run(check, &inv) {
                    levels.refusals.push(reason);
                }
            }
            None => {}
        }
    }
    for command in &inv.commands {
        check_found_command(command, &inv, depth, analysis, levels, rewrites);
    }
    let inner = inv.wrapped.clone()?;
    unwrap(&name, &inv, inner, (depth, &levels.dirs), analysis, &mut levels.refusals, rewrites)
}

/// What a wrapper runs next, or `None` when nothing (or a script, analysed here).
fn unwrap(
    name: &str,
    inv: &invocation::Invocation,
    mut inner: Vec<Word>,
    (depth, dirs): (usize, &Workdirs),
    analysis: &mut Analysis,
    refusals: &mut Vec<String>,
    rewrites: &mut Rewrites,
) -> Option<Vec<Word>> {
    match name {
        // `command -v X` only looks X up.
        "command" if inv.has("-v") || inv.has("-V") => return None,
        "env" => {
            let assignments = inner.iter().take_while(|w| w.is_literal() && w.text.contains('=')).count();
            for word in inner.drain(..assignments) {
                if let Err(reason) = assignment_allowed(&word.text) {
                    refusals.push(reason);
                }
            }
        }
        "xargs" => {
            let replace: Vec<&str> = inv.values("-I").chain(inv.values("--replace")).collect();
            for word in inner.iter_mut().skip(1) {
                if replace.iter().any(|r| word.text.contains(r)) {
                    *word = Word::unknown(word.text.clone());
                }
            }
            if inner.is_empty() {
                return None; // bare xargs echoes its input
            }
            if replace.is_empty() {
                let after = inner.last().and_then(|w| w.id);
                inner.push(Word { appended_to: after, ..Word::unknown("<arguments read by xargs>") });
            }
        }
        "watch" if !inv.has("-x") && !inv.has("--exec") => {
            if let Some(w) = inner.iter().find(|w| !w.is_literal()) {
                refusals.push(format!("watch runs `{}`, only known at run time", w.text));
                return None;
            }
            // watch joins its words with spaces and hands them to `sh -c`: one rendered word.
            let script = inner.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
            let (nested, rendering) = analyze_nested(&script, depth + 1, dirs);
            analysis.absorb(nested);
            if let Some((first, rest)) = inner.split_first() {
                rewrites.nested(first, rendering);
                for word in rest {
                    rewrites.set(word, Override::Drop);
                }
            }
            return None;
        }
        _ => {}
    }
    if inner.is_empty() {
        let lists = inv.has("-l") || inv.has("--list");
        if matches!(name, "sudo" | "doas") && !lists {
            refusals.push(format!("{name} without a command"));
        }
        return None;
    }
    Some(inner)
}

/// A command find runs (`-exec CMD {} ;`): analysed as a simple command of its own, like
/// a wrapped one; its refusals, danger and key join find's. `{}` is a file name only known at
/// run time, so CMD must take such operands (`dynamic`), and find must not be able to hand it
/// a file whose opening has side effects.
fn check_found_command(
    command: &invocation::FoundCommand,
    find: &invocation::Invocation,
    depth: usize,
    analysis: &mut Analysis,
    levels: &mut Levels,
    rewrites: &mut Rewrites,
) {
    if command.takes_files()
        && let Some(reason) = program_reads::found_files_reach_special(find, levels.after_cd)
    {
        levels.refusals.push(reason);
    }
    // `-execdir` runs CMD in each file's directory: a bare name there may be `/proc`'s `kmsg`.
    let in_file_directory = command.in_file_directory();
    let dirs = if in_file_directory { Workdirs::unknown() } else { levels.dirs.clone() };
    let mut inner = Levels { after_cd: levels.after_cd || in_file_directory, dirs, ..Levels::default() };
    if let Some(reason) = program_reads::found_files(find, command, &levels.dirs) {
        levels.refusals.push(reason);
    }
    check_levels(&command.words, depth, analysis, &mut inner, rewrites);
    let over_system = find.operands.first().is_some_and(|start| danger::system_tree(&start.text));
    if !inner.refusals.is_empty() && over_system && levels.danger.is_none() {
        let name = command.words.first().map(|w| w.text.as_str()).unwrap_or_default();
        levels.danger = Some(format!("find over a system tree runs `{name}`, which is not read-only, on every file"));
    }
    levels.keys.extend(inner.keys);
    levels.refusals.extend(inner.refusals);
    if levels.danger.is_none() {
        levels.danger = inner.danger;
    }
    // CMD inherits find's input.
    levels.sends_input |= inner.sends_input;
}

/// `sh -c 'STRING'` is analysed in full; `sh FILE` or a bare `sh` runs unknown code.
fn check_shell(
    name: &str,
    inv: &invocation::Invocation,
    (depth, dirs): (usize, &Workdirs),
    analysis: &mut Analysis,
    refusals: &mut Vec<String>,
    rewrites: &mut Rewrites,
) {
    if !inv.has("-c") {
        match inv.operands.first() {
            Some(file) => refusals.push(format!("`{name} {}` runs a script file", file.text)),
            None => refusals.push(format!("`{name}` runs commands read from its input")),
        }
        return;
    }
    match inv.operands.first() {
        Some(script) if script.is_literal() => {
            let (nested, rendering) = analyze_nested(&script.text, depth + 1, dirs);
            analysis.absorb(nested);
            rewrites.nested(script, rendering);
        }
        Some(script) => refusals.push(format!("{name} -c with a script only known at run time ({})", script.text)),
        None => refusals.push(format!("{name} -c without a script")),
    }
}

/// `curl ... | sh` and friends.
fn check_pipelines(commands: &[SimpleCommand], analysis: &mut Analysis) {
    let shells = ["sh", "bash", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby", "node", "php"];
    for cmd in commands {
        let (Some((id, pos)), Some(first)) = (cmd.pipeline, cmd.words.first()) else { continue };
        let mut name = base_name(&first.text);
        let mut idx = 0;
        // Past every wrapper the spec table knows (`sudo`, `env`, `timeout`…) to what really runs.
        let is_wrapper = |n: &str| table::lookup(n).ok().flatten().is_some_and(|spec| spec.wraps_after.is_some());
        while is_wrapper(name) && idx + 1 < cmd.words.len() {
            idx += 1;
            name = base_name(&cmd.words[idx].text);
        }
        if pos == 0 || !shells.contains(&name) {
            continue;
        }
        let downloads = commands.iter().any(|c| {
            c.pipeline.is_some_and(|(i, p)| i == id && p < pos)
                && c.words.iter().any(|w| matches!(base_name(&w.text), "curl" | "wget" | "fetch" | "nc" | "ncat"))
        });
        if downloads {
            analysis.raise(Class::Dangerous, format!("pipes a download into `{name}`"));
        }
    }
}

/// `/usr/bin/rm` → `rm`.
fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The program a command word names: a bare name, or one in the system's bin
/// directories (`./ls` or `/tmp/ls` is not `ls`).
fn program_name(word: &str) -> Result<&str, String> {
    if !word.contains('/') {
        return Ok(word);
    }
    for dir in ["/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"] {
        if let Some(name) = word.strip_prefix(dir)
            && !name.is_empty()
            && !name.contains('/')
        {
            return Ok(name);
        }
    }
    Err(format!("`{word}` is a program outside the system's bin directories"))
}

/// The key of a fully parsed command: program, path, and sorted options with values.
fn canonical_key(inv: &invocation::Invocation) -> String {
    let mut parts: Vec<String> = std::iter::once(inv.program.clone()).chain(inv.path.iter().cloned()).collect();
    let mut options: Vec<String> = inv
        .options
        .iter()
        .map(|(name, value)| match value {
            Some(v) => format!("{name}={}", shell_quote(v)),
            None => name.clone(),
        })
        .collect();
    options.sort();
    options.dedup();
    if !options.is_empty() {
        parts.push(format!("[{}]", options.join(" ")));
    }
    parts.join(" ")
}

/// The key of a command that is only covered when it is exactly the same.
fn exact_key(words: &[Word]) -> String {
    let quoted: Vec<String> = words.iter().map(|w| shell_quote(&w.text)).collect();
    format!("= {}", quoted.join(" "))
}

/// Quotes `s` for a shell (and for display) when it holds anything but plain characters.
pub fn shell_quote(s: &str) -> String {
    render::quote(s)
}

/// Who is asking: the specialist decides what a verdict allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Specialist {
    /// Read-only investigation.
    Diagnostic,
    /// Read-only security review.
    Security,
    /// Changes, each behind an approval.
    Execution,
}

/// What a specialist may do with a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PolicyDecision {
    /// Whether the command may run (for execution: after approval).
    pub allowed: bool,
    /// Whether a person must approve first.
    pub needs_approval: bool,
    /// The analysis behind the decision.
    pub analysis: Analysis,
}

/// The analysis of `command` and, when it is proven read-only, the clearance
/// that runs it (merlya's rendering). A line the classifier accepts but whose
/// rendering cannot be proved is not read-only, with the reason.
pub fn prove(command: &str) -> (Analysis, Option<clearance::Clearance>) {
    let (mut analysis, proof) = clearance::Clearance::proof(command);
    match proof {
        Ok(cleared) => (analysis, Some(cleared)),
        Err(why) => {
            if analysis.is_read_only() {
                analysis.raise(Class::Mutating, format!("merlya cannot run it as it was proved: {why}"));
            }
            (analysis, None)
        }
    }
}

/// Applies the specialist's rule to `command`.
pub fn decide(specialist: Specialist, command: &str, confirm_all: bool) -> PolicyDecision {
    let (analysis, _) = prove(command);
    match specialist {
        Specialist::Diagnostic | Specialist::Security => {
            PolicyDecision { allowed: analysis.is_read_only(), needs_approval: confirm_all, analysis }
        }
        Specialist::Execution => {
            PolicyDecision { allowed: true, needs_approval: confirm_all || !analysis.is_read_only(), analysis }
        }
    }
}

#[cfg(test)]
mod attacks;
#[cfg(test)]
mod differential;
#[cfg(test)]
mod tests;
