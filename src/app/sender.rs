//! The channel workers use to report to the loop. Sending never panics: once
//! the console is closing, late reports are dropped with a debug log.

use tokio::sync::mpsc::UnboundedSender;

use super::msg::Msg;

/// A cloneable handle for workers.
#[derive(Clone)]
pub struct AppSender {
    tx: UnboundedSender<Msg>,
}

impl AppSender {
    /// Wraps the loop's channel.
    pub fn new(tx: UnboundedSender<Msg>) -> Self {
        Self { tx }
    }

    /// Delivers `msg`, or logs that the loop has gone.
    pub fn send(&self, msg: Msg) {
        if self.tx.send(msg).is_err() {
            tracing::debug!("console loop closed; dropping a late message");
        }
    }
}
