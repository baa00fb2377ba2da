//! Command safety, enforced in code: every command is parsed into the simple
//! commands it would run and each is classified `read_only`, `mutating` or
//! `dangerous`, with reasons a person (or a model) can read.
//!
//! The diagnostic and security specialists may only run commands whose every
//! part is proven read-only (an allow-list). Nothing here trusts a prompt.

pub mod leaks;
pub mod parse;
pub mod rules;
pub mod wrappers;

use serde::Serialize;

use parse::{SimpleCommand, Word};
use rules::Judgement;
use wrappers::Unwrapped;

/// How much a command can change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
    /// The two-word prefixes (`systemctl restart`) of every command that is not
    /// read-only, wrappers stripped — what an "always allow" rule must cover.
    /// `None` when part of the risk is not a command (a redirection, a parse
    /// problem, a script): such a line is never approved by a stored rule.
    pub rule_prefixes: Option<Vec<String>>,
}

const MAX_DEPTH: usize = 4;

/// Analyzes a command line.
pub fn analyze(command: &str) -> Analysis {
    analyze_depth(command, 0)
}

fn analyze_depth(command: &str, depth: usize) -> Analysis {
    let mut analysis =
        Analysis { class: Class::ReadOnly, reasons: Vec::new(), commands: Vec::new(), rule_prefixes: Some(Vec::new()) };
    if command.trim().is_empty() {
        analysis.raise(Class::Mutating, "empty command".into());
        return analysis;
    }
    if depth > MAX_DEPTH {
        analysis.raise(Class::Mutating, "shell nesting is too deep to check".into());
        return analysis;
    }
    let compact: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains(":(){") || compact.contains("(){:|:&") {
        analysis.raise(Class::Dangerous, "fork bomb".into());
    }
    let parsed = parse::parse(command);
    for problem in &parsed.problems {
        analysis.raise(Class::Mutating, problem.clone());
    }
    for cmd in &parsed.commands {
        analysis.commands.push(cmd.words.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" "));
        check_redirects(cmd, &mut analysis);
        check_assignments(cmd, &mut analysis);
        if !cmd.words.is_empty() {
            check_words(&cmd.words, depth, &mut analysis);
        }
    }
    check_pipelines(&parsed.commands, &mut analysis);
    analysis
}

impl Analysis {
    /// A risk that no command prefix describes: rules can never cover this line.
    fn raise(&mut self, class: Class, reason: String) {
        self.rule_prefixes = None;
        self.raise_for(class, reason);
    }

    /// A risk carried by a command with this two-word prefix.
    fn raise_command(&mut self, class: Class, reason: String, prefix: String) {
        if let Some(prefixes) = self.rule_prefixes.as_mut()
            && !prefixes.contains(&prefix)
        {
            prefixes.push(prefix);
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
        match (self.rule_prefixes.as_mut(), inner.rule_prefixes) {
            (Some(mine), Some(theirs)) => {
                for p in theirs {
                    if !mine.contains(&p) {
                        mine.push(p);
                    }
                }
            }
            _ => self.rule_prefixes = None,
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

fn check_redirects(cmd: &SimpleCommand, analysis: &mut Analysis) {
    for r in &cmd.redirects {
        let writes = matches!(r.op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | ">&");
        let Some(target) = &r.target else { continue };
        if !writes || (r.op == ">&" && target.text.chars().all(|c| c.is_ascii_digit() || c == '-')) {
            continue;
        }
        let t = target.text.as_str();
        if matches!(t, "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            continue;
        }
        let block = ["/dev/sd", "/dev/nvme", "/dev/vd", "/dev/hd", "/dev/xvd", "/dev/mmcblk", "/dev/dm-", "/dev/md"];
        if block.iter().any(|b| t.starts_with(b)) {
            analysis.raise(Class::Dangerous, format!("writes to the block device {t}"));
        } else if ["/etc/passwd", "/etc/shadow", "/etc/sudoers", "/boot/"].iter().any(|p| t.starts_with(p)) {
            analysis.raise(Class::Dangerous, format!("overwrites {t}"));
        } else if target.dynamic {
            analysis.raise(Class::Mutating, format!("writes to a file only known at run time ({t})"));
        } else {
            analysis.raise(Class::Mutating, format!("writes to {t} with {}", r.op));
        }
    }
}

fn check_assignments(cmd: &SimpleCommand, analysis: &mut Analysis) {
    for a in &cmd.assignments {
        let name = a.split('=').next().unwrap_or("");
        if matches!(
            name,
            "LD_PRELOAD" | "LD_LIBRARY_PATH" | "LD_AUDIT" | "PATH" | "BASH_ENV" | "ENV" | "PROMPT_COMMAND"
        ) {
            analysis.raise(Class::Mutating, format!("{name}= changes which code runs"));
        }
    }
}

/// Strips wrappers, recurses into `sh -c`, and judges the real command.
fn check_words(words: &[Word], depth: usize, analysis: &mut Analysis) {
    let mut words = words;
    // Bounded: each wrapper consumes at least its own name.
    for _ in 0..16 {
        let Some(first) = words.first() else { return };
        if first.dynamic {
            analysis.raise(Class::Mutating, format!("the command name `{}` is only known at run time", first.text));
            return;
        }
        let name = command_name(&first.text);
        let args = &words[1..];
        if wrappers::is_wrapper(name) {
            match wrappers::unwrap(name, args) {
                Unwrapped::Command([]) => {
                    if name == "xargs" {
                        return; // bare xargs echoes its input
                    }
                    if matches!(name, "sudo" | "doas") {
                        analysis.raise(Class::Mutating, format!("{name} without a command"));
                    }
                    return;
                }
                Unwrapped::Command(rest) => {
                    words = rest;
                    continue;
                }
                Unwrapped::Script(script) => {
                    analysis.absorb(analyze_depth(&script, depth + 1));
                    return;
                }
                Unwrapped::Refuse(reason) => {
                    analysis.raise(Class::Mutating, reason);
                    return;
                }
            }
        }
        if matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "busybox" if name != "busybox" || args.first().is_some_and(|a| a.text == "sh"))
        {
            check_shell(name, args, depth, analysis);
            return;
        }
        if matches!(name, "python" | "python3" | "perl" | "ruby" | "node" | "php" | "lua" | "eval" | "source" | ".") {
            analysis.raise(Class::Mutating, format!("`{name}` runs arbitrary code"));
            return;
        }
        if matches!(name, "ssh" | "scp" | "rsync" | "sftp") {
            analysis.raise(Class::Mutating, format!("`{name}` acts on another host; run it there instead"));
            return;
        }
        if args.iter().any(|w| w.dynamic) && !rules::is_flag_insensitive(name) {
            analysis.raise(
                Class::Mutating,
                format!("`{name}` has an argument only known at run time; its effect cannot be checked"),
            );
            return;
        }
        let prefix =
            std::iter::once(name).chain(args.iter().take(1).map(|w| w.text.as_str())).collect::<Vec<_>>().join(" ");
        match rules::judge(name, args) {
            Judgement::ReadOnly => {}
            Judgement::Mutating(r) => analysis.raise_command(Class::Mutating, r, prefix),
            Judgement::Dangerous(r) => analysis.raise_command(Class::Dangerous, r, prefix),
        }
        return;
    }
    analysis.raise(Class::Mutating, "too many nested wrappers".into());
}

/// `sh -c 'STRING'` is analysed recursively; `sh script` or a bare `sh` runs unknown code.
fn check_shell(name: &str, args: &[Word], depth: usize, analysis: &mut Analysis) {
    let mut iter = args.iter().skip(usize::from(name == "busybox"));
    while let Some(arg) = iter.next() {
        if arg.text == "-c" || (arg.text.starts_with('-') && !arg.text.starts_with("--") && arg.text.contains('c')) {
            match iter.next() {
                Some(script) if !script.dynamic => analysis.absorb(analyze_depth(&script.text, depth + 1)),
                Some(script) => analysis.raise(
                    Class::Mutating,
                    format!("{name} -c with a script only known at run time ({})", script.text),
                ),
                None => analysis.raise(Class::Mutating, format!("{name} -c without a script")),
            }
            return;
        }
        if !arg.text.starts_with('-') {
            analysis.raise(Class::Mutating, format!("`{name} {}` runs a script file", arg.text));
            return;
        }
    }
    analysis.raise(Class::Mutating, format!("`{name}` runs commands read from its input"));
}

/// `curl ... | sh` and friends.
fn check_pipelines(commands: &[SimpleCommand], analysis: &mut Analysis) {
    let shells = ["sh", "bash", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby", "node", "php"];
    for cmd in commands {
        let (Some((id, pos)), Some(first)) = (cmd.pipeline, cmd.words.first()) else { continue };
        let mut name = command_name(&first.text);
        let mut idx = 0;
        while wrappers::is_wrapper(name) && idx + 1 < cmd.words.len() {
            idx += 1;
            name = command_name(&cmd.words[idx].text);
        }
        if pos == 0 || !shells.contains(&name) {
            continue;
        }
        let downloads = commands.iter().any(|c| {
            c.pipeline.is_some_and(|(i, p)| i == id && p < pos)
                && c.words.iter().any(|w| matches!(command_name(&w.text), "curl" | "wget" | "fetch" | "nc" | "ncat"))
        });
        if downloads {
            analysis.raise(Class::Dangerous, format!("pipes a download into `{name}`"));
        }
    }
}

/// `/usr/bin/rm` → `rm`.
fn command_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
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

/// Applies the specialist's rule to `command`.
pub fn decide(specialist: Specialist, command: &str, confirm_all: bool) -> PolicyDecision {
    let analysis = analyze(command);
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
mod tests;
