//! No mutation without an approval decision.
//!
//! Every command that is not proven read-only (and every command in paranoid
//! mode) passes through an [`ApprovalGate`]: a stored "always allow this
//! prefix on these hosts" rule, or a person's decision through an
//! [`Approver`] — the console modal, a terminal prompt, `--yes`, or, with no
//! terminal and no `--yes`, a refusal. Dangerous commands are never covered by
//! a stored rule: each one needs its own decision. The decision's author goes
//! into the audit log.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::safety::clearance::Clearance;
use crate::safety::leaks::Leak;
use crate::safety::{Analysis, Class};
use crate::store::Store;
use crate::term_safe::{visible, visible_line};

mod route;
pub mod two_person;
pub use route::Route;

/// What a person is asked to approve (read back from JSON by a two-person reviewer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ApprovalRequest {
    /// One line: what will happen.
    pub summary: String,
    /// The exact command (secret references, never values).
    pub command: String,
    /// Target hosts.
    pub hosts: Vec<String>,
    /// The classifier's verdict.
    pub class: Class,
    /// Why it is not read-only.
    pub reasons: Vec<String>,
    /// A unified diff for file edits, if any.
    pub diff: Option<String>,
    /// The read-only check that runs after the change, shown so nothing runs unseen.
    pub post_check: Option<String>,
    /// The command that undoes the change if it or its check fails: approved
    /// with the change, so it is shown here and its risk counts in `class`.
    pub rollback: Option<String>,
    /// Password leaks found in the command, with safer rewrites.
    pub leaks: Vec<Leak>,
    /// The rule keys an "always" decision would store (program, subcommands,
    /// options with values: see [`Analysis::rule_keys`]); empty when the line
    /// cannot be covered by a rule (redirections, assignments, parse problems).
    pub prefixes: Vec<String>,
    /// Further exact command lines this approval clears, each shown in `command`, `rollback` or the
    /// diff (the script behind a file edit's summary, each `kubectl rollout undo` of a rollback).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<String>,
    /// The pipeline kind of the change asked about, when a pipeline asks (two-person approval can
    /// name kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<crate::store::pipelines::Kind>,
}

impl ApprovalRequest {
    /// A request for `command` on `hosts`, from its analysis.
    pub fn new(summary: String, command: &str, hosts: Vec<String>, analysis: &Analysis, leaks: Vec<Leak>) -> Self {
        Self {
            summary,
            command: command.to_string(),
            hosts,
            class: analysis.class,
            reasons: analysis.reasons.clone(),
            diff: None,
            post_check: None,
            rollback: None,
            leaks,
            prefixes: analysis.rule_keys.clone().unwrap_or_default(),
            runs: Vec::new(),
            kind: None,
        }
    }

    /// Every exact command line an approval of this request clears: the command, the post-check, the
    /// rollback and [`Self::runs`].
    pub fn covered(&self) -> Vec<String> {
        let mut lines = vec![self.command.clone()];
        lines.extend(self.post_check.iter().chain(&self.rollback).chain(&self.runs).cloned());
        lines
    }

    /// Whether an "always" decision can be stored for this request.
    pub fn rule_possible(&self) -> bool {
        !self.prefixes.is_empty() && self.class != Class::Dangerous
    }
}

/// A person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run it this time.
    Once,
    /// Run it, and allow this prefix on these hosts from now on.
    AlwaysPrefix,
    /// Do not run it.
    Deny,
}

/// Something that can decide.
#[async_trait]
pub trait Approver: Send + Sync {
    /// Decides on `request`.
    async fn decide(&self, request: &ApprovalRequest) -> Decision;
    /// Who decided, for the audit log.
    fn who(&self) -> String;
    /// Whether a decision waits for a person (a modal, a prompt, an MCP client). One that does not
    /// (`--yes`, no terminal) is immediate, so a change records it with what follows.
    fn asks_a_person(&self) -> bool {
        true
    }
    /// Tells the person something while a decision waits on others (a change waiting for its
    /// second person): the terminal's standard error, a toast in the console.
    fn tell(&self, text: &str) {
        eprintln!("{}", visible_line(text));
    }
}

/// `--yes`: approves everything once, on the operator's behalf.
pub struct AutoApprove;

#[async_trait]
impl Approver for AutoApprove {
    async fn decide(&self, _request: &ApprovalRequest) -> Decision {
        Decision::Once
    }
    fn who(&self) -> String {
        format!("{} (--yes)", crate::ssh::target::local_user())
    }
    fn asks_a_person(&self) -> bool {
        false
    }
}

/// No terminal and no `--yes`: nothing is approved.
pub struct DenyAll;

#[async_trait]
impl Approver for DenyAll {
    async fn decide(&self, _request: &ApprovalRequest) -> Decision {
        Decision::Deny
    }
    fn who(&self) -> String {
        "nobody (no terminal)".into()
    }
    fn asks_a_person(&self) -> bool {
        false
    }
}

/// Asks on the terminal, in the CLI's language.
#[derive(Default)]
pub struct TerminalApprover {
    one_at_a_time: tokio::sync::Mutex<()>,
    locale: crate::i18n::Locale,
}

impl TerminalApprover {
    /// Asks in `locale`'s words (the choices keep their letters: o, a, d).
    pub fn in_locale(locale: crate::i18n::Locale) -> Self {
        Self { one_at_a_time: Default::default(), locale }
    }
}

#[async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &ApprovalRequest) -> Decision {
        let _turn = self.one_at_a_time.lock().await;
        let text = render_request_in(request, &self.locale);
        let rule_possible = request.rule_possible();
        let keys = visible_line(&request.prefixes.join("`, `")).into_owned();
        let always =
            if rule_possible { self.locale.tf("approval.term.always", &[("keys", &keys)]) } else { String::new() };
        let choices = self.locale.tf("approval.term.choices", &[("always", &always)]);
        tokio::task::spawn_blocking(move || {
            eprint!("{text}\n{choices}");
            let mut answer = String::new();
            if std::io::stdin().read_line(&mut answer).is_err() {
                return Decision::Deny;
            }
            match answer.trim() {
                "o" | "once" | "y" | "yes" => Decision::Once,
                "a" | "always" if rule_possible => Decision::AlwaysPrefix,
                _ => Decision::Deny,
            }
        })
        .await
        .unwrap_or(Decision::Deny)
    }
    fn who(&self) -> String {
        format!("{} (prompt)", crate::ssh::target::local_user())
    }
}

/// The request as plain text (terminal prompt, logs). Every field may come
/// from the model or a host, so control characters are made visible: an
/// escape sequence cannot clear the prompt or rewrite what is approved.
pub fn render_request(r: &ApprovalRequest) -> String {
    render_request_in(r, &crate::i18n::Locale::default())
}

/// [`render_request`] in `locale`'s words (the values stay as they are).
pub fn render_request_in(r: &ApprovalRequest, locale: &crate::i18n::Locale) -> String {
    let t = |key: &str| locale.t(key).to_string();
    let command_label = t("approval.term.command");
    let indent = " ".repeat(command_label.chars().count() + 3);
    let mut out = format!(
        "{}: {}\n  {command_label} {}\n  {} {}\n  {} {}\n",
        t("approval.term.needed"),
        visible_line(&r.summary),
        visible(&r.command).replace('\n', &format!("\n{indent}")),
        t("approval.term.hosts"),
        visible_line(&r.hosts.join(", ")),
        t("approval.term.risk"),
        r.class.as_str()
    );
    for reason in &r.reasons {
        out.push_str(&format!("    - {}\n", visible_line(reason)));
    }
    if let Some(check) = &r.post_check {
        out.push_str(&format!("  {} {}\n", t("approval.term.post_check"), visible_line(check)));
    }
    if let Some(rollback) = &r.rollback {
        out.push_str(&format!("  {} {}\n", t("approval.term.rollback"), visible_line(rollback)));
    }
    // Every further line the approval clears, behind the gutter (text from the plan, not merlya's).
    for line in &r.runs {
        out.push_str(&format!("  {} │ {}\n", t("approval.term.also_runs"), visible_line(line)));
    }
    for leak in &r.leaks {
        let safer = t("approval.term.safer");
        out.push_str(&format!("  ! {}\n    {safer} {}\n", visible_line(&leak.what), visible_line(&leak.rewrite)));
    }
    if let Some(diff) = &r.diff {
        // The diff is text from hosts and tools: every line behind a gutter, so none can pass for
        // merlya's own words, and what is approved is said again after it (a long diff scrolls the
        // header away).
        for line in visible(diff).lines() {
            out.push_str(&format!("  │ {line}\n"));
        }
        out.push_str(&format!(
            "{} {} — {} {} — {} {}\n",
            t("approval.term.approve"),
            visible_line(&r.summary),
            t("approval.term.command"),
            visible_line(&r.command),
            t("approval.term.hosts").trim_end(),
            visible_line(&r.hosts.join(", "))
        ));
    }
    out
}

/// The outcome of the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateOutcome {
    /// No approval needed (read-only, not paranoid).
    NotRequired,
    /// Approved, by whom.
    Approved(String),
    /// Refused, by whom.
    Denied(String),
}

impl GateOutcome {
    /// The clearance to run `command` under this outcome: an approval carries its
    /// approver; "not required" clears only a command proven read-only; a denial none.
    /// This is where every clearance that is not a read-only proof is made.
    pub fn clearance(&self, command: &str) -> Option<Clearance> {
        match self {
            GateOutcome::NotRequired => Clearance::read_only(command),
            GateOutcome::Approved(who) => Some(Clearance::approved(command, who)),
            GateOutcome::Denied(_) => None,
        }
    }

    /// Who decided: the approver, "not required", or who denied it.
    pub fn decided_by(&self) -> String {
        match self {
            GateOutcome::NotRequired => "not required".into(),
            GateOutcome::Approved(who) | GateOutcome::Denied(who) => who.clone(),
        }
    }

    /// The audit log's "approved by" text, or `None` when denied.
    pub fn approved_by(&self) -> Option<String> {
        match self {
            GateOutcome::NotRequired => Some("not required".into()),
            GateOutcome::Approved(who) => Some(who.clone()),
            GateOutcome::Denied(_) => None,
        }
    }
}

/// Stored rules plus a person, after the operator's blocked commands.
#[derive(Clone)]
pub struct ApprovalGate {
    approver: Arc<dyn Approver>,
    store: Store,
    confirm_all: bool,
    blocked: Arc<Vec<Vec<String>>>,
    /// The team's two-person rule, when the configuration has one.
    two_person: Option<Arc<two_person::TwoPerson>>,
}

impl ApprovalGate {
    /// A gate asking `approver`, with rules in `store`; `confirm_all` is paranoid mode.
    pub fn new(approver: Arc<dyn Approver>, store: Store, confirm_all: bool) -> Self {
        Self { approver, store, confirm_all, blocked: Arc::new(Vec::new()), two_person: None }
    }

    /// The gate of `config`: its paranoid mode, its `blocked_commands` and its two-person rule
    /// (with `operator.name` as the requester). Every gate that asks a person is made here, so no
    /// path can leave the two-person rule out.
    pub fn with_policy(approver: Arc<dyn Approver>, store: Store, config: &crate::config::Config) -> Self {
        let policy = &config.policy;
        let two_person = two_person::TwoPerson::of_config(config).map(Arc::new);
        let blocked = policy
            .blocked_commands
            .iter()
            .map(|b| b.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .filter(|words| !words.is_empty())
            .collect();
        Self { blocked: Arc::new(blocked), two_person, ..Self::new(approver, store, policy.confirm_all) }
    }

    /// The blocked prefix one of `command`'s simple commands starts with (program by its base name).
    /// Paths that run a proven read without asking check it too, so a blocked read goes to the gate.
    pub fn blocked_by(&self, command: &str) -> Option<String> {
        if self.blocked.is_empty() {
            return None;
        }
        let analysis = crate::safety::analyze(command);
        analysis.commands.iter().find_map(|simple| {
            let words: Vec<&str> = simple.split_whitespace().collect();
            self.blocked
                .iter()
                .find(|prefix| {
                    prefix.len() <= words.len()
                        && prefix.iter().zip(&words).enumerate().all(|(i, (want, have))| {
                            let have = if i == 0 { have.rsplit('/').next().unwrap_or(have) } else { have };
                            want == have
                        })
                })
                .map(|prefix| prefix.join(" "))
        })
    }

    /// The same gate, asking even for a read-only command (a runbook step its author marked
    /// `require_confirmation_for`).
    pub fn asking_always(&self) -> Self {
        Self { confirm_all: true, ..self.clone() }
    }

    /// Whether a decision of this gate can wait for a person (else it is immediate).
    pub fn asks_a_person(&self) -> bool {
        self.approver.asks_a_person()
    }

    /// Decides whether `request` may run.
    pub async fn check(&self, request: &ApprovalRequest) -> GateOutcome {
        if let Some(prefix) = self.blocked_by(&request.command) {
            return GateOutcome::Denied(format!("policy.blocked_commands ({prefix})"));
        }
        if request.class == Class::ReadOnly && !self.confirm_all {
            return GateOutcome::NotRequired;
        }
        if let Some(team) = &self.two_person
            && let Some(why) = team.needed_for(&self.store, request).await
        {
            return self.check_with_second_person(team, request, &why).await;
        }
        if request.rule_possible()
            && let Ok(Some(ids)) = self.store.covering_rules(&request.prefixes, &request.hosts).await
        {
            let ids: Vec<String> = ids.iter().map(|id| format!("#{id}")).collect();
            return GateOutcome::Approved(format!("rule {} ({})", ids.join(","), request.prefixes.join(", ")));
        }
        match self.approver.decide(request).await {
            Decision::Deny => GateOutcome::Denied(self.approver.who()),
            Decision::Once => GateOutcome::Approved(self.approver.who()),
            // Dangerous commands and lines no prefix describes are approved once, never remembered.
            Decision::AlwaysPrefix if !request.rule_possible() => GateOutcome::Approved(self.approver.who()),
            Decision::AlwaysPrefix => {
                for prefix in &request.prefixes {
                    if let Err(e) = self.store.add_rule(prefix, &request.hosts, &self.approver.who()).await {
                        tracing::warn!(error = %e, "cannot store the approval rule");
                    }
                }
                GateOutcome::Approved(format!("{} (always: {})", self.approver.who(), request.prefixes.join(", ")))
            }
        }
    }
}

impl ApprovalGate {
    /// A change the two-person rule names: no stored "always" rule covers it; its requester decides
    /// first (a denial ends it there), then it waits for another operator's review.
    async fn check_with_second_person(
        &self,
        team: &two_person::TwoPerson,
        request: &ApprovalRequest,
        why: &str,
    ) -> GateOutcome {
        // The audit names both people: the requester by `operator.name` (and how they approved), the reviewer.
        let requester = format!("{} [{}]", team.operator, self.approver.who());
        if self.approver.decide(request).await == Decision::Deny {
            return GateOutcome::Denied(requester);
        }
        let tell = |id: i64| {
            self.approver.tell(&format!(
                "change request #{id} waits for a second person ({why}): another operator runs `merlya approvals review {id}` or `:review {id}` in the console"
            ))
        };
        match team.wait(&self.store, request, why, &tell).await {
            two_person::Review::Approved { id, by } => {
                GateOutcome::Approved(format!("{requester} and {by} (two-person, request #{id})"))
            }
            two_person::Review::Rejected { id, by } => {
                GateOutcome::Denied(format!("{by} (second person, request #{id})"))
            }
            two_person::Review::Expired { id } => {
                GateOutcome::Denied(format!("nobody (request #{id} expired without a second person)"))
            }
            two_person::Review::Failed(why) => GateOutcome::Denied(format!("nobody (two-person request: {why})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::safety::analyze;

    /// Answers with a fixed decision and counts the questions.
    struct Person(Decision, AtomicUsize);

    #[async_trait]
    impl Approver for Person {
        async fn decide(&self, _request: &ApprovalRequest) -> Decision {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0
        }
        fn who(&self) -> String {
            "alice".into()
        }
    }

    #[tokio::test]
    async fn blocked_commands_are_refused_before_anyone_is_asked() {
        let (_dir, store) = store().await;
        let person = Arc::new(Person(Decision::Once, AtomicUsize::new(0)));
        let policy = crate::config::PolicyConfig {
            blocked_commands: vec!["iptables -F".into(), "tcpdump".into()],
            ..Default::default()
        };
        let config = crate::config::Config { policy, ..Default::default() };
        let gate = ApprovalGate::with_policy(person.clone(), store, &config);
        for command in ["sudo true; /usr/sbin/iptables -F INPUT", "tcpdump -i any", "ls | tcpdump"] {
            let outcome = gate.check(&request(command, &["web01"])).await;
            assert!(
                matches!(&outcome, GateOutcome::Denied(why) if why.starts_with("policy.blocked_commands")),
                "{command}: {outcome:?}"
            );
        }
        assert_eq!(person.1.load(Ordering::SeqCst), 0, "nobody was asked");
        assert!(gate.blocked_by("iptables -L").is_none());
        assert_eq!(gate.check(&request("iptables -L -n", &["web01"])).await, GateOutcome::NotRequired);
    }

    #[test]
    fn a_forged_approval_inside_a_diff_stays_behind_the_gutter_and_the_real_one_is_said_last() {
        let mut r = request("ansible-playbook site.yml", &["web01"]);
        r.diff = Some("+ok\nAPPROVAL NEEDED: harmless\n  command: true\n  hosts:   none\n".into());
        let text = render_request(&r);
        for line in text.lines().filter(|l| l.contains("harmless") || l.contains("command: true")) {
            assert!(line.starts_with("  │ "), "a diff line outside the gutter: {line}");
        }
        let last = text.lines().last().unwrap();
        assert!(last.starts_with("APPROVE? test — command: ansible-playbook site.yml — hosts: web01"), "{last}");
    }

    fn request(command: &str, hosts: &[&str]) -> ApprovalRequest {
        let hosts = hosts.iter().map(|h| h.to_string()).collect();
        ApprovalRequest::new("test".into(), command, hosts, &analyze(command), Vec::new())
    }

    async fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        (dir, store)
    }

    #[tokio::test]
    async fn always_rules_cover_only_their_prefix_and_hosts() {
        let (_dir, store) = store().await;
        let person = Arc::new(Person(Decision::AlwaysPrefix, AtomicUsize::new(0)));
        let gate = ApprovalGate::new(person.clone(), store.clone(), false);
        assert_eq!(gate.check(&request("df -h", &["web01"])).await, GateOutcome::NotRequired);
        assert_eq!(person.1.load(Ordering::SeqCst), 0);
        let first = gate.check(&request("systemctl restart nginx", &["web01", "web02"])).await;
        assert_eq!(first, GateOutcome::Approved("alice (always: systemctl restart)".into()));
        // Covered: same program, verb and options, a subset of the hosts, other operands.
        let again = gate.check(&request("systemctl restart php-fpm", &["web02"])).await;
        assert!(matches!(&again, GateOutcome::Approved(by) if by.starts_with("rule #1")), "{again:?}");
        assert_eq!(person.1.load(Ordering::SeqCst), 1);
        // Not covered: an option, a wrapper or a verb the person did not see.
        for widened in
            ["systemctl restart --now nginx", "sudo systemctl restart nginx", "systemctl -H evil restart nginx"]
        {
            let before = person.1.load(Ordering::SeqCst);
            gate.check(&request(widened, &["web01"])).await;
            assert_eq!(person.1.load(Ordering::SeqCst), before + 1, "{widened} was approved by the rule");
        }
        let asked = person.1.load(Ordering::SeqCst);
        // Not covered: another host, or a second command smuggled behind the allowed one.
        gate.check(&request("systemctl restart nginx", &["db01"])).await;
        gate.check(&request("systemctl restart nginx; rm -rf /tmp/x", &["web01"])).await;
        gate.check(&request("systemctl restart nginx > /etc/motd", &["web01"])).await;
        assert_eq!(person.1.load(Ordering::SeqCst), asked + 3);
        // Dangerous commands are never remembered.
        gate.check(&request("reboot", &["web01"])).await;
        gate.check(&request("reboot", &["web01"])).await;
        assert_eq!(person.1.load(Ordering::SeqCst), asked + 5);
        assert!(!store.list_rules().await.unwrap().iter().any(|r| r.prefix == "reboot"));
    }

    #[test]
    fn the_terminal_prompt_shows_control_characters_instead_of_sending_them() {
        let mut r = request("echo ok\r\x1b[2Jrm -rf /\necho two", &["web01"]);
        r.summary = "fine\x1b]52;c;cm0=\x07\n  hosts:   nowhere".into();
        let text = render_request(&r);
        assert!(!text.contains(['\x1b', '\r', '\x07']), "{text:?}");
        assert!(text.contains("APPROVAL NEEDED: fine^[]52;c;cm0=^G^J  hosts:   nowhere\n"), "{text}");
        assert!(text.contains("  command: echo ok^M^[[2Jrm -rf /\n           echo two\n"), "{text}");
        assert_eq!(text.matches("\n  hosts:").count(), 1, "no forged line: {text}");
    }

    #[tokio::test]
    async fn an_always_rule_for_git_c_never_approves_git_c_config() {
        let (_dir, store) = store().await;
        let person = Arc::new(Person(Decision::AlwaysPrefix, AtomicUsize::new(0)));
        let gate = ApprovalGate::new(person.clone(), store.clone(), false);
        gate.check(&request("git -C /srv/app pull", &["web01"])).await;
        let again = gate.check(&request("git -C /srv/app pull", &["web01"])).await;
        assert!(matches!(&again, GateOutcome::Approved(by) if by.starts_with("rule #")), "{again:?}");
        assert_eq!(person.1.load(Ordering::SeqCst), 1);
        gate.check(&request("git -C /srv/app -c core.fsmonitor='touch /tmp/pwned' pull", &["web01"])).await;
        gate.check(&request("git -C /srv/app pull --upload-pack=x", &["web01"])).await;
        assert_eq!(person.1.load(Ordering::SeqCst), 3, "each widened git command needs its own decision");
    }

    #[tokio::test]
    async fn denials_and_paranoid_mode() {
        let (_dir, store) = store().await;
        let no = Arc::new(Person(Decision::Deny, AtomicUsize::new(0)));
        let gate = ApprovalGate::new(no.clone(), store.clone(), true);
        assert_eq!(gate.check(&request("df -h", &["web01"])).await, GateOutcome::Denied("alice".into()));
        let gate = ApprovalGate::new(Arc::new(DenyAll), store, false);
        assert!(gate.check(&request("touch /x", &["a"])).await.approved_by().is_none());
    }
}
