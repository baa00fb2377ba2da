//! Host baselines (issue 26): captured facts per host, the accepted one being
//! what a drift check compares the host with.

use super::db::query;
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// One capture of a host's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCapture {
    /// Its row id.
    pub id: i64,
    /// The host.
    pub host: String,
    /// Whether it is the host's baseline (the state an operator accepted).
    pub accepted: bool,
    /// When it was taken (RFC 3339).
    pub captured_at: String,
    /// The facts as JSON (see `baseline::Facts`).
    pub facts: String,
}

type Row = (i64, String, bool, String, String);

/// An ignore rule an operator decided (`merlya baseline ignore`, `i` in the Drift pane), beside
/// the config's `drift.ignore` (the same fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIgnore {
    /// Shown with the count of what it hid.
    pub name: String,
    /// The section, or every section.
    pub section: Option<String>,
    /// The keys it hides (`*`, `?`).
    pub key: String,
    /// A target expression, or every host.
    pub hosts: Option<String>,
    /// Who approved it.
    pub created_by: String,
}

fn capture_of((id, host, accepted, captured_at, facts): Row) -> StoredCapture {
    StoredCapture { id, host, accepted, captured_at, facts }
}

impl Store {
    /// Records a capture of `host`; `accepted` makes it the host's baseline.
    pub async fn add_capture(&self, host: &str, facts: &str, accepted: bool) -> Result<StoredCapture, StoreError> {
        let captured_at = now_rfc3339();
        let id: i64 =
            query("INSERT INTO baselines (host, accepted, captured_at, facts) VALUES ($1, $2, $3, $4) RETURNING id")
                .bind(host)
                .bind(accepted)
                .bind(&captured_at)
                .bind(facts)
                .scalar(self.pool())
                .await
                .map_err(self.write_error("record a host capture"))?;
        // Only the newest accepted capture and the newest check are worth keeping per host.
        query(
            "DELETE FROM baselines WHERE host = $1 AND id NOT IN (
                 SELECT MAX(id) FROM baselines WHERE host = $2 AND accepted = 1
                 UNION SELECT MAX(id) FROM baselines WHERE host = $3 AND accepted = 0)",
        )
        .bind(host)
        .bind(host)
        .bind(host)
        .execute(self.pool())
        .await
        .map_err(self.write_error("prune old host captures"))?;
        Ok(StoredCapture { id, host: host.to_string(), accepted, captured_at, facts: facts.to_string() })
    }

    /// The baseline of `host` (its newest accepted capture), if any.
    pub async fn baseline(&self, host: &str) -> Result<Option<StoredCapture>, StoreError> {
        self.newest_capture(host, true).await
    }

    /// The newest capture of `host` that is not its baseline, if any.
    pub async fn last_check(&self, host: &str) -> Result<Option<StoredCapture>, StoreError> {
        self.newest_capture(host, false).await
    }

    async fn newest_capture(&self, host: &str, accepted: bool) -> Result<Option<StoredCapture>, StoreError> {
        let row: Option<Row> = query(
            "SELECT id, host, accepted, captured_at, facts FROM baselines WHERE host = $1 AND accepted = $2
             ORDER BY id DESC LIMIT 1",
        )
        .bind(host)
        .bind(accepted)
        .fetch_optional(self.pool())
        .await
        .ctx("cannot read host baselines")?;
        Ok(row.map(capture_of))
    }

    /// Makes the newest check of `host` its baseline ("accept": rebase on what the host is now).
    /// Returns false when there is no check to accept.
    pub async fn accept_last_check(&self, host: &str) -> Result<bool, StoreError> {
        let Some(check) = self.last_check(host).await? else { return Ok(false) };
        self.add_capture(host, &check.facts, true).await?;
        Ok(true)
    }

    /// Records `host`'s findings of a check against its baseline (JSON rows), replacing the last.
    pub async fn set_host_drift(&self, host: &str, findings: &str) -> Result<(), StoreError> {
        query(
            "INSERT INTO host_drift (host, checked_at, findings) VALUES ($1, $2, $3)
             ON CONFLICT(host) DO UPDATE SET checked_at = excluded.checked_at, findings = excluded.findings",
        )
        .bind(host)
        .bind(now_rfc3339())
        .bind(findings)
        .execute(self.pool())
        .await
        .map_err(self.write_error("record a host's drift"))?;
        Ok(())
    }

    /// Every host's last findings: `(host, checked_at, findings JSON)`, by host.
    pub async fn host_drift(&self) -> Result<Vec<(String, String, String)>, StoreError> {
        query("SELECT host, checked_at, findings FROM host_drift ORDER BY host")
            .fetch_all(self.pool())
            .await
            .ctx("cannot read host drift")
    }

    /// Keeps an approved ignore rule.
    pub async fn add_ignore_rule(&self, rule: &StoredIgnore) -> Result<(), StoreError> {
        query(
            "INSERT INTO drift_ignores (name, section, key, hosts, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&rule.name)
        .bind(&rule.section)
        .bind(&rule.key)
        .bind(&rule.hosts)
        .bind(&rule.created_by)
        .bind(now_rfc3339())
        .execute(self.pool())
        .await
        .map_err(self.write_error("keep an ignore rule"))?;
        Ok(())
    }

    /// The ignore rules operators decided, oldest first.
    pub async fn ignore_rules(&self) -> Result<Vec<StoredIgnore>, StoreError> {
        type IgnoreRow = (String, Option<String>, String, Option<String>, String);
        let rows: Vec<IgnoreRow> = query("SELECT name, section, key, hosts, created_by FROM drift_ignores ORDER BY id")
            .fetch_all(self.pool())
            .await
            .ctx("cannot read ignore rules")?;
        Ok(rows
            .into_iter()
            .map(|(name, section, key, hosts, created_by)| StoredIgnore { name, section, key, hosts, created_by })
            .collect())
    }

    /// Every host with a baseline, by name.
    pub async fn hosts_with_baselines(&self) -> Result<Vec<String>, StoreError> {
        query("SELECT DISTINCT host FROM baselines WHERE accepted = 1 ORDER BY host")
            .scalars(self.pool())
            .await
            .ctx("cannot read host baselines")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_newest_accepted_capture_is_the_baseline_and_accept_rebases() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        assert_eq!(store.baseline("web01").await.unwrap(), None);
        store.add_capture("web01", "{\"a\":1}", true).await.unwrap();
        store.add_capture("web01", "{\"a\":2}", false).await.unwrap();
        assert_eq!(store.baseline("web01").await.unwrap().unwrap().facts, "{\"a\":1}");
        assert_eq!(store.last_check("web01").await.unwrap().unwrap().facts, "{\"a\":2}");
        assert!(store.accept_last_check("web01").await.unwrap());
        assert_eq!(store.baseline("web01").await.unwrap().unwrap().facts, "{\"a\":2}");
        assert!(!store.accept_last_check("db01").await.unwrap());
        assert_eq!(store.hosts_with_baselines().await.unwrap(), ["web01"]);
        // Old rows are pruned: one baseline and one check per host at most.
        let count: i64 = query("SELECT COUNT(*) FROM baselines").scalar(store.pool()).await.unwrap();
        assert_eq!(count, 2);
        let rule = StoredIgnore {
            name: "web certs".into(),
            section: Some("files".into()),
            key: "/etc/ssl/*".into(),
            hosts: Some("@web".into()),
            created_by: "alice".into(),
        };
        store.add_ignore_rule(&rule).await.unwrap();
        assert_eq!(store.ignore_rules().await.unwrap(), [rule]);
    }
}
