//! `merlya run "TASK"`: the agent without the console.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use color_eyre::eyre::{Result, bail};
use serde::Deserialize;

use super::EXIT_OK;
use super::lang::{t, tf};
use crate::agent::{Agent, AgentEvent, Limits, Observer, RunReport};
use crate::approval::ApprovalGate;
use crate::context::Context;
use crate::llm::{LlmClient, ModelRole};
use crate::term_safe::visible;

/// The agent could not complete the task.
pub const EXIT_TASK_FAILED: u8 = 6;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do, in plain words.
    pub task: Option<String>,
    /// A YAML file with a list of tasks (strings, or objects with `task` and optional `model`).
    #[arg(short = 'f', long = "file")]
    pub file: Option<PathBuf>,
    /// Approve every change without asking (recorded as such in the audit log).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// How the answer is printed.
    #[arg(long, value_enum, default_value_t)]
    pub format: RunFormat,
    /// Which configured model runs the agent.
    #[arg(long, value_enum, default_value_t = ModelRole::Brain)]
    pub model: ModelRole,
    /// Continue stored conversation ID (`merlya run` prints it; `/conv` lists them).
    #[arg(long, value_name = "ID", conflicts_with = "file")]
    pub resume: Option<String>,
}

/// Output formats of `run` (an agent's answer, not a fan-out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum RunFormat {
    /// The answer streamed as it is written, the commands and the cost on stderr.
    #[default]
    Text,
    /// One JSON report per task (answer, tool calls, tokens, cost, duration); an array with --file.
    Json,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum TaskEntry {
    Text(String),
    Full {
        task: String,
        #[serde(default)]
        model: Option<ModelRole>,
    },
}

fn load_tasks(path: &std::path::Path) -> Result<Vec<(String, Option<ModelRole>)>> {
    let text = crate::input::read_text(path, crate::input::SETTINGS_LIMIT, "a task list")?;
    let entries: Vec<TaskEntry> = crate::input::from_yaml(&text).map_err(|e| {
        let (path, line) = (path.display().to_string(), e.line().to_string());
        let args = [("path", path.as_str()), ("line", &line), ("error", e.message())];
        color_eyre::eyre::eyre!("{}", tf("cli.run.bad_tasks", &args))
    })?;
    Ok(entries
        .into_iter()
        .map(|e| match e {
            TaskEntry::Text(t) => (t, None),
            TaskEntry::Full { task, model } => (task, model),
        })
        .collect())
}

pub async fn run(ctx: &Context, args: RunArgs) -> Result<u8> {
    let tasks: Vec<(String, Option<ModelRole>)> = match (&args.task, &args.file) {
        (Some(t), None) => vec![(t.clone(), None)],
        (None, Some(f)) => load_tasks(f)?,
        (Some(_), Some(_)) => bail!("{}", t("cli.run.task_and_file")),
        (None, None) => bail!("{}", t("cli.run.no_task")),
    };
    if let (Some(task), None) = (&args.task, &args.file)
        && let Some(code) = routed_to_skill(ctx, task, &args).await?
    {
        return Ok(code);
    }
    if !ctx.config.has_model() {
        bail!("{}", tf("cli.run.no_model", &[("path", &ctx.home.config_file().display().to_string())]));
    }
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(args.yes);
    let inventory = ctx.store.list_hosts().await?;
    let executor = Arc::new(ctx.executor(inventory.clone(), prompter.clone(), interactive)?);
    let gate = ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let text_mode = args.format == RunFormat::Text;
    // The model's words and host errors are shown, never interpreted, by a terminal.
    let stdout_tty = std::io::stdout().is_terminal();
    let shown = move |s: &str, tty: bool| if tty { visible(s).into_owned() } else { s.to_string() };
    let observer: Observer = Arc::new(move |event: AgentEvent| {
        if !text_mode {
            return;
        }
        let mut err = std::io::stderr();
        let _ = match event {
            AgentEvent::Delta { agent, text } if agent == "main" => {
                write!(std::io::stdout(), "{}", shown(&text, stdout_tty)).and_then(|_| std::io::stdout().flush())
            }
            AgentEvent::Command(c) => match (&c.refused, c.exit_code) {
                (Some(why), None) => {
                    writeln!(err, "  ✗ {} {} $ {} — {}", c.specialist, c.host, visible(&c.command), visible(why))
                }
                (_, code) => {
                    let exit = code.map(|c| c.to_string()).unwrap_or("-".into());
                    let args =
                        [("specialist", c.specialist.as_str()), ("command", &visible(&c.command)), ("exit", &exit)];
                    writeln!(err, "{}", tf("cli.run.command_ran", &args))
                }
            },
            AgentEvent::Notice(n) => writeln!(err, "  ! {}", visible(&n)),
            _ => Ok(()),
        };
    });
    let mut reports = Vec::new();
    let mut failed = false;
    // SIGINT/SIGTERM cancel the turn: its commands are stopped on their hosts, the rest of the tasks skipped.
    let cancel = super::cancel_on_signals();
    // External MCP servers start on the first use of their tools and stay up for every task.
    let mcp = Arc::new(crate::mcp::client::McpClients::new(ctx.config.mcp.servers.clone(), ctx.secrets()));
    for (task, role) in tasks {
        if cancel.is_cancelled() {
            break;
        }
        let started = Instant::now();
        // One client per task so tokens and cost are per task.
        let llm = Arc::new(LlmClient::from_config(&ctx.config.model, ctx.secrets().as_ref())?);
        let role = role.unwrap_or(args.model);
        let limits = Limits::from_policy(&ctx.config.policy);
        // Every task is a conversation (stored, listed by /conv, continued with --resume).
        if let Some(id) = &args.resume
            && ctx.store.conversation_messages(id).await?.is_none()
        {
            bail!("{}", tf("cli.run.no_conversation", &[("id", id)]));
        }
        let (conversation, earlier) =
            crate::agent::conversation::begin_turn(&ctx.store, args.resume.as_deref(), &ctx.session_id, &task).await?;
        let budget = crate::agent::context::budget(ctx.config.policy.context_tier);
        let earlier = crate::agent::context::fit(&ctx.store, Some(&llm), &conversation, earlier, budget).await;
        let spent_before = llm.spend();
        let agent = Agent::new(
            llm.clone(),
            executor.clone(),
            gate.clone(),
            ctx.store.clone(),
            ctx.session_id.clone(),
            ctx.config.policy.raw_log_retention_days,
            inventory.clone(),
            prompter.clone(),
            limits,
            role,
            ctx.config.command_timeout(),
            observer.clone(),
        )
        .with_history(&earlier)
        .with_cancel(cancel.clone())
        .with_mcp(mcp.clone());
        let report = agent.run_task(&task).await;
        let saved = crate::agent::conversation::save_turn(
            &ctx.store,
            &conversation,
            &ctx.session_id,
            &report,
            report.answer.as_deref(),
            &spent_before,
            &llm.spend(),
        )
        .await;
        if let Err(e) = saved {
            let args = [("id", conversation.as_str()), ("error", &e.to_string())];
            eprintln!("{}", tf("cli.run.not_saved", &args));
        }
        if text_mode {
            eprintln!("{}", tf("cli.run.conversation", &[("id", &conversation)]));
        }
        failed |= report.error.is_some();
        if text_mode {
            print_text(&report);
        }
        if cancel.is_cancelled() {
            eprint!("{}", command_summary(&report));
        }
        let mut json = json_report(&task, llm.model(role), &report, started.elapsed());
        json["conversation"] = conversation.into();
        reports.push(json);
    }
    mcp.shutdown().await;
    if !text_mode {
        let out = if reports.len() == 1 && args.file.is_none() {
            reports.remove(0)
        } else {
            serde_json::Value::Array(reports)
        };
        println!("{}", serde_json::to_string_pretty(&out)?);
    }
    Ok(if cancel.is_cancelled() {
        super::EXIT_CANCELLED
    } else if failed {
        EXIT_TASK_FAILED
    } else {
        EXIT_OK
    })
}

/// A task a skill's intent pattern matches, naming its hosts, runs the skill: no model needed (one
/// configured summarises the findings). `None` when no skill answers it or it names no host.
async fn routed_to_skill(ctx: &Context, task: &str, args: &RunArgs) -> Result<Option<u8>> {
    let library = crate::skills::Library::load(&ctx.home.skills_dir());
    let Some((skill, params)) = library.route(task) else { return Ok(None) };
    let inventory = ctx.store.list_hosts().await?;
    let Some(targets) = crate::skills::targets_named_in(task, &inventory) else { return Ok(None) };
    eprintln!("{}", tf("cli.run.routed", &[("skill", &skill.name), ("targets", &targets)]));
    let outcome = super::skill::execute(ctx, skill, &params, &targets, args.yes).await?;
    let summary = super::skill::summarise(ctx, &outcome).await;
    super::skill::print_outcome(ctx, &outcome, summary.as_deref(), args.format == RunFormat::Json)?;
    // Exits as `merlya skill run` does: 4 when a host is critical or out of reach.
    Ok(Some(super::skill::exit_code(&outcome)))
}

/// After a cancel: each command the agent ran, per host, with how it ended.
fn command_summary(report: &RunReport) -> String {
    let rows: Vec<Vec<String>> = report
        .commands
        .iter()
        .map(|c| {
            let exit = match (c.exit_code, &c.refused) {
                (Some(code), _) => code.to_string(),
                (None, Some(why)) => visible(why).into_owned(),
                (None, None) => "-".into(),
            };
            vec![c.host.clone(), visible(&c.command).into_owned(), exit]
        })
        .collect();
    let headers = ["cli.h.host", "cli.h.command", "cli.h.exit"].map(t);
    let table = super::table::render(&headers.each_ref().map(String::as_str), &rows);
    format!("\n{}\n{table}", t("cli.run.cancelled"))
}

fn print_text(report: &RunReport) {
    println!();
    if let Some(e) = &report.error {
        eprintln!("{}", tf("cli.run.error", &[("error", &e.to_string())]));
    }
    let approx = if report.usage.approximate { "~" } else { "" };
    let input = format!("{approx}{}", report.usage.input_tokens);
    let output = format!("{approx}{}", report.usage.output_tokens);
    let cost = format!("${:.4}", report.cost_usd);
    eprintln!("  {}", tf("cli.run.usage", &[("input", &input), ("output", &output), ("cost", &cost)]));
}

/// The stable `--format json` record.
fn json_report(task: &str, model: &str, report: &RunReport, took: Duration) -> serde_json::Value {
    serde_json::json!({
        "task": task,
        "model": model,
        "success": report.error.is_none(),
        "answer": report.answer,
        "error": report.error,
        "tool_calls": report.commands,
        "tokens": {
            "input": report.usage.input_tokens,
            "output": report.usage.output_tokens,
            "approximate": report.usage.approximate,
        },
        "cost_usd": report.cost_usd,
        "duration_ms": took.as_millis() as u64,
    })
}
