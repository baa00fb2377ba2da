//! Fan-out: one command on many hosts at once, at most `parallel` at a time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{ExecEvent, Executor, HostFailure, HostResult, RunError, cancelled};
use crate::inventory::Host;
use crate::safety::clearance::Clearance;

/// Runs the cleared command on every host; results come back in the order of
/// `hosts`. `timeout` bounds the whole run, not each host: a host that waits
/// for a slot gets what is left, so a run ends when its timeout says. When
/// `cancel` fires, running commands are stopped on their hosts and hosts
/// still waiting for a slot report cancelled without starting.
pub async fn fan_out(
    executor: Arc<Executor>,
    hosts: Vec<Host>,
    command: Clearance,
    parallel: usize,
    timeout: Duration,
    cancel: CancellationToken,
    events: super::EventSender,
) -> Vec<HostResult> {
    let permits = Arc::new(Semaphore::new(parallel.max(1)));
    let command = Arc::new(command);
    let mut tasks = JoinSet::new();
    let deadline = super::Deadline::after(timeout);
    for (index, host) in hosts.iter().cloned().enumerate() {
        let (executor, permits, command, events) = (executor.clone(), permits.clone(), command.clone(), events.clone());
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let _permit = tokio::select! {
                permit = permits.acquire_owned() => permit,
                () = cancel.cancelled() => {
                    let result = HostResult::failed(&host.name, std::time::Instant::now(), cancelled());
                    let _ = events.send(ExecEvent::Finished(result.clone())).await;
                    return (index, result);
                }
            };
            if deadline.left().is_zero() {
                // It never ran: every slot was held (by hosts that hang) until the run's end.
                let error = RunError::new(
                    HostFailure::NotStarted,
                    format!(
                        "not started: no free slot before the run's {}s timeout (hosts ahead of it were still running)",
                        timeout.as_secs_f64()
                    ),
                );
                let result = HostResult::failed(&host.name, std::time::Instant::now(), error);
                let _ = events.send(ExecEvent::Finished(result.clone())).await;
                return (index, result);
            }
            (index, executor.run_until(&host, &command, deadline, &cancel, &events).await)
        });
    }
    let mut results: Vec<Option<HostResult>> = vec![None; hosts.len()];
    while let Some(joined) = tasks.join_next().await {
        if let Ok((index, result)) = joined {
            results[index] = Some(result);
        }
    }
    results
        .into_iter()
        .zip(hosts)
        .map(|(r, h)| {
            r.unwrap_or_else(|| {
                let error = RunError::new(HostFailure::NotStarted, "worker task panicked");
                HostResult::failed(&h.name, std::time::Instant::now(), error)
            })
        })
        .collect()
}
