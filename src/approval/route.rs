//! One routing decision for a command (ADR 0026): parsed once, the read-only
//! proof with its rendering, the operator's blocked list and paranoid mode.
//! `merlya exec`, the console, skills, the agent's specialists and `mcp serve`
//! all ask [`ApprovalGate::route`], so a command cannot be a read on one path
//! and a change on another.

use super::ApprovalGate;
use crate::safety::Analysis;
use crate::safety::clearance::Clearance;

/// Where a command goes.
#[derive(Debug)]
pub enum Route {
    /// Proven read-only, not blocked, not paranoid: runs unasked as this
    /// clearance (merlya's rendering of it).
    Read(Clearance),
    /// A person decides first (the change path for a mutating command).
    Ask {
        /// Why, for the approval and for a refusal.
        analysis: Analysis,
        /// The rendering when the command is proven read-only and is asked only
        /// because of paranoid mode or a blocked prefix: what is approved and run
        /// then (a read-only specialist may run nothing else).
        proven: Option<String>,
    },
}

impl Route {
    /// The command a person approves and that runs on this route.
    pub fn command<'a>(&'a self, original: &'a str) -> &'a str {
        match self {
            Route::Read(clearance) => clearance.command(),
            Route::Ask { proven: Some(rendering), .. } => rendering,
            Route::Ask { proven: None, .. } => original,
        }
    }
}

impl ApprovalGate {
    /// Where `command` goes under this gate's policy.
    pub fn route(&self, command: &str) -> Route {
        let (analysis, cleared) = crate::safety::prove(command);
        match cleared {
            Some(clearance) if !self.confirm_all && self.blocked_by(command).is_none() => Route::Read(clearance),
            Some(clearance) => Route::Ask { analysis, proven: Some(clearance.command().to_string()) },
            None => Route::Ask { analysis, proven: None },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::approval::DenyAll;
    use crate::config::PolicyConfig;

    async fn gate(policy: PolicyConfig) -> ApprovalGate {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        std::mem::forget(dir);
        ApprovalGate::with_policy(Arc::new(DenyAll), store, &crate::config::Config { policy, ..Default::default() })
    }

    #[tokio::test]
    async fn reads_run_as_rendered_and_everything_else_asks() {
        let gate = gate(PolicyConfig::default()).await;
        match gate.route("uptime # load") {
            Route::Read(c) => assert_eq!(c.command(), "uptime"),
            other => panic!("{other:?}"),
        }
        match gate.route("rm -rf /srv") {
            Route::Ask { analysis, proven } => assert!(proven.is_none() && !analysis.is_read_only()),
            other => panic!("{other:?}"),
        }
        // Accepted by the classifier but not renderable: asked, with the reason.
        match gate.route("echo \"${HOME:-$(id)}\"") {
            Route::Ask { analysis, proven: None } => assert!(!analysis.reasons.is_empty()),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn paranoid_mode_and_blocked_reads_ask_for_the_rendering() {
        let paranoid = gate(PolicyConfig { confirm_all: true, ..PolicyConfig::default() }).await;
        match paranoid.route("df -h # disk") {
            Route::Ask { proven: Some(r), .. } => assert_eq!(r, "df -h"),
            other => panic!("{other:?}"),
        }
        let blocked = gate(PolicyConfig { blocked_commands: vec!["cat".into()], ..PolicyConfig::default() }).await;
        assert!(matches!(blocked.route("cat /etc/hostname"), Route::Ask { proven: Some(_), .. }));
    }
}
