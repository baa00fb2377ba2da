//! A pool of SSH connections: one handshake per host, then a channel per
//! command. At most `max` connections stay open (least recently used is
//! closed first); connections idle longer than `idle` are closed; a dead
//! connection is dropped and redialled once, but only when the command had
//! not started yet (re-running a command that may have run is never safe).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Mutex as AsyncMutex;

use super::client::{ConnectContext, Connection, SshError, connect};
use super::target::SshTarget;

struct Slot {
    conn: AsyncMutex<Option<Arc<Connection>>>,
    last_used: std::sync::Mutex<Instant>,
}

/// Shared, cheap to clone through `Arc`.
pub struct SshPool {
    ctx: ConnectContext,
    max: usize,
    idle: Duration,
    slots: std::sync::Mutex<HashMap<String, Arc<Slot>>>,
    handshakes: AtomicU64,
}

impl SshPool {
    /// A pool that connects with `ctx`.
    pub fn new(ctx: ConnectContext, max: usize, idle: Duration) -> Self {
        Self { ctx, max: max.max(1), idle, slots: std::sync::Mutex::new(HashMap::new()), handshakes: AtomicU64::new(0) }
    }

    /// The settings connections are made with (prompter, secrets, ...).
    pub fn context(&self) -> &ConnectContext {
        &self.ctx
    }

    /// How many full SSH handshakes the pool has made (each jump hop counts once per connection).
    pub fn handshakes(&self) -> u64 {
        self.handshakes.load(Ordering::Relaxed)
    }

    /// How long a host has to connect, log in, and then start a command (the connect phase).
    pub fn connect_timeout(&self) -> Duration {
        self.ctx.connect_timeout
    }

    /// Open pooled connections.
    pub fn open_connections(&self) -> usize {
        self.slots.lock().map(|s| s.len()).unwrap_or(0)
    }

    /// A live connection to `target`, reusing one when possible.
    pub async fn get(&self, target: &SshTarget) -> Result<Arc<Connection>, SshError> {
        let key = target.pool_key();
        let slot = self.slot(&key);
        let mut guard = slot.conn.lock().await;
        if let Some(conn) = guard.as_ref()
            && !conn.handle.is_closed()
        {
            return Ok(conn.clone());
        }
        let conn = Arc::new(connect(target, &self.ctx).await?);
        self.handshakes.fetch_add(1, Ordering::Relaxed);
        *guard = Some(conn.clone());
        Ok(conn)
    }

    /// Forgets the connection to `target` (after it was found dead).
    pub async fn discard(&self, target: &SshTarget) {
        let slot = self.slots.lock().ok().and_then(|mut s| s.remove(&target.pool_key()));
        if let Some(slot) = slot {
            slot.conn.lock().await.take();
        }
    }

    /// Closes connections idle for longer than the idle limit.
    pub fn reap_idle(&self) {
        let now = Instant::now();
        if let Ok(mut slots) = self.slots.lock() {
            slots.retain(|_, slot| slot.last_used.lock().map(|t| now.duration_since(*t) < self.idle).unwrap_or(false));
        }
    }

    fn slot(&self, key: &str) -> Arc<Slot> {
        self.reap_idle();
        let Ok(mut slots) = self.slots.lock() else {
            return Arc::new(Slot { conn: AsyncMutex::new(None), last_used: std::sync::Mutex::new(Instant::now()) });
        };
        if let Some(slot) = slots.get(key) {
            if let Ok(mut t) = slot.last_used.lock() {
                *t = Instant::now();
            }
            return slot.clone();
        }
        if slots.len() >= self.max {
            let oldest = slots
                .iter()
                .min_by_key(|(_, s)| s.last_used.lock().map(|t| *t).unwrap_or_else(|_| Instant::now()))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                tracing::debug!(evicted = %k, "pool full; closing least recently used connection");
                slots.remove(&k);
            }
        }
        let slot = Arc::new(Slot { conn: AsyncMutex::new(None), last_used: std::sync::Mutex::new(Instant::now()) });
        slots.insert(key.to_string(), slot.clone());
        slot
    }
}
