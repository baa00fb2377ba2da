//! Command history and raw output kept for later inspection.

use super::db::query;
use super::{SqlContext, Store, StoreError, now_rfc3339};
use crate::redact::redact_command;

/// One finished command on one host.
#[derive(Debug, Clone)]
pub struct CommandRecord<'a> {
    pub session_id: &'a str,
    pub host: &'a str,
    pub command: &'a str,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub error: Option<&'a str>,
    pub stdout: &'a str,
    pub stderr: &'a str,
}

impl Store {
    /// Writes the command to `command_history` and its output to `raw_logs`
    /// (expiring after `retention_days`); expired raw logs are purged.
    pub async fn record_command(&self, rec: &CommandRecord<'_>, retention_days: u32) -> Result<(), StoreError> {
        let now = chrono::Utc::now();
        let started = now_rfc3339();
        let command = redact_command(rec.command);
        let mut tx = self.begin_write("record the command").await?;
        query(
            "INSERT INTO command_history (session_id, host, command, exit_code, duration_ms, error, started_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(rec.session_id)
        .bind(rec.host)
        .bind(&command)
        .bind(rec.exit_code)
        .bind(i64::try_from(rec.duration_ms).unwrap_or(i64::MAX))
        .bind(rec.error)
        .bind(&started)
        .execute(&mut tx)
        .await
        .ctx("cannot record command")?;
        let expires = (now + chrono::Duration::days(i64::from(retention_days)))
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        query(
            "INSERT INTO raw_logs (host, command, stdout, stderr, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(rec.host)
        .bind(&command)
        .bind(rec.stdout)
        .bind(rec.stderr)
        .bind(&started)
        .bind(expires)
        .execute(&mut tx)
        .await
        .ctx("cannot record output")?;
        query("DELETE FROM raw_logs WHERE expires_at < $1")
            .bind(&started)
            .execute(&mut tx)
            .await
            .ctx("cannot purge old output")?;
        tx.commit().await.map_err(self.write_error("record the command"))?;
        Ok(())
    }

    /// The output kept for `command` on `host` that ran at or after `since` (the first such), as
    /// (stdout, stderr); `None` once expired or never kept.
    pub async fn command_output(
        &self,
        host: &str,
        command: &str,
        since: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        query(
            "SELECT stdout, stderr FROM raw_logs WHERE host = $1 AND command = $2 AND created_at >= $3 ORDER BY id LIMIT 1",
        )
        .bind(host)
        .bind(redact_command(command))
        .bind(since)
        .fetch_optional(self.pool())
        .await
        .ctx("cannot read a command's output")
    }

    /// Count of rows in `command_history` for a host (used by tests and `doctor`).
    pub async fn command_count(&self, host: &str) -> Result<i64, StoreError> {
        query("SELECT COUNT(*) FROM command_history WHERE host = $1")
            .bind(host)
            .scalar(self.pool())
            .await
            .ctx("cannot count commands")
    }
}
