//! Permission for one command to run: the only thing the executor accepts.
//!
//! A [`Clearance`] is made in exactly two ways: [`Clearance::read_only`],
//! when the classifier proves the command read-only, or by the approval gate
//! after a decision (`approval::ApprovalGate::clear`, the only caller of
//! [`Clearance::approved`], which a test checks). So no call site, present or
//! future, can run a change nobody approved: it would not have a clearance.
//!
//! A read-only clearance carries the command *rendered from merlya's own
//! parse* (ADR 0026), and that rendering is proved again on its own: what runs
//! is what was proved, whatever bash would have made of the original text.

use super::parse::parse;
use super::spec::Check;
use super::words::Word;
use super::{Analysis, analyze_and_render, invocation, table};

/// Programs that change who runs: a user namespace cannot give them root.
const ELEVATORS: [&str; 5] = ["sudo", "doas", "su", "runuser", "pkexec"];

/// A command, and who (or what proof) allowed it to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clearance {
    command: String,
    approved_by: String,
    /// Proven read-only (not approved by a person): runs in the read-only sandbox where there is one.
    proven: bool,
}

impl Clearance {
    /// Permission for a command the classifier proves read-only; `None` otherwise.
    /// The command that runs is the rendering, which must itself be proved
    /// read-only and render to itself (so the renderer cannot drift from the proof).
    pub fn read_only(command: &str) -> Option<Self> {
        Self::prove(command).ok()
    }

    /// Like [`Clearance::read_only`], with the reason when there is no clearance.
    pub fn prove(command: &str) -> Result<Self, String> {
        Self::proof(command).1
    }

    /// The analysis of `command` and its clearance (or why there is none), from one analysis of
    /// the command and one of its rendering.
    pub fn proof(command: &str) -> (Analysis, Result<Self, String>) {
        let (analysis, rendering) = analyze_and_render(command);
        if !analysis.is_read_only() {
            let why = analysis.reasons.join("; ");
            return (analysis, Err(why));
        }
        let rendered = match rendering {
            Ok(rendered) => rendered,
            Err(why) => return (analysis, Err(format!("merlya cannot write the command back: {why}"))),
        };
        let (again, rendered_again) = analyze_and_render(&rendered);
        let cleared = if !again.is_read_only() {
            Err(format!("its rendering `{rendered}` is not read-only: {}", again.reasons.join("; ")))
        } else if rendered_again.as_deref() != Ok(rendered.as_str()) {
            Err(format!("its rendering `{rendered}` does not render to itself"))
        } else {
            Ok(Self { command: rendered, approved_by: "not required".to_string(), proven: true })
        };
        (analysis, cleared)
    }

    /// Permission given by a decision; only the approval gate calls this.
    pub(crate) fn approved(command: &str, approved_by: &str) -> Self {
        Self { command: command.to_string(), approved_by: approved_by.to_string(), proven: false }
    }

    /// The command to run (for a read-only clearance, merlya's rendering).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Whether it was proven read-only rather than approved (the executor sandboxes those).
    pub fn is_proven_read_only(&self) -> bool {
        self.proven
    }

    /// Whether it runs `sudo`, `doas`, `su`, `runuser` or `pkexec` as a program (through wrappers,
    /// `find -exec` and nested `sh -c` scripts), as merlya's parse reads it: the executor does not put
    /// those in the read-only sandbox. A word that is only an argument (`echo su`) is not one.
    pub fn elevates(&self) -> bool {
        elevates(&self.command, 0)
    }

    /// Who approved it, or "not required" for a read-only command.
    pub fn approved_by(&self) -> &str {
        &self.approved_by
    }
}

/// Whether a simple command of `command` runs an elevator (see [`Clearance::elevates`]).
fn elevates(command: &str, depth: usize) -> bool {
    depth <= 4 && parse(command).commands.iter().any(|c| runs_elevator(&c.words, depth))
}

/// Whether this simple command, or one it runs, is an elevator: wrapper by wrapper as the proof
/// unwraps them. Where the reading stops (a program the table does not know) the answer is no, so
/// the command stays sandboxed; the proof refuses such commands anyway.
fn runs_elevator(words: &[Word], depth: usize) -> bool {
    let mut words = words.to_vec();
    for _ in 0..16 {
        let Some(first) = words.first() else { return false };
        let name = first.text.rsplit('/').next().unwrap_or_default().to_string();
        if ELEVATORS.contains(&name.as_str()) {
            return true;
        }
        let Ok(Some(spec)) = table::lookup(&name) else { return false };
        let inv = invocation::read(&name, spec, &words[1..]).invocation;
        if inv.check == Some(Check::Shell) {
            return inv.has("-c") && inv.operands.first().is_some_and(|script| elevates(&script.text, depth + 1));
        }
        if inv.commands.iter().any(|found| runs_elevator(&found.words, depth)) {
            return true;
        }
        let joined = name == "watch" && !inv.has("-x") && !inv.has("--exec");
        let Some(inner) = inv.wrapped else { return false };
        if joined {
            // watch hands its words, joined, to `sh -c`.
            let script = inner.iter().map(|w| w.text.as_str()).collect::<Vec<_>>().join(" ");
            return elevates(&script, depth + 1);
        }
        // `env NAME=value… program`: the assignments are not the program.
        words = inner.into_iter().skip_while(|w| name == "env" && w.text.contains('=')).collect();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_programs_that_run_elevate() {
        for proven in ["echo su; cat /etc/hostname", "cat /etc/sudoers.d/readme", "grep -r sudo /etc/pam.d", "df -h"] {
            let clearance = Clearance::read_only(proven).unwrap_or_else(|| panic!("`{proven}` is read-only"));
            assert!(!clearance.elevates(), "`{proven}` elevates nothing");
        }
        for proven in ["sudo cat /var/log/secure", "cat x | sudo -n journalctl -u sshd", "/usr/bin/sudo -l"] {
            let clearance = Clearance::read_only(proven).unwrap_or_else(|| panic!("`{proven}` is read-only"));
            assert!(clearance.elevates(), "`{proven}` elevates");
        }
        // Through wrappers, find and nested scripts, proven or not.
        for line in [
            "timeout 5 sudo cat /var/log/secure",
            "env LC_ALL=C sudo cat x",
            "bash -c 'sudo cat /var/log/secure'",
            "sh -c \"nice doas cat /etc/doas.conf\"",
            "find /etc -name x -exec sudo cat {} \\;",
            "xargs sudo cat",
            "watch 'su -c id'",
            "echo $(pkexec id)",
        ] {
            assert!(elevates(line, 0), "`{line}` elevates");
        }
        for line in ["echo sudo su doas", "printf '%s\\n' pkexec", "grep -e runuser /etc/x", "sh -c 'echo su'"] {
            assert!(!elevates(line, 0), "`{line}` elevates nothing");
        }
    }

    #[test]
    fn only_read_only_commands_clear_themselves() {
        assert_eq!(Clearance::read_only("df -h").map(|c| c.approved_by().to_string()), Some("not required".into()));
        assert!(Clearance::read_only("rm -rf /tmp/x").is_none());
    }

    #[test]
    fn only_the_approval_gate_mints_approved_clearances() {
        let mut callers = Vec::new();
        let mut stack = vec![std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"))];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if text.contains(concat!("Clearance::", "approved(")) {
                        callers.push(path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string());
                    }
                }
            }
        }
        assert_eq!(callers, ["src/approval/mod.rs"], "approved clearances are minted only by the gate");
    }
}
