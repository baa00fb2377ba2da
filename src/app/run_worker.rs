//! The worker behind a console run: approval gate → write-ahead audit →
//! fan-out → audit and history per host, reported as messages; and the
//! control that cancels runs and the agent's turn and, on quit, waits until
//! every command has stopped on its host.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::msg::Msg;
use super::workers::Services;
use crate::approval::{ApprovalRequest, GateOutcome};
use crate::context::{audit_refused_all, audit_request, audit_start_all, record_history};
use crate::exec::fanout::fan_out;
use crate::exec::{ExecEvent, STOP_GRACE};
use crate::inventory::Host;
use crate::safety::analyze;
use crate::safety::leaks::find_leaks;
use crate::store::audit::AuditOutcome;

/// Runs in flight and the agent's turn, so they can be stopped.
#[derive(Default)]
pub(super) struct RunControl {
    tokens: Mutex<HashMap<u64, CancellationToken>>,
    tasks: TaskTracker,
    agent: Mutex<Option<(AbortHandle, CancellationToken)>>,
}

impl RunControl {
    /// Registers run `run`; its token fires on `cancel(run)` or on quit.
    fn register(&self, run: u64) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(run, token.clone());
        }
        token
    }

    fn forget(&self, run: u64) {
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.remove(&run);
        }
    }

    /// Stops run `run` on its hosts.
    pub(super) fn cancel(&self, run: u64) {
        if let Some(token) = self.tokens.lock().ok().and_then(|t| t.get(&run).cloned()) {
            token.cancel();
        }
    }

    /// Remembers the agent's task (to abort) and the token its commands watch.
    pub(super) fn set_agent(&self, task: AbortHandle, token: CancellationToken) {
        if let Ok(mut agent) = self.agent.lock() {
            *agent = Some((task, token));
        }
    }

    /// Stops the agent's turn: its commands are cancelled, then the task ends.
    /// Returns whether a turn was running.
    pub(super) fn cancel_agent(&self) -> bool {
        let Some((task, token)) = self.agent.lock().ok().and_then(|mut a| a.take()) else { return false };
        token.cancel();
        let finished = task.is_finished();
        tokio::spawn(async move {
            // The turn's commands get their stop sequence before the task is dropped.
            tokio::time::sleep(STOP_GRACE * 2).await;
            task.abort();
        });
        !finished
    }

    /// Cancels everything and waits until the runs have stopped on their
    /// hosts (bounded, so a dead host cannot keep the console open).
    pub(super) async fn shut_down(&self) {
        let tokens: Vec<CancellationToken> =
            self.tokens.lock().map(|t| t.values().cloned().collect()).unwrap_or_default();
        for token in tokens {
            token.cancel();
        }
        self.cancel_agent();
        self.tasks.close();
        let _ = tokio::time::timeout(STOP_GRACE * 4, self.tasks.wait()).await;
    }

    /// Spawns `future` as a tracked task (waited for on quit).
    pub(super) fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tasks.spawn(future)
    }
}

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
        let summary = format!("run on {} host(s)", names.len());
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
        let timeout = Duration::from_secs(ctx.config.ssh.command_timeout_secs);
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
