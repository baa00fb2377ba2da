//! The doorbell of a shared store (ADR 0032): on PostgreSQL, triggers ring the channel
//! `merlya_store` with the name of the table a committed statement changed
//! (migrations/postgres/…_doorbell.sql), and a console listening re-reads what it shows through its
//! own queries, by version. The ring carries no data, so nothing read from it needs trusting.
//!
//! A lost connection is said at once ([`Ring::Lost`]: the server stopped or the network went), and
//! the doorbell connects again by itself; [`Ring::Back`] then asks for a full re-read, because rings
//! sent while it was away are gone. SQLite has no doorbell: a console polls (one machine, one file).

use std::time::Duration;

use sqlx::postgres::{PgListener, PgPool};

use super::{Store, StoreError};

/// The channel the triggers ring.
pub const CHANNEL: &str = "merlya_store";

/// How long the doorbell waits between two attempts to connect again.
const RETRY: Duration = Duration::from_secs(1);

/// How long one attempt to connect again may take (the pool's own wait is longer, for work).
const CONNECT_WAIT: Duration = Duration::from_secs(2);

/// What changed, grouped by what a console shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topic {
    /// Hosts and tags (the inventory version moved).
    Inventory,
    /// "Always allow" rules.
    Rules,
    /// Change pipelines and their stages.
    Pipelines,
    /// Resources, baselines, drift and ignore rules.
    Drift,
    /// Health readings and last errors of hosts.
    Health,
    /// A new audit entry (a command started or ended somewhere).
    Audit,
    /// A change waiting for a second person, or its review.
    Reviews,
    /// A table this merlya does not know (a newer one rang): re-read everything.
    Unknown,
}

impl Topic {
    /// The topic of a ring's payload (the table's name).
    pub fn of_table(table: &str) -> Topic {
        match table {
            "inventory_version" | "hosts" | "host_tags" => Topic::Inventory,
            "approval_rules" => Topic::Rules,
            "pipeline_runs" => Topic::Pipelines,
            "resources" | "baselines" | "host_drift" | "drift_ignores" => Topic::Drift,
            "host_health" | "host_errors" => Topic::Health,
            "audit_log" => Topic::Audit,
            "change_requests" => Topic::Reviews,
            _ => Topic::Unknown,
        }
    }
}

/// What the doorbell says.
#[derive(Debug)]
pub enum Ring {
    /// Another writer (or this one) committed a change.
    Changed(Topic),
    /// The connection to the store was lost; it is being made again. What is shown may be stale.
    Lost(StoreError),
    /// Connected again after [`Ring::Lost`]: rings were missed, re-read everything.
    Back,
}

/// A listening connection to the store's channel, connected again by itself when lost.
pub struct Doorbell {
    pool: PgPool,
    location: String,
    listener: Option<PgListener>,
    /// [`Ring::Lost`] was said and [`Ring::Back`] not yet.
    lost: bool,
}

impl Store {
    /// The store's doorbell (`None` on SQLite), not connected yet: [`Doorbell::next`] connects, or
    /// [`Doorbell::connect`] for a caller that must not miss a change committed after it returns.
    pub fn doorbell(&self) -> Option<Doorbell> {
        let super::db::Pool::Postgres(pool) = self.pool() else { return None };
        Some(Doorbell { pool: pool.clone(), location: self.location().to_string(), listener: None, lost: false })
    }
}

impl Doorbell {
    /// Listens now (a no-op when listening already).
    pub async fn connect(&mut self) -> Result<(), StoreError> {
        if self.listener.is_none() {
            let unreachable = |source| StoreError::Unreachable { location: self.location.clone(), source };
            let mut listener = PgListener::connect_with(&self.pool).await.map_err(unreachable)?;
            // A lost connection is said at once, and connected again here, not inside `try_recv`.
            listener.eager_reconnect(false);
            listener.listen(CHANNEL).await.map_err(unreachable)?;
            self.listener = Some(listener);
        }
        Ok(())
    }

    /// The next ring. A connection that fails or is lost is said once ([`Ring::Lost`]); the doorbell
    /// then tries again every second and says [`Ring::Back`] when it listens again.
    pub async fn next(&mut self) -> Ring {
        loop {
            let Some(listener) = self.listener.as_mut() else {
                let attempt = tokio::time::timeout(CONNECT_WAIT, self.connect()).await.unwrap_or_else(|_| {
                    let timed_out = std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer");
                    Err(StoreError::Unreachable { location: self.location.clone(), source: sqlx::Error::Io(timed_out) })
                });
                match attempt {
                    Ok(()) if self.lost => {
                        self.lost = false;
                        return Ring::Back;
                    }
                    Ok(()) => continue,
                    Err(error) if !self.lost => {
                        self.lost = true;
                        return Ring::Lost(error);
                    }
                    Err(_) => {
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
            };
            // `try_recv` says a lost connection (`Ok(None)`) instead of hiding it behind a reconnect.
            let lost = match listener.try_recv().await {
                Ok(Some(notification)) => return Ring::Changed(Topic::of_table(notification.payload())),
                Ok(None) => sqlx::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "the server closed the connection",
                )),
                Err(error) => error,
            };
            self.listener = None;
            self.lost = true;
            return Ring::Lost(StoreError::Unreachable { location: self.location.clone(), source: lost });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::Host;
    use crate::store::test_backend::{new_database, store_in};

    /// The next ring, or a failure after a few seconds.
    async fn next(bell: &mut Doorbell) -> Ring {
        tokio::time::timeout(Duration::from_secs(5), bell.next()).await.expect("a ring within 5 s")
    }

    #[tokio::test]
    async fn a_change_committed_by_another_store_rings_with_its_topic() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        if std::env::var("MERLYA_TEST_STORE").as_deref() != Ok("postgres") {
            let store = store_in(one.path()).await;
            assert!(store.doorbell().is_none(), "SQLite has no doorbell");
            return;
        }
        let url = new_database();
        let writer = Store::open_postgres(&one.path().join("merlya.db"), &url, None).await.unwrap();
        let reader = Store::open_postgres(&two.path().join("merlya.db"), &url, None).await.unwrap();
        let mut bell = reader.doorbell().expect("PostgreSQL has a doorbell");
        bell.connect().await.unwrap();
        writer.upsert_hosts(&[Host::new("web01", "10.0.0.5")]).await.unwrap();
        assert!(matches!(next(&mut bell).await, Ring::Changed(Topic::Inventory)));
        // One statement touching many rows rings once per table, not per row.
        assert!(
            tokio::time::timeout(Duration::from_millis(300), bell.next()).await.is_err(),
            "a second ring for the same write"
        );
        writer.add_rule("systemctl restart nginx", &["web01".into()], "alice@bastion").await.unwrap();
        assert!(matches!(next(&mut bell).await, Ring::Changed(Topic::Rules)));
        // A write that is rolled back rings nothing (`doctor`'s live check writes and rolls back).
        writer.check_health().await.unwrap();
        assert!(tokio::time::timeout(Duration::from_millis(300), bell.next()).await.is_err(), "a rolled-back ring");
    }

    #[test]
    fn each_ringing_table_has_a_topic() {
        let migrations = [
            include_str!("../../migrations/postgres/20261127000005_doorbell.sql"),
            include_str!("../../migrations/postgres/20261127000006_change_requests.sql"),
        ];
        let tables: Vec<&str> = migrations
            .iter()
            .flat_map(|m| m.lines())
            .filter_map(|line| line.strip_prefix("CREATE TRIGGER "))
            .filter_map(|rest| rest.split(" ON ").nth(1))
            .filter_map(|rest| rest.split_whitespace().next())
            .collect();
        assert!(tables.len() >= 10, "{tables:?}");
        for table in tables {
            assert_ne!(Topic::of_table(table), Topic::Unknown, "{table} rings but has no topic");
        }
    }
}
