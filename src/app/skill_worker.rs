//! `/skill` in the console, and chat messages a skill answers: the runbook runs
//! on a worker (through the console's gate, so a step that needs an approval
//! opens the modal), its findings are posted as a note, and a configured model
//! summarises them. The skills are those read when the console started.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::command_line::SkillLine;
use super::msg::Msg;
use super::workers::Services;
use crate::inventory::resolve_targets;
use crate::pipeline::Env;
use crate::skills::run::{run as run_skill, with_positional};
use crate::skills::{Limits, Skill};

/// `/skill` (the list) or `/skill NAME [VALUE…] TARGETS`.
pub(super) fn run(services: &Services, line: SkillLine) {
    let library = &services.skills;
    match line {
        SkillLine::List => {
            let mut lines: Vec<String> = library
                .skills
                .iter()
                .map(|(s, _)| format!("  {}  {}", s.name, s.description.lines().next().unwrap_or_default()))
                .collect();
            lines.extend(library.errors.iter().map(|e| format!("  ✗ {e}")));
            services.sender.send(Msg::Note(format!("{}\n{}", services.locale().t("skill.list"), lines.join("\n"))));
        }
        SkillLine::Run { name, values, targets } => {
            let Some(skill) = library.get(&name).cloned() else {
                services.sender.send(Msg::Error(services.locale().tf("skill.unknown", &[("name", &name)])));
                return;
            };
            let (params, named): (Vec<String>, Vec<String>) = values.into_iter().partition(|v| v.contains('='));
            let named = named.into_iter().filter_map(|v| v.split_once('=').map(|(k, v)| (k.into(), v.into())));
            match with_positional(&skill, params, named.collect()) {
                Ok(given) => start(services, skill, given, targets, None),
                Err(e) => services.sender.send(Msg::Error(e.to_string())),
            }
        }
    }
}

/// Whether a chat message is a request a skill answers, naming its hosts; if so the skill runs
/// (when it is the agent's `turn`, the turn ends when the skill has).
pub(super) fn routed(services: &Services, text: &str, turn: bool) -> bool {
    let Some((skill, params)) = services.skills.route(text) else { return false };
    let inventory = services.executor.inventory();
    let Some(targets) = crate::skills::targets_named_in(text, &inventory) else { return false };
    start(services, skill.clone(), params, targets, turn.then_some(()));
    true
}

/// Runs `skill` on `targets`; `turn` says it answers a chat message (the turn is then ended).
fn start(services: &Services, skill: Skill, given: BTreeMap<String, String>, targets: String, turn: Option<()>) {
    let (ctx, executor, gate, sender) =
        (services.ctx.clone(), services.executor.clone(), services.gate.clone(), services.sender.clone());
    let llm = services.llm.read().ok().and_then(|l| l.clone());
    let locale = services.locale();
    let cancel = services.control.shutdown_token();
    sender.send(Msg::Note(locale.tf("skill.started", &[("name", &skill.name), ("targets", &targets)])));
    services.control.spawn(async move {
        let done = |error: Option<String>| {
            if turn.is_some() {
                sender.send(Msg::AgentDone { error, summary: String::new() });
            } else if let Some(e) = error {
                sender.send(Msg::Error(e));
            }
        };
        let inventory = match ctx.store.list_hosts().await {
            Ok(hosts) => hosts,
            Err(e) => return done(Some(e.to_string())),
        };
        let hosts = match resolve_targets(&targets, &inventory, &executor.ssh_aliases()) {
            Ok(hosts) => hosts,
            Err(e) => return done(Some(e.to_string())),
        };
        let (tx, mut rx) = crate::exec::event_channel();
        let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
        let env = Env::from_context(&ctx, Arc::clone(&executor), gate, cancel, tx);
        let limits =
            Limits { max_hosts: ctx.config.policy.max_hosts_per_skill, confirm_all: ctx.config.policy.confirm_all };
        let outcome = run_skill(&env, &skill, &given, &hosts, limits).await;
        drop(env);
        let _ = drain.await;
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => return done(Some(e.to_string())),
        };
        sender.send(Msg::Note(outcome.to_text_in(&locale)));
        // The readings it took, for the inventory's health columns.
        match ctx.store.host_health().await {
            Ok(readings) => sender.send(Msg::Health(readings)),
            Err(e) => tracing::warn!(error = %e, "cannot read the health readings"),
        }
        if let Some(llm) = llm {
            match crate::skills::summary::summarise(&llm, &outcome).await {
                Ok(text) => sender.send(Msg::Note(crate::term_safe::visible(&text).into_owned())),
                Err(e) => sender.send(Msg::Note(locale.tf("skill.no_summary", &[("error", &e.to_string())]))),
            }
        }
        done(None);
    });
}
