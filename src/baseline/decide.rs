//! What an operator decides about a host's drift — accept what the host is now as its baseline, or
//! ignore findings like one from now on. Both hide drift, so each is asked through the approval
//! gate (the console's modal, the CLI's prompt or `--yes`), written to the audit log, and applied
//! at once to the findings the Drift pane shows. The CLI and the pane share this one path.

use color_eyre::eyre::{Result, eyre};

use super::Section;
use super::compare::Row;
use crate::approval::{ApprovalGate, ApprovalRequest};
use crate::config::drift::IgnoreRule;
use crate::safety::{Analysis, Class};
use crate::store::Store;
use crate::store::audit::{AuditOutcome, AuditRequest};
use crate::store::baselines::StoredIgnore;

/// A decision about host drift.
#[derive(Debug, Clone, PartialEq)]
pub enum HostDecision {
    /// Make the host's last check its baseline.
    Accept {
        /// The host.
        host: String,
    },
    /// Hide findings like this from now on.
    Ignore(IgnoreRule),
}

/// How a decision ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// Approved and applied: what changed.
    Done(String),
    /// Refused (by whom).
    Denied(String),
    /// Approved, but there was nothing to apply (why).
    Nothing(String),
}

/// Who decides, for the audit log.
#[derive(Debug, Clone)]
pub struct Who {
    /// The session the entry belongs to.
    pub session_id: String,
    /// Who asked.
    pub requested_by: String,
}

fn quoted(word: &str) -> String {
    crate::safety::shell_quote(word)
}

impl HostDecision {
    /// The rule to ignore what `row` of `host` shows, on that host only.
    pub fn ignore_row(host: &str, row: &Row) -> Self {
        HostDecision::Ignore(IgnoreRule {
            name: format!("{} {} on {host}", row.section.name(), row.key),
            section: Some(row.section.name().to_string()),
            key: row.key.clone(),
            hosts: Some(host.to_string()),
        })
    }

    /// The command it is shown and audited as (what the CLI would be given to do the same).
    pub fn command(&self) -> String {
        match self {
            HostDecision::Accept { host } => format!("merlya baseline accept {}", quoted(host)),
            HostDecision::Ignore(rule) => {
                let mut words = vec!["merlya baseline ignore".to_string(), "--name".into(), quoted(&rule.name)];
                if let Some(section) = &rule.section {
                    words.extend(["--section".into(), quoted(section)]);
                }
                words.extend(["--key".into(), quoted(&rule.key)]);
                if let Some(hosts) = &rule.hosts {
                    words.extend(["--hosts".into(), quoted(hosts)]);
                }
                words.join(" ")
            }
        }
    }

    /// The approval it asks for.
    pub fn request(&self) -> ApprovalRequest {
        let (summary, reasons, hosts) = match self {
            HostDecision::Accept { host } => (
                format!("accept {host} as it is now: its last drift check becomes its baseline"),
                vec![format!("every difference {host} shows now stops being reported")],
                vec![host.clone()],
            ),
            HostDecision::Ignore(rule) => {
                let section = rule.section.as_deref().unwrap_or("every section");
                let hosts = rule.hosts.clone().unwrap_or_else(|| "every host".into());
                (
                    format!("ignore drift of {} in {section} on {hosts}", rule.key),
                    vec![format!(
                        "findings matching it are hidden from every check from now on, counted under `ignore: {}`",
                        rule.name
                    )],
                    vec![hosts],
                )
            }
        };
        let command = self.command();
        let analysis = Analysis { class: Class::Mutating, reasons, commands: vec![command.clone()], rule_keys: None };
        ApprovalRequest::new(summary, &command, hosts, &analysis, Vec::new())
    }

    /// Checks what it names before anything is asked.
    fn check(&self) -> Result<()> {
        if let HostDecision::Ignore(rule) = self {
            if rule.key.trim().is_empty() || rule.name.trim().is_empty() {
                return Err(eyre!("an ignore rule needs a name and a key"));
            }
            if let Some(section) = &rule.section
                && Section::named(section).is_none()
            {
                return Err(eyre!(
                    "`{section}` is not a baseline section ({})",
                    crate::config::drift::SECTIONS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Asks `gate` about `decision`, and applies it when approved; audited either way.
pub async fn decide(store: &Store, gate: &ApprovalGate, who: &Who, decision: &HostDecision) -> Result<Decided> {
    decision.check()?;
    let request = decision.request();
    let outcome = gate.check(&request).await;
    let audit = |approved_by: String| {
        AuditRequest::local(&who.session_id, &who.requested_by, &request.command, &approved_by, None)
    };
    let Some(approved_by) = outcome.approved_by() else {
        let by = outcome.decided_by();
        store.audit_refused(&audit(by.clone()), AuditOutcome::Denied, &format!("denied by {by}")).await?;
        return Ok(Decided::Denied(by));
    };
    let ticket = store.audit_start(audit(approved_by.clone())).await?;
    let applied = apply(store, decision, &approved_by).await;
    let outcome = match &applied {
        Ok(Decided::Done(_)) => AuditOutcome::Ok,
        _ => AuditOutcome::Failed,
    };
    let why = match &applied {
        Ok(Decided::Nothing(why)) => Some(why.clone()),
        Err(e) => Some(format!("{e:#}")),
        _ => None,
    };
    ticket.finish(outcome, None, why).await?;
    applied
}

async fn apply(store: &Store, decision: &HostDecision, approved_by: &str) -> Result<Decided> {
    match decision {
        HostDecision::Accept { host } => {
            if !store.accept_last_check(host).await? {
                return Ok(Decided::Nothing(format!(
                    "{host}: no drift check to accept (run `merlya drift {host}` first)"
                )));
            }
            if store.host_drift().await?.iter().any(|(h, _, _)| h == host) {
                store.set_host_drift(host, "[]").await?;
            }
            Ok(Decided::Done(format!("{host}: its last drift check is now its baseline")))
        }
        HostDecision::Ignore(rule) => {
            let stored = StoredIgnore {
                name: rule.name.clone(),
                section: rule.section.clone(),
                key: rule.key.clone(),
                hosts: rule.hosts.clone(),
                created_by: approved_by.to_string(),
            };
            store.add_ignore_rule(&stored).await?;
            let hidden = hide_found(store, rule).await?;
            Ok(Decided::Done(format!("ignored from now on: `{}` ({hidden} finding(s) shown now hidden)", rule.name)))
        }
    }
}

/// Removes what `rule` hides from the findings stored for the Drift pane; returns how many.
async fn hide_found(store: &Store, rule: &IgnoreRule) -> Result<usize> {
    let filter_rule = super::check::rule_of(rule, &store.list_hosts().await?);
    let mut hidden = 0;
    for (host, _, findings) in store.host_drift().await? {
        let rows: Vec<Row> = serde_json::from_str(&findings).unwrap_or_default();
        let kept: Vec<&Row> = rows.iter().filter(|r| !filter_rule.hides(&host, r.section, &r.key)).collect();
        if kept.len() != rows.len() {
            hidden += rows.len() - kept.len();
            store.set_host_drift(&host, &serde_json::to_string(&kept)?).await?;
        }
    }
    Ok(hidden)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Approver, Decision};

    struct Person(Decision);

    #[async_trait::async_trait]
    impl Approver for Person {
        async fn decide(&self, _request: &ApprovalRequest) -> Decision {
            self.0
        }
        fn who(&self) -> String {
            "alice".into()
        }
    }

    fn row(section: Section, key: &str, host: &str) -> Row {
        Row {
            section,
            key: key.into(),
            kind: super::super::compare::Kind::Changed,
            expected: Some("a".into()),
            found: Some("b".into()),
            hosts: vec![host.into()],
            agree: None,
        }
    }

    #[tokio::test]
    async fn each_decision_is_asked_audited_and_applied_to_what_the_pane_shows() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        let who = Who { session_id: "s".into(), requested_by: "alice".into() };
        let gate = |d| ApprovalGate::new(std::sync::Arc::new(Person(d)), store.clone(), false);
        store.add_host(&crate::inventory::Host::new("web1", "10.0.0.1")).await.unwrap();
        let web = row(Section::Files, "/etc/motd", "web1");
        let pkg = row(Section::Packages, "nginx", "web1");
        store.set_host_drift("web1", &serde_json::to_string(&[&web, &pkg]).unwrap()).await.unwrap();

        // Denied: nothing kept, the refusal audited.
        let ignore = HostDecision::ignore_row("web1", &web);
        assert_eq!(
            ignore.command(),
            "merlya baseline ignore --name 'files /etc/motd on web1' --section files --key /etc/motd --hosts web1"
        );
        let denied = decide(&store, &gate(Decision::Deny), &who, &ignore).await.unwrap();
        assert_eq!(denied, Decided::Denied("alice".into()));
        assert!(store.ignore_rules().await.unwrap().is_empty());

        // Approved: the rule is kept and the finding leaves the pane at once; the other stays.
        let done = decide(&store, &gate(Decision::Once), &who, &ignore).await.unwrap();
        assert!(matches!(&done, Decided::Done(t) if t.contains("1 finding")), "{done:?}");
        assert_eq!(store.ignore_rules().await.unwrap()[0].created_by, "alice");
        let left: Vec<Row> = serde_json::from_str(&store.host_drift().await.unwrap()[0].2).unwrap();
        assert_eq!(left, [pkg]);

        // Accept with no check to accept: approved, nothing applied, said so.
        let accept = HostDecision::Accept { host: "web1".into() };
        let nothing = decide(&store, &gate(Decision::Once), &who, &accept).await.unwrap();
        assert!(matches!(nothing, Decided::Nothing(_)), "{nothing:?}");
        store.add_capture("web1", "{}", true).await.unwrap();
        store.add_capture("web1", "{\"x\":1}", false).await.unwrap();
        assert!(matches!(decide(&store, &gate(Decision::Once), &who, &accept).await.unwrap(), Decided::Done(_)));
        assert_eq!(store.baseline("web1").await.unwrap().unwrap().facts, "{\"x\":1}");
        assert_eq!(store.host_drift().await.unwrap()[0].2, "[]");

        // Every decision is in the audit log, the denial among them.
        let entries = store.audit_entries().await.unwrap();
        let commands: Vec<&str> = entries.iter().map(|e| e.command.as_str()).collect();
        assert!(commands.iter().filter(|c| c.starts_with("merlya baseline ignore")).count() >= 2, "{commands:?}");
        assert!(commands.iter().any(|c| c.starts_with("merlya baseline accept web1")), "{commands:?}");

        // A section that does not exist is named before anything is asked.
        let bad = HostDecision::Ignore(IgnoreRule {
            name: "x".into(),
            section: Some("nope".into()),
            key: "k".into(),
            hosts: None,
        });
        assert!(decide(&store, &gate(Decision::Once), &who, &bad).await.unwrap_err().to_string().contains("nope"));
    }
}
