//! Stored "always allow this prefix on these hosts" decisions.

use super::db::{Row, query};
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// One stored rule.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ApprovalRule {
    pub id: i64,
    pub prefix: String,
    pub hosts: Vec<String>,
    pub created_by: String,
    pub created_at: String,
}

fn rule_from_row(row: &Row) -> Result<ApprovalRule, sqlx::Error> {
    let hosts: String = row.try_get("hosts")?;
    Ok(ApprovalRule {
        id: row.try_get("id")?,
        prefix: row.try_get("prefix")?,
        hosts: hosts.split(',').filter(|h| !h.is_empty()).map(String::from).collect(),
        created_by: row.try_get("created_by")?,
        created_at: row.try_get("created_at")?,
    })
}

impl Store {
    /// Stores a rule (hosts sorted so equal sets are one rule).
    pub async fn add_rule(&self, prefix: &str, hosts: &[String], created_by: &str) -> Result<(), StoreError> {
        let mut hosts = hosts.to_vec();
        hosts.sort();
        hosts.dedup();
        query(
            "INSERT INTO approval_rules (prefix, hosts, created_by, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
            .bind(prefix)
            .bind(hosts.join(","))
            .bind(created_by)
            .bind(now_rfc3339())
            .execute(self.pool())
            .await
            .map_err(self.write_error("store the approval rule"))?;
        Ok(())
    }

    /// Every rule.
    pub async fn list_rules(&self) -> Result<Vec<ApprovalRule>, StoreError> {
        let rows = query("SELECT * FROM approval_rules ORDER BY id")
            .fetch_all(self.pool())
            .await
            .ctx("cannot read approval rules")?;
        rows.iter().map(rule_from_row).collect::<Result<_, _>>().ctx("cannot read an approval rule")
    }

    /// Deletes a rule; returns whether it existed.
    pub async fn revoke_rule(&self, id: i64) -> Result<bool, StoreError> {
        let done = query("DELETE FROM approval_rules WHERE id = $1")
            .bind(id)
            .execute(self.pool())
            .await
            .map_err(self.write_error("revoke the rule"))?;
        Ok(done > 0)
    }

    /// The rules that together cover every prefix on every host, if they do.
    pub async fn covering_rules(&self, prefixes: &[String], hosts: &[String]) -> Result<Option<Vec<i64>>, StoreError> {
        let rules = self.list_rules().await?;
        let mut ids = Vec::new();
        for prefix in prefixes {
            let rule = rules.iter().find(|r| &r.prefix == prefix && hosts.iter().all(|h| r.hosts.contains(h)));
            match rule {
                Some(r) if !ids.contains(&r.id) => ids.push(r.id),
                Some(_) => {}
                None => return Ok(None),
            }
        }
        Ok((!ids.is_empty()).then_some(ids))
    }
}
