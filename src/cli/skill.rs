//! `merlya skill list|show|run`: runbooks from the command line.

use std::collections::BTreeMap;
use std::sync::Arc;

use clap::Subcommand;
use color_eyre::eyre::{Result, eyre};

use super::lang::{t, tf};
use super::{EXIT_ERROR, EXIT_HOST_FAILED, EXIT_OK, ListFormat};
use crate::approval::ApprovalGate;
use crate::context::Context;
use crate::pipeline::Env;
use crate::skills::run::SkillOutcome;
use crate::skills::verdict::Verdict;
use crate::skills::{Library, Limits, Origin, Skill};
use crate::term_safe::visible_line;

#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum SkillCommand {
    /// The skills this home can run (built-in and MERLYA_HOME/skills), and files that are not valid.
    List {
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
    /// A skill's steps, parameters and limits.
    Show {
        /// Skill name.
        name: String,
    },
    /// Run a skill on targets: its findings ranked worst first (exit 4 when a host is critical).
    Run {
        /// Skill name.
        name: String,
        /// Values of the skill's required parameters, in order (`service_status nginx`).
        values: Vec<String>,
        /// Targets: names, @tags, globs, comma lists, `all`.
        #[arg(long, short)]
        targets: String,
        /// NAME=VALUE for a parameter (repeat).
        #[arg(long = "param", value_parser = super::pipeline::key_value)]
        params: Vec<(String, String)>,
        /// Approve a step that needs it without asking.
        #[arg(long)]
        yes: bool,
        /// Do not ask the model for a summary even when one is configured.
        #[arg(long)]
        no_summary: bool,
        #[arg(long, value_enum, default_value_t)]
        format: ListFormat,
    },
}

pub async fn run(ctx: &Context, cmd: SkillCommand) -> Result<u8> {
    let library = Library::load(&ctx.home.skills_dir());
    match cmd {
        SkillCommand::List { format } => list(&library, format),
        SkillCommand::Show { name } => {
            let skill = find(&library, &name)?;
            print!("{}", yaml_serde::to_string(skill)?);
            Ok(EXIT_OK)
        }
        SkillCommand::Run { name, values, targets, params, yes, no_summary, format } => {
            let skill = find(&library, &name)?.clone();
            let given = crate::skills::run::with_positional(&skill, values, params)?;
            let outcome = execute(ctx, &skill, &given, &targets, yes).await?;
            let summary = if no_summary { None } else { summarise(ctx, &outcome).await };
            print_outcome(ctx, &outcome, summary.as_deref(), format == ListFormat::Json)?;
            Ok(exit_code(&outcome))
        }
    }
}

/// Prints the findings (a table, or JSON) with the model's summary when there is one.
pub fn print_outcome(ctx: &Context, outcome: &SkillOutcome, summary: Option<&str>, json: bool) -> Result<()> {
    if json {
        let mut value = serde_json::to_value(outcome)?;
        if let (Some(text), Some(map)) = (summary, value.as_object_mut()) {
            map.insert("summary".into(), text.into());
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", outcome.to_text_in(super::lang::locale()));
        if let Some(text) = summary {
            let model = ctx.config.model.fast.clone().unwrap_or_else(|| t("cli.skill.model"));
            println!("\n{}\n{}", tf("cli.skill.summary", &[("model", &model)]), crate::term_safe::visible(text));
        }
    }
    Ok(())
}

/// Exit 4 when a host is critical (scripts can page on it), 0 otherwise.
pub(super) fn exit_code(outcome: &SkillOutcome) -> u8 {
    if outcome.culprits.iter().any(|c| c.verdict == Verdict::Crit || c.unreachable) {
        EXIT_HOST_FAILED
    } else {
        EXIT_OK
    }
}

fn find<'a>(library: &'a Library, name: &str) -> Result<&'a Skill> {
    library.get(name).ok_or_else(|| {
        let names: Vec<&str> = library.skills.iter().map(|(s, _)| s.name.as_str()).collect();
        eyre!("{}", tf("cli.skill.unknown", &[("name", name), ("known", &names.join(", "))]))
    })
}

fn list(library: &Library, format: ListFormat) -> Result<u8> {
    match format {
        ListFormat::Json => {
            let skills: Vec<serde_json::Value> = library
                .skills
                .iter()
                .map(|(s, origin)| {
                    serde_json::json!({
                        "name": s.name, "version": s.version, "description": s.description,
                        "steps": s.steps.iter().map(|st| st.check.clone()).collect::<Vec<_>>(),
                        "params": s.params.keys().collect::<Vec<_>>(),
                        "origin": origin,
                    })
                })
                .collect();
            let errors: Vec<String> = library.errors.iter().map(ToString::to_string).collect();
            println!("{}", serde_json::to_string_pretty(&serde_json::json!({ "skills": skills, "errors": errors }))?);
        }
        ListFormat::Table => {
            let rows: Vec<Vec<String>> = library
                .skills
                .iter()
                .map(|(s, origin)| {
                    let from = match origin {
                        Origin::BuiltIn => t("cli.built_in"),
                        Origin::File(p) => p.display().to_string(),
                    };
                    let checks: Vec<&str> = s.steps.iter().map(|st| st.check.as_str()).collect();
                    vec![s.name.clone(), s.version.clone(), checks.join(","), from]
                })
                .collect();
            let headers = ["cli.h.name", "cli.h.version", "cli.h.checks", "cli.h.from"].map(t);
            print!("{}", super::table::render(&headers.each_ref().map(String::as_str), &rows));
            for e in &library.errors {
                eprintln!("{}", tf("cli.skill.invalid", &[("error", &visible_line(&e.to_string()))]));
            }
        }
    }
    Ok(if library.errors.is_empty() { EXIT_OK } else { EXIT_ERROR })
}

/// Runs `skill` on the `targets` expression through this process's gate and audit log.
pub async fn execute(
    ctx: &Context,
    skill: &Skill,
    given: &BTreeMap<String, String>,
    targets: &str,
    yes: bool,
) -> Result<SkillOutcome> {
    let inventory = ctx.inventory_for(targets).await?;
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(yes);
    let executor = Arc::new(ctx.executor(inventory.clone(), prompter, interactive)?);
    let hosts = ctx.resolve_targets(targets, &inventory, &executor.ssh_aliases()).await?;
    let gate = ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let (tx, mut rx) = crate::exec::event_channel();
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let mut env = Env::from_context(ctx, executor, gate, super::cancel_on_signals(), tx);
    if !interactive && !yes {
        env.at_approval = crate::pipeline::AtApproval::NobodyToAsk;
    }
    let limits =
        Limits { max_hosts: ctx.config.policy.max_hosts_per_skill, confirm_all: ctx.config.policy.confirm_all };
    let outcome = crate::skills::run::run(&env, skill, given, &hosts, limits).await;
    drop(env);
    let _ = drain.await;
    Ok(outcome?)
}

/// The model's summary, when one is configured; a failure is reported and the findings stand alone.
pub async fn summarise(ctx: &Context, outcome: &SkillOutcome) -> Option<String> {
    if !ctx.config.has_model() {
        return None;
    }
    let llm = match crate::llm::client::LlmClient::from_config(&ctx.config.model, ctx.secrets().as_ref()) {
        Ok(llm) => llm,
        Err(e) => {
            eprintln!("{}", tf("cli.skill.no_summary", &[("error", &e.to_string())]));
            return None;
        }
    };
    match crate::skills::summary::summarise(&llm, outcome).await {
        Ok(text) => Some(text),
        Err(e) => {
            eprintln!("{}", tf("cli.skill.no_summary", &[("error", &visible_line(&e.to_string()))]));
            None
        }
    }
}
