//! The worker behind a console run: approval gate → write-ahead audit →
//! fan-out → audit and history per host, reported as messages; cancelled
//! through [`super::run_control::RunControl`].

use super::msg::Msg;
use super::workers::Services;
use crate::approval::{ApprovalRequest, GateOutcome};
use crate::context::{audit_refused_all, audit_request, audit_start_all, record_history};
use crate::exec::ExecEvent;
use crate::exec::fanout::fan_out;
use crate::inventory::Host;
use crate::safety::analyze;
use crate::safety::leaks::find_leaks;
use crate::store::audit::AuditOutcome;

/// Runs `command` on `hosts` as run `run`.
pub(super) fn run_command(services: &Services, run: u64, hosts: Vec<Host>, command: String) {
    let (ctx, executor, sender, gate) =
        (services.ctx.clone(), services.executor.clone(), services.sender.clone(), services.gate.clone());
    let control = services.control.clone();
    let locale = services.locale();
    let cancel = control.register(run);
    services.control.spawn(async move {
        let names: Vec<String> = hosts.iter().map(|h| h.name.clone()).collect();
        let analysis = analyze(&command);
        let leaks = names.first().map(|h| find_leaks(&command, h)).unwrap_or_default();
        let summary = locale.tf("approval.run_on", &[("count", &names.len().to_string())]);
        let request = ApprovalRequest::new(summary, &command, names, &analysis, leaks);
        let outcome = tokio::select! {
            outcome = gate.check(&request) => outcome,
            () = cancel.cancelled() => GateOutcome::Denied("the operator (cancelled)".into()),
        };
        let session = &ctx.session_id;
        let who = crate::ssh::target::local_user();
        let Some(clearance) = outcome.clearance(&command) else {
            let by = match outcome {
                GateOutcome::Denied(who) => who,
                _ => "nobody".into(),
            };
            let requests: Vec<_> =
                hosts.iter().map(|h| audit_request(session, &executor, &who, h, &command, &by)).collect();
            let why = format!("denied by {by}: {} ({})", analysis.class.as_str(), analysis.reasons.join("; "));
            audit_refused_all(&ctx.store, &requests, AuditOutcome::Denied, &why).await;
            sender.send(Msg::RunDenied { run, by });
            control.forget(run);
            return;
        };
        let approved_by = clearance.approved_by().to_string();
        // Write-ahead: every host's start entry is stored before any command runs.
        let requests =
            hosts.iter().map(|h| audit_request(session, &executor, &who, h, &command, &approved_by)).collect();
        let mut tickets = match audit_start_all(&ctx.store, requests).await {
            Ok(tickets) => tickets,
            Err(e) => {
                sender.send(Msg::Error(format!("{e:#}")));
                sender.send(Msg::RunDenied { run, by: "the audit log, which cannot be written".into() });
                control.forget(run);
                return;
            }
        };
        sender.send(Msg::RunStarted { run });
        let (tx, mut rx) = crate::exec::event_channel();
        let parallel = ctx.config.policy.max_parallel;
        let timeout = ctx.config.command_timeout();
        let runner = tokio::spawn(fan_out(executor, hosts, clearance, parallel, timeout, cancel, tx));
        while let Some(event) = rx.recv().await {
            if let ExecEvent::Finished(result) = &event {
                if let Some(ticket) = tickets.take(&result.host)
                    && let Err(e) = ticket.finish_result(result).await
                {
                    sender.send(Msg::Error(locale.tf("error.audit_write", &[("error", &e.to_string())])));
                }
                let recorded = record_history(
                    &ctx.store,
                    &ctx.session_id,
                    ctx.config.policy.raw_log_retention_days,
                    &command,
                    result,
                )
                .await;
                if let Err(e) = recorded {
                    sender.send(Msg::Error(format!("{e:#}")));
                }
                if let (Some(failure), Some(error)) = (result.failure, &result.error) {
                    let at = crate::store::now_rfc3339();
                    sender.send(Msg::HostFailed { host: result.host.clone(), failure, error: error.clone(), at });
                }
            }
            sender.send_output(Msg::Exec { run, event }).await;
        }
        let runner = runner.await;
        tickets.finish_rest(AuditOutcome::Cancelled, "the run stopped before this host reported").await;
        control.forget(run);
        match runner {
            Ok(results) => sender.send(Msg::RunDone { run, results }),
            Err(e) => sender.send(Msg::Error(
                locale.tf("error.run_failed", &[("id", &run.to_string()), ("error", &e.to_string())]),
            )),
        }
    });
}
