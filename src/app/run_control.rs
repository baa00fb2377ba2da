//! What can stop work in flight: one cancellation token per console run and
//! the agent's turn; on quit, everything is cancelled and waited for (with a
//! bound), so nothing is left running on a host when the console exits.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::task::AbortHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::exec::STOP_GRACE;

/// Runs in flight and the agent's turn, so they can be stopped.
#[derive(Default)]
pub(super) struct RunControl {
    tokens: Mutex<HashMap<u64, CancellationToken>>,
    tasks: TaskTracker,
    agent: Mutex<Option<(AbortHandle, CancellationToken)>>,
    /// Fires on quit: work that is not a numbered run (a `:change` pipeline) watches it.
    quitting: CancellationToken,
    /// The watch's timer (one at a time).
    watch: Mutex<Option<CancellationToken>>,
}

impl RunControl {
    /// Registers run `run`; its token fires on `cancel(run)` or on quit.
    pub(super) fn register(&self, run: u64) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut tokens) = self.tokens.lock() {
            tokens.insert(run, token.clone());
        }
        token
    }

    /// A token that fires when the console quits.
    pub(super) fn shutdown_token(&self) -> CancellationToken {
        self.quitting.child_token()
    }

    /// A token for a new watch's timer; the previous watch's timer stops.
    pub(super) fn start_watch(&self) -> CancellationToken {
        let token = self.quitting.child_token();
        if let Ok(mut watch) = self.watch.lock()
            && let Some(old) = watch.replace(token.clone())
        {
            old.cancel();
        }
        token
    }

    /// Stops the watch's timer.
    pub(super) fn stop_watch(&self) {
        if let Some(token) = self.watch.lock().ok().and_then(|mut w| w.take()) {
            token.cancel();
        }
    }

    pub(super) fn forget(&self, run: u64) {
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
        self.quitting.cancel();
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
