//! `merlya exec TARGETS -- COMMAND`: live fan-out with a summary.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use color_eyre::eyre::{Result, eyre};

use super::{EXIT_HOST_FAILED, EXIT_OK, EXIT_REFUSED, OutputFormat, table};
use crate::approval::{ApprovalGate, ApprovalRequest, GateOutcome};
use crate::context::{Context, audit_refused_all, audit_start_all};
use crate::exec::fanout::fan_out;
use crate::exec::{ExecEvent, HostFailure, HostResult, Stream};
use crate::inventory::resolve_targets;
use crate::safety::analyze;
use crate::safety::leaks::find_leaks;
use crate::ssh::target::local_user;
use crate::store::audit::AuditOutcome;
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

pub async fn run(ctx: &Context, args: ExecArgs) -> Result<u8> {
    let command = args.command.join(" ");
    let inventory = ctx.store.list_hosts().await?;
    let super::Asking { interactive, prompter, approver } = super::Asking::detect(args.yes);
    let executor = Arc::new(ctx.executor(inventory.clone(), prompter.clone(), interactive)?);
    let hosts = resolve_targets(&args.targets, &inventory, &executor.ssh_aliases()).map_err(|e| eyre!("{e}"))?;
    let gate = ApprovalGate::new(approver, ctx.store.clone(), ctx.config.policy.confirm_all);
    let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
    let analysis = analyze(&command);
    let leaks = names.first().map(|h| find_leaks(&command, h)).unwrap_or_default();
    for leak in &leaks {
        eprintln!(
            "warning: {}
  safer: {}",
            leak.what, leak.rewrite
        );
    }
    let request = ApprovalRequest::new(format!("run on {} host(s)", names.len()), &command, names, &analysis, leaks);
    let outcome = gate.check(&request).await;
    let requested_by = local_user();
    let Some(clearance) = outcome.clearance(&command) else {
        let denier = match &outcome {
            GateOutcome::Denied(who) => who.clone(),
            _ => "nobody".into(),
        };
        let requests: Vec<_> =
            hosts.iter().map(|h| ctx.audit_request(&executor, &requested_by, h, &command, &denier)).collect();
        let why = format!("denied by {denier}: {} ({})", analysis.class.as_str(), analysis.reasons.join("; "));
        audit_refused_all(&ctx.store, &requests, AuditOutcome::Denied, &why).await;
        eprintln!(
            "refused: `{command}` is {} ({}) and was not approved{}",
            analysis.class.as_str(),
            analysis.reasons.join("; "),
            if interactive { "" } else { "; pass --yes to approve it without a terminal" }
        );
        return Ok(EXIT_REFUSED);
    };
    let approved_by = clearance.approved_by().to_string();
    // Write-ahead: every host's start entry is stored before any command runs.
    let requests =
        hosts.iter().map(|h| ctx.audit_request(&executor, &requested_by, h, &command, &approved_by)).collect();
    let mut tickets = audit_start_all(&ctx.store, requests).await?;
    let parallel = args.parallel.unwrap_or(ctx.config.policy.max_parallel).max(1);
    let timeout =
        Duration::from_secs_f64(args.timeout.unwrap_or(ctx.config.command_timeout().as_secs_f64()).max(0.001));
    let (tx, mut rx) = crate::exec::event_channel();
    let width = hosts.iter().map(|h| h.name.len()).max().unwrap_or(0);
    let tty = std::io::stdout().is_terminal();
    let color = tty && std::env::var_os("NO_COLOR").is_none();
    // What hosts print reaches a terminal only as visible text, unless --raw asks for the bytes.
    let neutralise = tty && !args.raw;
    let shown = |text: &str| if neutralise { visible_line(text).into_owned() } else { text.to_string() };
    let cancel = super::cancel_on_signals();
    let runner = tokio::spawn(fan_out(executor, hosts, clearance, parallel, timeout, cancel.clone(), tx));

    let mut stdout = std::io::stdout();
    while let Some(event) = rx.recv().await {
        match event {
            ExecEvent::Started { .. } => {}
            ExecEvent::Line { host, stream, line } => {
                if args.format == OutputFormat::Text {
                    let line = shown(&line);
                    let mark = if stream == Stream::Stderr { "!" } else { "|" };
                    let _ = match (color, stream) {
                        (true, Stream::Stderr) => {
                            writeln!(stdout, "\x1b[36m{host:<width$}\x1b[0m \x1b[31m{mark}\x1b[0m {line}")
                        }
                        (true, Stream::Stdout) => writeln!(stdout, "\x1b[36m{host:<width$}\x1b[0m {mark} {line}"),
                        (false, _) => writeln!(stdout, "{host:<width$} {mark} {line}"),
                    };
                }
            }
            ExecEvent::Finished(result) => {
                if let Some(ticket) = tickets.take(&result.host)
                    && let Err(e) = ticket.finish_result(&result).await
                {
                    eprintln!("warning: cannot write the audit log: {e}");
                }
                if let Err(e) = ctx.record(&command, &result).await {
                    eprintln!("warning: {e:#}");
                }
                if args.format == OutputFormat::Json {
                    let _ = writeln!(stdout, "{}", serde_json::to_string(&result)?);
                }
            }
        }
    }
    let results = runner.await;
    tickets.finish_rest(AuditOutcome::Cancelled, "the run stopped before this host reported").await;
    let results = results.map_err(|e| eyre!("fan-out task failed: {e}"))?;
    if args.format == OutputFormat::Text || cancel.is_cancelled() {
        // After a cancel the summary goes to stderr in JSON mode, so stdout stays one record per line.
        let table = format!("\n{}", summary(&results));
        if args.format == OutputFormat::Text { print!("{table}") } else { eprint!("{table}") }
    }
    Ok(if cancel.is_cancelled() {
        super::EXIT_CANCELLED
    } else if results.iter().all(HostResult::success) {
        EXIT_OK
    } else {
        EXIT_HOST_FAILED
    })
}

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
                    (None, Some(HostFailure::Cancelled)) => "cancelled".into(),
                    (None, Some(HostFailure::TimedOut)) => "timed out".into(),
                    (None, _) => "-".into(),
                },
                format!("{:.2}s", r.duration_ms as f64 / 1000.0),
                visible_line(r.error.as_deref().unwrap_or_default()).into_owned(),
            ]
        })
        .collect();
    let ok = results.iter().filter(|r| r.success()).count();
    let mut out = table::render(&["HOST", "EXIT", "DURATION", "ERROR"], &rows);
    for r in results.iter().filter(|r| r.output_cut_bytes > 0) {
        let kept = if r.output_spill.is_empty() {
            "not kept".to_string()
        } else {
            format!("kept in {}", r.output_spill.join(", "))
        };
        out.push_str(&format!(
            "{}: output past {} KiB per stream was shown live and {kept} ({} bytes)\n",
            r.host,
            crate::exec::OUTPUT_CAP / 1024,
            r.output_cut_bytes
        ));
    }
    format!("{out}{ok}/{} hosts succeeded\n", results.len())
}
