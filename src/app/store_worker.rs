//! Listens to the shared store's doorbell (ADR 0032) and tells the console: a change to re-read, the
//! store lost, the store back. Rings that come together (a run's many writes) are folded into one
//! re-read per topic. On SQLite there is no doorbell: the console's two-second refresh reads what
//! another process on the same file wrote.

use std::time::Duration;

use tokio::sync::mpsc;

use super::msg::Msg;
use super::workers::Services;
use crate::store::doorbell::Ring;

/// How long rings are gathered before the console is told (a run rings many times at once).
const GATHER: Duration = Duration::from_millis(15);

/// Starts listening, for the console's life.
pub(super) fn start(services: &Services) {
    let Some(mut bell) = services.ctx.store.doorbell() else { return };
    let (sender, lost) = (services.sender.clone(), services.store_lost.clone());
    // The doorbell is read by a task of its own (its reads are not cut short), the rings gathered here.
    let (tx, mut rings) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let ring = bell.next().await;
            match ring {
                Ring::Lost(_) => lost.store(true, std::sync::atomic::Ordering::Relaxed),
                Ring::Back => lost.store(false, std::sync::atomic::Ordering::Relaxed),
                Ring::Changed(_) => {}
            }
            if tx.send(ring).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        while let Some(first) = rings.recv().await {
            let mut burst = vec![first];
            while let Ok(Some(ring)) = tokio::time::timeout(GATHER, rings.recv()).await {
                burst.push(ring);
            }
            for msg in folded(burst) {
                sender.send(msg);
            }
        }
    });
}

/// The messages for a burst of rings, in order, each topic said once.
fn folded(burst: Vec<Ring>) -> Vec<Msg> {
    let mut msgs: Vec<Msg> = Vec::new();
    for ring in burst {
        let msg = match ring {
            Ring::Changed(topic) => {
                if msgs.iter().any(|m| matches!(m, Msg::StoreChanged(t) if *t == topic)) {
                    continue;
                }
                Msg::StoreChanged(topic)
            }
            Ring::Lost(error) => Msg::StoreLost(error.to_string()),
            Ring::Back => Msg::StoreBack,
        };
        msgs.push(msg);
    }
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::doorbell::Topic;

    #[test]
    fn a_burst_says_each_topic_once_and_keeps_a_loss_in_its_place() {
        let lost = || crate::store::StoreError::Invalid("gone".into());
        let burst = vec![
            Ring::Changed(Topic::Audit),
            Ring::Changed(Topic::Inventory),
            Ring::Changed(Topic::Audit),
            Ring::Lost(lost()),
            Ring::Back,
        ];
        let msgs: Vec<String> = folded(burst).iter().map(|m| format!("{m:?}")).collect();
        assert_eq!(msgs, ["StoreChanged(Audit)", "StoreChanged(Inventory)", "StoreLost(\"gone\")", "StoreBack"]);
    }
}
