//! The one audited door to the executor (ADR 0026): every command merlya runs
//! on a host — a fan-out, an agent's check, a login check, the elevation
//! probe — goes through here. The audit row is built from the [`Clearance`]
//! that runs (its command, which for a read-only clearance is merlya's
//! rendering, and who approved it), written before anything starts; nothing
//! runs when it cannot be written; the row is finished with the outcome and
//! the history recorded. A test checks that no other module calls the
//! executor.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::Result;
use tokio_util::sync::CancellationToken;

use crate::context::{audit_request, audit_start_all, record_history};
use crate::exec::fanout::fan_out;
use crate::exec::{Deadline, EventSender, ExecEvent, Executor, HostFailure, HostResult, RunError};
use crate::inventory::Host;
use crate::safety::clearance::Clearance;
use crate::store::Store;
use crate::store::audit::{AuditOutcome, AuditRequest};

/// Who runs commands, where their audit rows and history go, and how long they may take.
pub struct Door<'a> {
    /// The store of the audit log and the history.
    pub store: &'a Store,
    /// The executor (its SSH pool, secrets and elevation).
    pub executor: &'a Arc<Executor>,
    /// The session the rows belong to.
    pub session_id: &'a str,
    /// Who asked (a person, or `agent@diagnostic`).
    pub requested_by: &'a str,
    /// How long raw output is kept in the history.
    pub retention_days: u32,
    /// How many hosts run at once.
    pub parallel: usize,
    /// The whole run's time limit.
    pub timeout: Duration,
    /// Stops the run on every host.
    pub cancel: &'a CancellationToken,
}

/// One host's result and the id of its audit row.
#[derive(Debug, Clone)]
pub struct Ran {
    /// What happened.
    pub result: HostResult,
    /// The audit row's id (an agent quotes it to the model).
    pub audit_id: Option<i64>,
}

impl<'a> Door<'a> {
    /// The door of a command's own context for one host at a time (a login check, a probe).
    pub fn of_context(
        ctx: &'a crate::context::Context,
        executor: &'a Arc<Executor>,
        requested_by: &'a str,
        timeout: Duration,
        cancel: &'a CancellationToken,
    ) -> Self {
        Door {
            store: &ctx.store,
            executor,
            session_id: &ctx.session_id,
            requested_by,
            retention_days: ctx.config.policy.raw_log_retention_days,
            parallel: 1,
            timeout,
            cancel,
        }
    }

    /// Finds, audited like any command, how each host that a `sudo` command needs elevates (when its
    /// method is not known yet): the executor then never probes below the door.
    async fn probe_elevations(&self, hosts: &[Host], command: &str) {
        use futures::StreamExt;
        let needing: Vec<Host> =
            hosts.iter().filter(|h| self.executor.needs_elevation_probe(h, command)).cloned().collect();
        let Some(probe) = needing.first().and(Clearance::read_only(crate::exec::prepare::ELEVATION_PROBE)) else {
            return;
        };
        let probes = futures::stream::iter(needing)
            .map(|host: Host| {
                let probe = probe.clone();
                async move {
                    let ran = self.run_audited(&host, &probe, None, &crate::exec::no_events()).await;
                    let found = ran.result.stdout.trim().parse::<crate::inventory::Elevation>().ok();
                    if let Some(found) = found.filter(|_| ran.result.success()) {
                        self.executor.remember_elevation(&host.name, found).await;
                    }
                }
            })
            .buffer_unordered(self.parallel.max(1));
        probes.collect::<Vec<()>>().await;
    }

    /// Runs `clearance` on `hosts`, at most `parallel` at a time; results come
    /// back in the order of `hosts`, events go to `events` as they happen.
    /// `approval_ref` ties the rows to the decision they ran under.
    pub async fn fan_out(
        &self,
        hosts: &[Host],
        clearance: Clearance,
        approval_ref: Option<String>,
        events: &EventSender,
    ) -> Result<Vec<HostResult>> {
        self.probe_elevations(hosts, clearance.command()).await;
        let command = clearance.command().to_string();
        let requests = hosts.iter().map(|h| self.request(h, &clearance, approval_ref.clone())).collect();
        let mut tickets = audit_start_all(self.store, requests).await?;
        let (tx, mut rx) = crate::exec::event_channel();
        let runner = tokio::spawn(fan_out(
            self.executor.clone(),
            hosts.to_vec(),
            clearance,
            self.parallel,
            self.timeout,
            self.cancel.clone(),
            tx,
        ));
        let mut unrecorded = std::collections::HashMap::new();
        while let Some(mut event) = rx.recv().await {
            if let ExecEvent::Finished(result) = &mut event {
                if let Some(ticket) = tickets.take(&result.host)
                    && let Err(e) = ticket.finish_result(result).await
                {
                    tracing::warn!(error = %e, host = %result.host, "cannot finish an audit entry");
                    mark_unrecorded(result, &e);
                    unrecorded.insert(result.host.clone(), (result.error.clone(), result.failure));
                }
                if let Err(e) = record_history(self.store, self.session_id, self.retention_days, &command, result).await
                {
                    tracing::warn!(error = %e, host = %result.host, "cannot record the command");
                }
            }
            // The receiver may be gone (a CLI that stopped listening): the run still finishes and is audited.
            let _ = events.send(event).await;
        }
        let results = runner.await;
        tickets.finish_rest(AuditOutcome::Cancelled, "the run stopped before this host reported").await;
        let mut results = results.map_err(|e| color_eyre::eyre::eyre!("the fan-out task failed: {e}"))?;
        for result in &mut results {
            if let Some((error, failure)) = unrecorded.remove(&result.host) {
                (result.error, result.failure) = (error, failure);
            }
        }
        Ok(results)
    }

    /// Runs `clearance` on one host; when the audit row cannot be written the
    /// result says so and nothing ran.
    pub async fn run_one(
        &self,
        host: &Host,
        clearance: &Clearance,
        approval_ref: Option<String>,
        events: &EventSender,
    ) -> Ran {
        self.probe_elevations(std::slice::from_ref(host), clearance.command()).await;
        self.run_audited(host, clearance, approval_ref, events).await
    }

    /// The audit row of `clearance` on `host`: built from what runs and who allowed it.
    fn request(&self, host: &Host, clearance: &Clearance, approval_ref: Option<String>) -> AuditRequest {
        let mut request = audit_request(
            self.session_id,
            self.executor,
            self.requested_by,
            host,
            clearance.command(),
            clearance.approved_by(),
        );
        request.approval_ref = approval_ref;
        request
    }

    /// One host, audited: the row written ahead, the run, the row finished, the history recorded.
    async fn run_audited(
        &self,
        host: &Host,
        clearance: &Clearance,
        approval_ref: Option<String>,
        events: &EventSender,
    ) -> Ran {
        let command = clearance.command();
        let ticket = match self.store.audit_start(self.request(host, clearance, approval_ref)).await {
            Ok(ticket) => ticket,
            Err(e) => {
                let error =
                    RunError::new(HostFailure::NotStarted, format!("not run: the audit log cannot be written ({e})"));
                return Ran {
                    result: HostResult::failed(&host.name, std::time::Instant::now(), error),
                    audit_id: None,
                };
            }
        };
        let audit_id = Some(ticket.id());
        let mut result =
            self.executor.run_until(host, clearance, Deadline::after(self.timeout), self.cancel, events).await;
        if let Err(e) = ticket.finish_result(&result).await {
            tracing::warn!(error = %e, host = %host.name, "cannot finish an audit entry");
            mark_unrecorded(&mut result, &e);
        }
        if let Err(e) = record_history(self.store, self.session_id, self.retention_days, command, &result).await {
            tracing::warn!(error = %e, host = %host.name, "cannot record the command");
        }
        Ran { result, audit_id }
    }
}

/// A result whose audit row could not be finished (a full disk): it ran, and it is never reported
/// as a success, since the log that must hold every outcome does not hold this one.
fn mark_unrecorded(result: &mut HostResult, error: &dyn std::fmt::Display) {
    let ran = match result.exit_code {
        Some(code) => format!("it ran (exit {code})"),
        None => "it ran".to_string(),
    };
    result.error = Some(format!("{ran}, but its outcome could not be written to the audit log: {error}"));
    result.failure = Some(HostFailure::Unrecorded);
}

#[cfg(test)]
mod tests {
    /// Calls of the executor outside the door (and the executor itself).
    fn callers(needle: &str) -> Vec<String> {
        let mut found = Vec::new();
        let root = std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/src"));
        let mut stack = vec![root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                let rel = path.strip_prefix(&root).unwrap().display().to_string();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && rel != "door.rs" && !rel.starts_with("exec/") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if text.contains(needle) {
                        found.push(rel);
                    }
                }
            }
        }
        found
    }

    #[test]
    fn only_the_door_calls_the_executor() {
        for needle in [".run_until(", "executor.run(", "fanout::fan_out", "exec::fanout"] {
            assert_eq!(callers(needle), Vec::<String>::new(), "`{needle}` outside src/door.rs");
        }
    }
}
