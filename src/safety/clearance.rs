//! Permission for one command to run: the only thing the executor accepts.
//!
//! A [`Clearance`] is made in exactly two ways: [`Clearance::read_only`],
//! when the classifier proves the command read-only, or by the approval gate
//! after a decision (`approval::ApprovalGate::clear`, the only caller of
//! [`Clearance::approved`], which a test checks). So no call site, present or
//! future, can run a change nobody approved: it would not have a clearance.

use super::analyze;

/// A command, and who (or what proof) allowed it to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clearance {
    command: String,
    approved_by: String,
}

impl Clearance {
    /// Permission for a command the classifier proves read-only; `None` otherwise.
    pub fn read_only(command: &str) -> Option<Self> {
        analyze(command)
            .is_read_only()
            .then(|| Self { command: command.to_string(), approved_by: "not required".to_string() })
    }

    /// Permission given by a decision; only the approval gate calls this.
    pub(crate) fn approved(command: &str, approved_by: &str) -> Self {
        Self { command: command.to_string(), approved_by: approved_by.to_string() }
    }

    /// The command to run.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Who approved it, or "not required" for a read-only command.
    pub fn approved_by(&self) -> &str {
        &self.approved_by
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
