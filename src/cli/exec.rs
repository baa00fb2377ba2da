//! `merlya exec TARGETS -- COMMAND`: live fan-out with a summary.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{Result, eyre};

use super::{EXIT_HOST_FAILED, EXIT_OK, EXIT_REFUSED, OutputFormat, table};
use crate::approval::{ApprovalGate, Route};
use crate::context::Context;
use crate::exec::{ExecEvent, HostFailure, HostResult, Stream};
use crate::pipeline::bash::{BashChange, BashSpec};
use crate::pipeline::fanout::audited_fan_out;
use crate::pipeline::{Env, PipelineRun, PipelineStatus, StageName, runner};
use crate::safety::analyze;
use crate::term_safe::visible_line;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Host names, @tags, globs (web*), comma lists, or `all`.
    pub targets: String,
    /// Hosts at once (default: policy.max_parallel, 32).
    #[arg(long)]
    pub parallel: Option<usize>,
    /// Seconds the whole run may take; hosts still running are stopped and reported timed out
    /// (default: policy.command_timeout, else ssh.command_timeout_secs).
    #[arg(long)]
    pub timeout: Option<f64>,
    #[arg(long, value_enum, default_value_t)]
    pub format: OutputFormat,
    /// Approve a command that changes something without asking (recorded as such in the audit log).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Pass the hosts' output through unchanged, escape sequences included. Without it, control
    /// characters are shown as `^[`, `<9b>`… when stdout is a terminal, so a host cannot drive it.
    #[arg(long)]
    pub raw: bool,
    /// The command, after `--`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

/// What the run came to: results (and the change's record, when it was one), or a change never applied.
enum Outcome {
    Ran(Vec<HostResult>, Option<PipelineRun>),
    NotApplied(PipelineRun),
}

pub async fn run(ctx: &Context, args: ExecArgs) -> Result<u8> {
    let command = args.command.join(" ");
    let inventory = ctx.inventory_for(&args.targets).await?;
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(args.yes);
    let yes = args.yes;
    let executor = Arc::new(ctx.executor(inventory.clone(), prompter.clone(), interactive)?);
    let hosts = ctx.resolve_targets(&args.targets, &inventory, &executor.ssh_aliases()).await?;
    let gate = ApprovalGate::with_policy(approver, ctx.store.clone(), &ctx.config);
    let (tx, mut rx) = crate::exec::event_channel();
    let cancel = super::cancel_on_signals();
    // Nobody reads the output any more (`| head -1`): the command is stopped on every host.
    super::out::stop_when_closed(cancel.clone());
    let mut env = Env::from_context(ctx, executor, gate, cancel.clone(), tx);
    env.parallel = args.parallel.unwrap_or(env.parallel).max(1);
    env.timeout = Duration::from_secs_f64(args.timeout.unwrap_or(env.timeout.as_secs_f64()).max(0.001));
    if !interactive && !args.yes {
        env.at_approval = crate::pipeline::AtApproval::NobodyToAsk;
    }
    // One routing decision: a proven read runs as merlya's rendering, anything else is a change.
    let route = env.gate.route(&command);
    let to_run = route.command(&command).to_string();
    let (cleared, analysis) = match route {
        Route::Read(clearance) => (Some(clearance), analyze(&command)),
        Route::Ask { analysis, .. } => (None, analysis),
    };
    let command = to_run;
    let width = hosts.iter().map(|h| h.name.len()).max().unwrap_or(0);
    let work = {
        let command = command.clone();
        tokio::spawn(async move {
            if let Some(clearance) = cleared {
                return audited_fan_out(&env, &hosts, clearance, None).await.map(|r| Outcome::Ran(r, None));
            }
            // A change: the one change path (plan → approval → apply → audit), covering every host.
            let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
            let summary = Some(format!("run on {} host(s)", names.len()));
            let spec = BashSpec { hosts: names, command, summary, ..BashSpec::default() };
            let mut bash = BashChange::new(spec, hosts);
            let record = runner::record_of(&env, &bash);
            let done = runner::run(&env, &mut bash, record, &|_| {}).await?;
            Ok(if done.stage(StageName::Apply).is_some() {
                Outcome::Ran(std::mem::take(&mut bash.applied), Some(done))
            } else {
                Outcome::NotApplied(done)
            })
        })
    };
    print_events(&mut rx, args.format, args.raw, width).await?;
    let outcome = work
        .await
        .map_err(|e| eyre!("{}", super::lang::tf("cli.exec.task_failed", &[("error", &e.to_string())])))??;
    let (results, change) = match outcome {
        Outcome::Ran(results, change) => (results, change),
        Outcome::NotApplied(change) => {
            let why = match change.status {
                PipelineStatus::Failed => change.stage(StageName::Plan).map(|s| s.detail.clone()).unwrap_or_default(),
                _ => {
                    let (class, reasons) = (analysis.class.as_str(), analysis.reasons.join("; "));
                    let args = [("command", command.as_str()), ("class", class), ("reasons", &reasons)];
                    let mut why = super::lang::tf("cli.exec.not_approved", &args);
                    if !interactive && !yes {
                        why.push_str(&super::lang::t("cli.exec.pass_yes"));
                    } else if !change.decision.is_empty() {
                        // Who decided (a reviewer, an expiry, a review not believed) is said, not guessed.
                        why.push_str(&format!(": {}", crate::term_safe::visible_line(&change.decision)));
                    }
                    why
                }
            };
            let (id, status) = (change.id.to_string(), change.status.as_str());
            eprintln!("{}", super::lang::tf("cli.exec.refused", &[("why", &why), ("id", &id), ("status", status)]));
            return Ok(if change.status == PipelineStatus::Cancelled { super::EXIT_CANCELLED } else { EXIT_REFUSED });
        }
    };
    if args.format == OutputFormat::Text || cancel.is_cancelled() {
        // After a cancel the summary goes to stderr in JSON mode, so stdout stays one record per line.
        let table = format!("\n{}", summary(&results));
        if args.format == OutputFormat::Text { print!("{table}") } else { eprint!("{table}") }
    }
    // A change that did not succeed is never exit 0, even when no host ran ("0/0 hosts succeeded").
    let mut change_failed = false;
    match change {
        Some(change) => {
            change_failed = change.status != PipelineStatus::Succeeded;
            if change_failed && results.is_empty() {
                let why = change.stage(StageName::Apply).map(|s| s.detail.clone()).unwrap_or_default();
                eprintln!("{}", super::lang::tf("cli.exec.failed_before", &[("why", &visible_line(&why))]));
            }
            let (id, status) = (change.id.to_string(), change.status.as_str());
            eprintln!("{}", super::lang::tf("cli.change_line", &[("id", &id), ("status", status)]))
        }
        None => eprintln!("{}", super::lang::tf("cli.run_line", &[("id", &ctx.session_id)])),
    }
    Ok(if cancel.is_cancelled() {
        super::EXIT_CANCELLED
    } else if !change_failed && results.iter().all(HostResult::success) {
        EXIT_OK
    } else {
        EXIT_HOST_FAILED
    })
}

/// Prints hosts' live lines (text) or one JSON record per host result (json) until the run ends.
/// What hosts print reaches a terminal only as visible text, unless `raw` asks for the bytes.
pub(super) async fn print_events(
    rx: &mut tokio::sync::mpsc::Receiver<ExecEvent>,
    format: OutputFormat,
    raw: bool,
    width: usize,
) -> Result<()> {
    print_events_to(rx, format, raw, width, false).await
}

/// [`print_events`], with live lines on stderr when `live_on_stderr` (stdout then stays for one JSON
/// document).
pub(super) async fn print_events_to(
    rx: &mut tokio::sync::mpsc::Receiver<ExecEvent>,
    format: OutputFormat,
    raw: bool,
    width: usize,
    live_on_stderr: bool,
) -> Result<()> {
    let tty = if live_on_stderr { std::io::stderr().is_terminal() } else { std::io::stdout().is_terminal() };
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    let neutralise = tty && !raw;
    let shown = |text: &str| if neutralise { visible_line(text).into_owned() } else { text.to_string() };
    // Lines are written a burst at a time: every line already waiting when the first is taken goes
    // in one write (stderr is unbuffered) and wakes whoever reads it once, not once per line, while
    // the tool that prints them still has the cores. Nothing waits for more: a line is never held
    // back behind a prompt that follows it (an approval, a passphrase).
    let mut batch = Vec::with_capacity(BATCH_START);
    let render = |event: ExecEvent, batch: &mut Vec<u8>| -> Result<()> {
        match event {
            ExecEvent::Started { .. } => {}
            ExecEvent::Line { host, stream, line } if format == OutputFormat::Text => {
                let line = shown(&line);
                let mark = if stream == Stream::Stderr { "!" } else { "|" };
                let host = crate::text_table::pad(&host, width);
                let _ = match (color, stream) {
                    (true, Stream::Stderr) => {
                        writeln!(batch, "\x1b[36m{host}\x1b[0m \x1b[31m{mark}\x1b[0m {line}")
                    }
                    (true, Stream::Stdout) => writeln!(batch, "\x1b[36m{host}\x1b[0m {mark} {line}"),
                    (false, _) => writeln!(batch, "{host} {mark} {line}"),
                };
            }
            ExecEvent::Line { .. } => {}
            ExecEvent::Finished(result) => {
                if format == OutputFormat::Json {
                    let _ = writeln!(batch, "{}", serde_json::to_string(&result)?);
                }
            }
        }
        Ok(())
    };
    let mut open = true;
    while open && let Some(event) = rx.recv().await {
        render(event, &mut batch)?;
        while batch.len() < BATCH_BYTES {
            match rx.try_recv() {
                Ok(event) => render(event, &mut batch)?,
                Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
                Err(tokio::sync::mpsc::error::TryRecvError::Empty) => break,
            }
        }
        if !batch.is_empty() {
            // Written off the runtime's thread: a reader that stops reading (a pager, a paused
            // terminal) holds back the lines, not the run's timeouts or Ctrl-C.
            let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH_START));
            tokio::task::spawn_blocking(move || {
                let _ = if live_on_stderr {
                    std::io::stderr().write_all(&full)
                } else {
                    super::out::Output.write_all(&full)
                };
            })
            .await
            .map_err(|e| eyre!("{}", super::lang::tf("cli.exec.cannot_write_live", &[("error", &e.to_string())])))?;
        }
    }
    Ok(())
}

/// Live output written at once, at most (a burst larger than this is written in several goes).
const BATCH_BYTES: usize = 64 * 1024;

/// A batch's first allocation: a typical burst of lines fits without growing it.
const BATCH_START: usize = 8 * 1024;

/// The table printed after a text-mode run. Errors can quote what a host
/// sent, so their control characters are shown, never sent to the terminal.
pub fn summary(results: &[HostResult]) -> String {
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r.host.clone(),
                match (r.exit_code, r.failure) {
                    (Some(code), _) => code.to_string(),
                    (None, Some(HostFailure::Cancelled)) => super::lang::t("cli.exec.cancelled"),
                    (None, Some(HostFailure::TimedOut)) => super::lang::t("cli.exec.timed_out"),
                    (None, _) => "-".into(),
                },
                format!("{:.2}s", r.duration_ms as f64 / 1000.0),
                visible_line(r.error.as_deref().unwrap_or_default()).into_owned(),
            ]
        })
        .collect();
    let ok = results.iter().filter(|r| r.success()).count();
    let headers = ["cli.h.host", "cli.h.exit", "cli.h.duration", "cli.h.error"].map(super::lang::t);
    let mut out = table::render(&headers.each_ref().map(String::as_str), &rows);
    for r in results.iter().filter(|r| r.output_cut_bytes > 0) {
        let files = r.output_spill.join(", ");
        let kept = match (r.output_spill.is_empty(), r.output_dropped_bytes) {
            (true, _) => super::lang::t("cli.exec.not_kept"),
            (false, 0) => super::lang::tf("cli.exec.kept_in", &[("files", &files)]),
            (false, dropped) => {
                super::lang::tf("cli.exec.kept_until", &[("files", &files), ("dropped", &dropped.to_string())])
            }
        };
        let (kib, bytes) = ((crate::exec::OUTPUT_CAP / 1024).to_string(), r.output_cut_bytes.to_string());
        let args = [("host", r.host.as_str()), ("kib", &kib), ("kept", &kept), ("bytes", &bytes)];
        out.push_str(&format!("{}\n", super::lang::tf("cli.exec.output_cut", &args)));
    }
    let (ok, all) = (ok.to_string(), results.len().to_string());
    format!("{out}{}\n", super::lang::tf("cli.exec.succeeded", &[("ok", &ok), ("all", &all)]))
}
