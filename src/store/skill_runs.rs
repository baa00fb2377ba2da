//! Skill runs as the incident report needs them (issue 27): when, which skill, on how many hosts,
//! and each culprit with why (JSON kept as given: host-written words are made visible where shown).

use super::db::query;
use super::{SqlContext, Store, StoreError, now_rfc3339};

/// One skill run, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillRun {
    /// When it ended (RFC 3339).
    pub ts: String,
    /// The session it ran in.
    pub session_id: String,
    /// The skill and its version.
    pub skill: String,
    /// See `skill`.
    pub version: String,
    /// Hosts it ran on.
    pub hosts: i64,
    /// `[{host, verdict, why, unreachable}]`.
    pub culprits: serde_json::Value,
}

impl Store {
    /// Records a skill run's outcome.
    pub async fn add_skill_run(
        &self,
        session_id: &str,
        skill: &str,
        version: &str,
        hosts: usize,
        culprits: &serde_json::Value,
    ) -> Result<(), StoreError> {
        query(
            "INSERT INTO skill_runs (session_id, ts, skill, version, hosts, culprits) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(session_id)
        .bind(now_rfc3339())
        .bind(skill)
        .bind(version)
        .bind(i64::try_from(hosts).unwrap_or(i64::MAX))
        .bind(culprits.to_string())
        .execute(self.pool())
        .await
        .map_err(self.write_error("record a skill run"))?;
        Ok(())
    }

    /// Skill runs from `since` on (all when `None`), of `session` only when given, oldest first.
    pub async fn skill_runs(&self, since: Option<&str>, session: Option<&str>) -> Result<Vec<SkillRun>, StoreError> {
        type Row = (String, String, String, String, i64, String);
        let rows: Vec<Row> = query(
            "SELECT ts, session_id, skill, version, hosts, culprits FROM skill_runs
             WHERE ($1 IS NULL OR ts >= $1) AND ($2 IS NULL OR session_id = $2) ORDER BY id",
        )
        .bind(since)
        .bind(session)
        .fetch_all(self.pool())
        .await
        .ctx("cannot read skill runs")?;
        Ok(rows
            .into_iter()
            .map(|(ts, session_id, skill, version, hosts, culprits)| SkillRun {
                ts,
                session_id,
                skill,
                version,
                hosts,
                culprits: serde_json::from_str(&culprits).unwrap_or(serde_json::Value::Null),
            })
            .collect())
    }
}
