//! The command-line surface (clap). `merlya` alone opens the console.
//!
//! Exit codes (stable, documented in README.md):
//! 0 success · 1 error (bad config, input file, database) · 2 usage ·
//! 3 refused by safety policy · 4 a host failed (non-zero exit, unreachable,
//! timeout) · 5 integrity check failed (`audit verify`) · 6 the agent could
//! not complete a task (`run`).

// `print!` and `println!` in the command modules below write through
// `out::Output`: a closed pipe (`merlya … | head`) ends output quietly instead
// of panicking (see out.rs for why SIGPIPE is left ignored). Defined before the
// modules so they shadow the std macros there.
macro_rules! print {
    ($($arg:tt)*) => { $crate::cli::out::print(format_args!($($arg)*)) };
}
macro_rules! println {
    () => { $crate::cli::out::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::cli::out::println(format_args!($($arg)*)) };
}

pub mod out;

mod approvals;
mod audit;
mod baseline;
mod completions;
mod config_cmd;
mod doctor;
mod exec;
mod hosts;
mod lang;
mod mcp;
mod pipeline;
mod policy;
mod provision;
mod report;
mod run;
mod secret;
mod skill;
mod store;
mod table;
mod template;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use color_eyre::eyre::{Result, WrapErr};

use crate::context::Context;
use crate::home::MerlyaHome;

/// Success.
pub const EXIT_OK: u8 = 0;
/// A runtime error.
pub const EXIT_ERROR: u8 = 1;
/// Refused by the safety policy (or denied by a person).
pub const EXIT_REFUSED: u8 = 3;
/// A host failed.
pub const EXIT_HOST_FAILED: u8 = 4;
/// An integrity check failed.
pub const EXIT_INTEGRITY: u8 = 5;
/// The run was cancelled by SIGINT or SIGTERM (what a shell reports for Ctrl-C).
pub const EXIT_CANCELLED: u8 = 130;

/// A token cancelled on the first SIGINT or SIGTERM, so a running command is
/// stopped on its hosts and the summary is printed instead of the process
/// dying with commands left behind; a second signal ends the process at once.
pub fn cancel_on_signals() -> tokio_util::sync::CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    let token = tokio_util::sync::CancellationToken::new();
    let cancel = token.clone();
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        return token;
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        eprintln!("\n{}", lang::t("cli.cancelling"));
        cancel.cancel();
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        std::process::exit(i32::from(EXIT_CANCELLED));
    });
    token
}

/// merlya — a terminal operations console for fleets of Linux hosts.
#[derive(Debug, Parser)]
#[command(name = "merlya", version, about, long_about = None)]
pub struct Cli {
    /// merlya's folder (config.yaml, merlya.db, logs/); default ~/.merlya.
    #[arg(long, global = true, env = "MERLYA_HOME", value_name = "DIR")]
    pub home: Option<PathBuf>,
    /// Serve Prometheus metrics on this loopback address (`/metrics`) while the console or `mcp serve` runs.
    #[arg(long, global = true, value_name = "ADDR")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Open the console on a stored conversation: ID, or the newest one without it.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands. Each one's arguments are built only when it is the one parsed (`defer`): building
/// every command's ~100 arguments and their help took ~0.35 ms of every start.
#[derive(Debug, Subcommand)]
#[command(defer = true)]
pub enum Command {
    /// Manage the host inventory.
    #[command(subcommand)]
    Hosts(hosts::HostsCommand),
    /// Give the agent a task and print its answer (needs a configured model).
    Run(run::RunArgs),
    /// Run a command on targets: names, @tags, globs, comma lists, `all`.
    Exec(exec::ExecArgs),
    /// Read and verify the tamper-evident audit log.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// List and revoke stored "always allow" approval rules.
    #[command(subcommand)]
    Approvals(approvals::ApprovalsCommand),
    /// Changes through the one change path: run, list, show, roll back, resume.
    #[command(subcommand)]
    Pipeline(pipeline::PipelineCommand),
    /// External MCP servers: list, tools, test, call, add, remove.
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// Store, read and delete secrets on the OS keyring.
    #[command(subcommand)]
    Secret(secret::SecretCommand),
    /// See how the safety policy judges a command.
    #[command(subcommand)]
    Policy(policy::PolicyCommand),
    /// The incident report of a session (or since a time): Markdown for a postmortem, or JSON.
    Report(report::ReportArgs),
    /// Runbooks that work with or without a model: list, show, run NAME --targets T.
    #[command(subcommand)]
    Skill(skill::SkillCommand),
    /// Host baselines: capture (accept what hosts are now), accept the last drift check, show.
    #[command(subcommand)]
    Baseline(baseline::BaselineCommand),
    /// What changed on hosts since their baseline, or how they differ from their group.
    Drift(baseline::DriftArgs),
    /// Make, change or destroy a resource from a template, through approval.
    #[command(subcommand)]
    Provision(provision::ProvisionCommand),
    /// The state tracker: provisioned resources, their lifecycle and drift.
    #[command(subcommand)]
    State(provision::StateCommand),
    /// IaC templates (built-in and MERLYA_HOME/templates): list, show, render NAME --var k=v --out DIR.
    #[command(subcommand)]
    Template(template::TemplateCommand),
    /// The store: copy this home's into a team's new PostgreSQL database (`store migrate --to postgres://…`).
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Print the metrics (Prometheus text format): this home's commands, pipelines, model and MCP calls.
    Metrics,
    /// Check this machine: disk, memory, ssh-agent, keyring, database, model, MCP servers, pipeline tools.
    Doctor(doctor::DoctorArgs),
    /// Show or create the configuration.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Print shell completions.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// Parses arguments, runs, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    use std::io::IsTerminal;
    let mut hook =
        color_eyre::config::HookBuilder::default().display_env_section(false).display_location_section(false);
    // Colour only for a person at a terminal: logs and pipes get plain text.
    if !std::io::stderr().is_terminal() || std::env::var_os("NO_COLOR").is_some() {
        hook = hook.theme(color_eyre::config::Theme::new());
    }
    let _ = hook.install();
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(report) => {
            eprintln!("{}", error_text(&report));
            EXIT_ERROR
        }
    };
    match out::failure() {
        Some(e) => {
            eprintln!("{}: {}", lang::t("cli.error"), lang::tf("cli.stdout_failed", &[("error", &e.to_string())]));
            ExitCode::from(EXIT_ERROR)
        }
        None => ExitCode::from(code),
    }
}

/// An error and its causes for the terminal. Causes can carry words of a host, an MCP server or the
/// model, so every one is made visible first (an escape sequence in them is shown, not obeyed).
fn error_text(report: &color_eyre::Report) -> String {
    let mut out = format!("{}: {}", lang::t("cli.error"), crate::term_safe::visible(&report.to_string()));
    let causes: Vec<String> =
        report.chain().skip(1).map(|c| crate::term_safe::visible(&c.to_string()).into_owned()).collect();
    if !causes.is_empty() {
        out.push_str(&format!("\n\n{}:", lang::t("cli.caused_by")));
        for (i, cause) in causes.iter().enumerate() {
            out.push_str(&format!("\n   {i}: {cause}"));
        }
    }
    out
}

/// Runs a parsed command line; returns the exit code.
pub fn run(cli: Cli) -> Result<u8> {
    let home = match cli.home {
        Some(dir) => MerlyaHome::at(dir),
        None => MerlyaHome::from_env()?,
    };
    // The console's language for the sentences commands print (not the console itself: it reads its own).
    if cli.command.is_some() {
        lang::init(&home.config_file());
    }
    // A change pipeline waits on one local tool at a time: its tasks run on this thread, so no
    // worker has to be woken for each line or record while the tool uses the cores (ADR 0024).
    let mut builder = match &cli.command {
        Some(Command::Pipeline(_)) => tokio::runtime::Builder::new_current_thread(),
        _ => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder.enable_all().build().wrap_err_with(|| lang::t("cli.no_runtime"))?;
    let command = match cli.command {
        None => return crate::app::run_console(&runtime, home, cli.metrics_addr, cli.resume),
        Some(Command::Config(cmd)) => return config_cmd::run(home, cmd),
        Some(Command::Policy(cmd)) => return policy::run(&home, cmd),
        Some(Command::Template(cmd)) => return template::run(&home, cmd),
        Some(Command::Doctor(args)) => return doctor::run(&runtime, home, args),
        Some(Command::Mcp(cmd)) if cmd.edits_config() => return mcp::edit(&home, cmd),
        Some(Command::Completions { shell }) => {
            clap_complete::generate(shell, &mut Cli::command(), "merlya", &mut out::Output);
            print!("{}", completions::targets(shell));
            return Ok(EXIT_OK);
        }
        Some(command) => command,
    };
    let code = runtime.block_on(async {
        let config = Context::load_config(&home)?;
        // A Terraform change's `init` starts before merlya's own setup and runs beside it (ADR 0024).
        let early = match &command {
            Command::Pipeline(cmd) => pipeline::start_early(cmd, &config),
            _ => None,
        };
        let early_stop = early.as_ref().map(pipeline::Early::stopper);
        let ctx = match Context::open_with(home, "cli", config).await {
            Ok(ctx) => ctx,
            Err(e) => {
                if let Some(stop) = early_stop {
                    stop.stop().await;
                }
                return Err(e);
            }
        };
        let outcome = match command {
            Command::Hosts(cmd) => hosts::run(&ctx, cmd).await,
            Command::Exec(args) => exec::run(&ctx, args).await,
            Command::Run(args) => run::run(&ctx, args).await,
            Command::Audit(cmd) => audit::run(&ctx, cmd).await,
            Command::Secret(cmd) => secret::run(&ctx, cmd).await,
            Command::Approvals(cmd) => approvals::run(&ctx, cmd).await,
            Command::Pipeline(cmd) => pipeline::run(&ctx, cmd, early).await,
            Command::Mcp(cmd) => {
                if let Some(addr) = cli.metrics_addr {
                    serve_metrics(&ctx, addr).await?;
                }
                mcp::run(&ctx, cmd).await
            }
            Command::Report(args) => report::run(&ctx, args).await,
            Command::Skill(cmd) => skill::run(&ctx, cmd).await,
            Command::Baseline(cmd) => baseline::run(&ctx, cmd).await,
            Command::Drift(args) => baseline::drift(&ctx, args).await,
            Command::Provision(cmd) => provision::provision(&ctx, cmd).await,
            Command::State(cmd) => provision::state(&ctx, cmd).await,
            Command::Store(cmd) => store::run(&ctx, cmd).await,
            Command::Metrics => {
                ctx.store.seed_metrics().await?;
                print!("{}", crate::metrics::render());
                Ok(EXIT_OK)
            }
            Command::Config(_) | Command::Policy(_) | Command::Doctor(_) | Command::Completions { .. } => Ok(EXIT_OK),
            Command::Template(_) => Ok(EXIT_OK),
        };
        // An `init` started early is never left running: the plan awaits it, but a command that failed
        // first (an error, or a plan that stopped before it took the `init`) stops it here. At once
        // when it has already ended.
        if let Some(stop) = early_stop {
            stop.stop().await;
        }
        // A clean close checkpoints the WAL into the database file.
        ctx.store.close().await;
        outcome
    });
    // Everything the command started has been awaited; the idle blocking threads are left to the
    // process's exit rather than woken and joined one by one.
    runtime.shutdown_background();
    code
}

/// Seeds the registry with the home's history and serves it on `addr` for the life of the process.
async fn serve_metrics(ctx: &Context, addr: std::net::SocketAddr) -> Result<()> {
    ctx.store.seed_metrics().await?;
    let bound = crate::metrics::serve(addr, tokio_util::sync::CancellationToken::new()).await?;
    eprintln!("{}", lang::tf("cli.metrics_on", &[("url", &format!("http://{bound}/metrics"))]));
    Ok(())
}

/// Output formats shared by listing commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum ListFormat {
    /// Aligned columns for people.
    #[default]
    Table,
    /// JSON for programs.
    Json,
}

/// Output formats of `exec`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum OutputFormat {
    /// `host | line` while running, then a summary table.
    #[default]
    Text,
    /// One JSON object per host and line.
    Json,
}

/// How this CLI run reaches a person: a terminal when stdin and stderr are
/// one, otherwise nobody; `--yes` approves on the operator's behalf.
pub struct Asking {
    /// Whether a person is at a terminal.
    pub interactive: bool,
    /// For host keys, passphrases, MFA and the agent's questions.
    pub prompter: std::sync::Arc<dyn crate::prompt::Prompter>,
    /// For changes.
    pub approver: std::sync::Arc<dyn crate::approval::Approver>,
}

impl Asking {
    /// Picks the prompter and approver for this process.
    pub fn detect(yes: bool) -> Self {
        use std::io::IsTerminal;
        use std::sync::Arc;

        use crate::approval::{AutoApprove, DenyAll, TerminalApprover};
        use crate::prompt::{NoPrompter, TerminalPrompter};
        let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
        let prompter: Arc<dyn crate::prompt::Prompter> = if interactive {
            Arc::new(TerminalPrompter::in_locale(lang::locale().clone()))
        } else {
            Arc::new(NoPrompter)
        };
        let approver: Arc<dyn crate::approval::Approver> = if yes {
            Arc::new(AutoApprove)
        } else if interactive {
            Arc::new(TerminalApprover::in_locale(lang::locale().clone()))
        } else {
            Arc::new(DenyAll)
        };
        Self { interactive, prompter, approver }
    }
}

#[cfg(test)]
mod error_tests {
    use color_eyre::eyre::{WrapErr, eyre};

    #[test]
    fn an_error_is_shown_with_its_causes_and_no_escape_reaches_the_terminal() {
        let report =
            Err::<(), _>(eyre!("server said \u{1b}]52;c;ZXZpbA==\u{7}")).wrap_err("cannot call remote.x").unwrap_err();
        let text = super::error_text(&report);
        assert!(text.starts_with("Error: cannot call remote.x\n\nCaused by:\n   0: server said ^[]52;c;"), "{text}");
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'));
    }
}

#[cfg(test)]
mod parse_tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, Command};
    use crate::cli::pipeline::{PipelineCommand, RunKind};

    #[test]
    fn the_whole_command_line_is_consistent_once_every_deferred_part_is_built() {
        // `debug_assert` builds every subcommand, deferred ones included, and checks them.
        Cli::command().debug_assert();
    }

    #[test]
    fn a_deferred_subcommand_parses_and_keeps_its_own_help() {
        let cli =
            Cli::try_parse_from(["merlya", "--home", "/h", "pipeline", "run", "terraform", "/srv/tf", "--var", "a=b"])
                .unwrap();
        let Some(Command::Pipeline(PipelineCommand::Run(RunKind::Terraform { dir, vars, .. }))) = cli.command else {
            panic!("not a terraform run");
        };
        assert_eq!((dir.to_str(), vars), (Some("/srv/tf"), vec![("a".to_string(), "b".to_string())]));
        assert_eq!(cli.home.as_deref().and_then(|h| h.to_str()), Some("/h"));
        // The options every change takes do not replace the about of the command that flattens them.
        let help = Cli::try_parse_from(["merlya", "pipeline", "run", "terraform", "--help"]).unwrap_err().to_string();
        assert!(help.starts_with("A Terraform configuration folder: init, plan"), "{help}");
        let err = Cli::try_parse_from(["merlya", "pipeline", "run", "terraform"]).unwrap_err().to_string();
        assert!(err.contains("<DIR>"), "{err}");
    }
}
