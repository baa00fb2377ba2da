//! Change pipeline runs: each stage's status and timing, persisted as it goes.

use serde::{Deserialize, Serialize};

use super::{SqlContext, Store, StoreError, now_rfc3339};

/// One stage of a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stage {
    /// Plan, Diff, Summary, HITL, Apply, Post-check, Rollback.
    pub name: String,
    /// pending, done, skipped, denied, failed.
    pub status: String,
    /// What happened.
    pub detail: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
}

/// A stored run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PipelineRun {
    pub id: String,
    pub kind: String,
    pub status: String,
    pub targets: String,
    pub stages: Vec<Stage>,
    pub created_at: String,
    pub updated_at: String,
}

impl Store {
    /// Saves (inserts or replaces) a run's state.
    pub async fn save_pipeline_run(
        &self,
        id: &str,
        kind: &str,
        status: &str,
        targets: &str,
        stages: &[Stage],
    ) -> Result<(), StoreError> {
        let now = now_rfc3339();
        let stages = serde_json::to_string(stages).unwrap_or_else(|_| "[]".into());
        sqlx::query(
            "INSERT INTO pipeline_runs (id, kind, status, targets, stages, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(id) DO UPDATE SET status = excluded.status, stages = excluded.stages, updated_at = excluded.updated_at",
        )
        .bind(id)
        .bind(kind)
        .bind(status)
        .bind(targets)
        .bind(stages)
        .bind(&now)
        .bind(&now)
        .execute(self.pool())
        .await
        .map_err(self.write_error("save the pipeline run"))?;
        Ok(())
    }

    /// Every run, newest first.
    pub async fn list_pipeline_runs(&self) -> Result<Vec<PipelineRun>, StoreError> {
        let rows: Vec<(String, String, String, String, String, String, String)> = sqlx::query_as(
            "SELECT id, kind, status, targets, stages, created_at, updated_at FROM pipeline_runs ORDER BY created_at DESC, id DESC",
        )
        .fetch_all(self.pool())
        .await
        .ctx("cannot read pipeline runs")?;
        Ok(rows
            .into_iter()
            .map(|(id, kind, status, targets, stages, created_at, updated_at)| PipelineRun {
                id,
                kind,
                status,
                targets,
                stages: serde_json::from_str(&stages).unwrap_or_default(),
                created_at,
                updated_at,
            })
            .collect())
    }
}
