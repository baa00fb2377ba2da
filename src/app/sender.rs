//! The channel workers use to report to the loop. Sending never panics: once
//! the console is closing, late reports are dropped with a debug log.
//!
//! Host output has a budget: a worker forwarding command output waits once
//! [`OUTPUT_BACKLOG`] lines are queued for the loop, so a host printing faster
//! than the console draws is slowed down (the wait reaches the SSH channel)
//! instead of filling memory.

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::sync::mpsc::UnboundedSender;

use super::msg::Msg;

/// Output messages queued for the loop before forwarding workers wait.
pub const OUTPUT_BACKLOG: usize = 20_000;

/// A cloneable handle for workers.
#[derive(Clone)]
pub struct AppSender {
    tx: UnboundedSender<Msg>,
    output: Arc<Semaphore>,
}

impl AppSender {
    /// Wraps the loop's channel.
    pub fn new(tx: UnboundedSender<Msg>) -> Self {
        Self { tx, output: Arc::new(Semaphore::new(OUTPUT_BACKLOG)) }
    }

    /// Delivers `msg`, or logs that the loop has gone.
    pub fn send(&self, msg: Msg) {
        if self.tx.send(msg).is_err() {
            tracing::debug!("console loop closed; dropping a late message");
        }
    }

    /// Delivers command output, waiting while the loop is [`OUTPUT_BACKLOG`]
    /// messages behind; the loop calls [`AppSender::output_taken`] for each.
    pub async fn send_output(&self, msg: Msg) {
        match self.output.acquire().await {
            Ok(permit) => {
                permit.forget();
                self.send(msg);
            }
            // Closing: output is dropped rather than waited for.
            Err(_) => tracing::debug!("console closing; dropping output"),
        }
    }

    /// The loop took one output message off the queue.
    pub fn output_taken(&self) {
        self.output.add_permits(1);
    }

    /// No more output is wanted (the console is closing): waiting workers go on.
    pub fn close_output(&self) {
        self.output.close();
    }
}
