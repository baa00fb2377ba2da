//! The audited fan-out every path uses to run a cleared command on hosts:
//! write-ahead audit entries for every host, the fan-out, then each host's
//! audit entry, history row and last error as its result arrives.

use crate::context::{audit_request, audit_start_all, record_history};
use crate::exec::fanout::fan_out;
use crate::exec::{ExecEvent, HostResult};
use crate::inventory::Host;
use crate::safety::clearance::Clearance;
use crate::store::audit::AuditOutcome;

use super::Env;

/// Runs `clearance` on `hosts` under `env` (its parallelism, timeout, cancel and live events).
/// `approval_ref` ties the audit rows to the decision they ran under (a pipeline stage).
/// Nothing runs when the audit log cannot be written: that is the error.
pub async fn audited_fan_out(
    env: &Env,
    hosts: &[Host],
    clearance: Clearance,
    approval_ref: Option<String>,
) -> color_eyre::Result<Vec<HostResult>> {
    let (command, approved_by) = (clearance.command().to_string(), clearance.approved_by().to_string());
    let requests = hosts
        .iter()
        .map(|h| {
            let mut request =
                audit_request(&env.session_id, &env.executor, &env.requested_by, h, &command, &approved_by);
            request.approval_ref = approval_ref.clone();
            request
        })
        .collect();
    let mut tickets = audit_start_all(&env.store, requests).await?;
    let (tx, mut rx) = crate::exec::event_channel();
    let runner = tokio::spawn(fan_out(
        env.executor.clone(),
        hosts.to_vec(),
        clearance,
        env.parallel,
        env.timeout,
        env.cancel.clone(),
        tx,
    ));
    while let Some(event) = rx.recv().await {
        if let ExecEvent::Finished(result) = &event {
            if let Some(ticket) = tickets.take(&result.host)
                && let Err(e) = ticket.finish_result(result).await
            {
                tracing::warn!(error = %e, host = %result.host, "cannot finish an audit entry");
            }
            if let Err(e) = record_history(&env.store, &env.session_id, env.retention_days, &command, result).await {
                tracing::warn!(error = %e, host = %result.host, "cannot record the command");
            }
        }
        // The receiver may be gone (a CLI that stopped listening): the run still finishes and is audited.
        let _ = env.events.send(event).await;
    }
    let results = runner.await;
    tickets.finish_rest(AuditOutcome::Cancelled, "the run stopped before this host reported").await;
    results.map_err(|e| color_eyre::eyre::eyre!("the fan-out task failed: {e}"))
}

/// One line per host result: `web01 exit 0 (0.12s)`, the error when it did not run.
pub fn describe_results(results: &[HostResult]) -> String {
    let failed: Vec<&HostResult> = results.iter().filter(|r| !r.success()).collect();
    let mut line = format!("{}/{} hosts succeeded", results.len() - failed.len(), results.len());
    for r in failed.iter().take(5) {
        let why = match (r.exit_code, &r.error) {
            (_, Some(error)) => error.clone(),
            (Some(code), None) => format!("exit {code}"),
            (None, None) => "no result".into(),
        };
        line.push_str(&format!("; {}: {}", r.host, crate::term_safe::visible_line(&why)));
    }
    if failed.len() > 5 {
        line.push_str(&format!("; {} more failed", failed.len() - 5));
    }
    line
}

/// The hosts' output, each under a `== host (exit N) ==` header, cut to `limit` bytes per host.
pub fn combined_output(results: &[HostResult], limit: usize) -> String {
    let mut out = String::new();
    for r in results {
        let code = r.exit_code.map_or_else(|| "-".to_string(), |c| c.to_string());
        out.push_str(&format!("== {} (exit {code}) ==\n", r.host));
        for text in [&r.stdout, &r.stderr] {
            let cut = text.len().saturating_sub(limit);
            let start = (cut..=text.len()).find(|i| text.is_char_boundary(*i)).unwrap_or(text.len());
            out.push_str(&text[start..]);
            if !text.is_empty() && !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}
