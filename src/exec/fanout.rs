//! Fan-out: one command on many hosts at once, at most `parallel` at a time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;

use super::{ExecEvent, Executor, HostResult};
use crate::inventory::Host;
use crate::safety::clearance::Clearance;

/// Runs the cleared command on every host; results come back in the order of `hosts`.
pub async fn fan_out(
    executor: Arc<Executor>,
    hosts: Vec<Host>,
    command: Clearance,
    parallel: usize,
    timeout: Duration,
    events: UnboundedSender<ExecEvent>,
) -> Vec<HostResult> {
    let permits = Arc::new(Semaphore::new(parallel.max(1)));
    let command = Arc::new(command);
    let mut tasks = JoinSet::new();
    for (index, host) in hosts.iter().cloned().enumerate() {
        let (executor, permits, command, events) = (executor.clone(), permits.clone(), command.clone(), events.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            (index, executor.run(&host, &command, timeout, &events).await)
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
            r.unwrap_or_else(|| HostResult::failed(&h.name, std::time::Instant::now(), "worker task panicked".into()))
        })
        .collect()
}
