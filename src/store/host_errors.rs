//! Each host's last failure: written for every command result (set on a
//! failure, cleared on a success), read by the console's inventory and
//! `merlya hosts list`.

use super::db::query;
use super::{SqlContext, Store, StoreError};

/// A host's last failure as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredHostError {
    pub host: String,
    /// `exec::HostFailure` by name (`unreachable`, `host_key`, ...).
    pub kind: String,
    pub message: String,
    /// RFC 3339, UTC.
    pub at: String,
}

impl Store {
    /// Records how `host`'s last command ended: `Some((kind, message))` on a failure, `None` on success.
    pub async fn set_host_error(&self, host: &str, failure: Option<(&str, &str)>) -> Result<(), StoreError> {
        match failure {
            Some((kind, message)) => query(
                "INSERT INTO host_errors (host, kind, message, at) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT(host) DO UPDATE SET kind = excluded.kind, message = excluded.message, at = excluded.at",
            )
            .bind(host)
            .bind(kind)
            .bind(crate::redact::redact_command(message))
            .bind(super::now_rfc3339())
            .execute(self.pool())
            .await
            .ctx("cannot record a host's last error")?,
            None => query("DELETE FROM host_errors WHERE host = $1")
                .bind(host)
                .execute(self.pool())
                .await
                .ctx("cannot clear a host's last error")?,
        };
        Ok(())
    }

    /// Every host's last failure, by host name.
    pub async fn host_errors(&self) -> Result<Vec<StoredHostError>, StoreError> {
        let rows: Vec<(String, String, String, String)> =
            query("SELECT host, kind, message, at FROM host_errors ORDER BY host")
                .fetch_all(self.pool())
                .await
                .ctx("cannot read hosts' last errors")?;
        Ok(rows.into_iter().map(|(host, kind, message, at)| StoredHostError { host, kind, message, at }).collect())
    }
}
