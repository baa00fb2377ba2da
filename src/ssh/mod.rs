//! SSH with russh: target resolution, host-key verification, authentication,
//! jump hosts and a connection pool.

pub mod auth;
pub mod client;
pub mod known_hosts;
pub mod pool;
pub mod target;

pub use client::{ConnectContext, SshError};
pub use pool::SshPool;
pub use target::SshTarget;
