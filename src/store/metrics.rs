//! Figures for the metrics pane, computed from the command history.

use super::db::query;
use serde::Serialize;

use super::{SqlContext, Store, StoreError};

/// Upper bounds (ms) of the latency histogram buckets; the last is open.
pub const LATENCY_BUCKETS_MS: [u64; 6] = [50, 100, 250, 500, 1000, 5000];

/// Commands by outcome and their latency.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CommandStats {
    pub succeeded: u64,
    pub failed: u64,
    pub unreachable: u64,
    /// Counts per bucket of [`LATENCY_BUCKETS_MS`], plus one for slower.
    pub latency: Vec<u64>,
    pub pipeline_runs: u64,
    pub pipelines_failed: u64,
}

impl Store {
    /// Seeds the process's metrics registry with this home's history (once per process).
    pub async fn seed_metrics(&self) -> Result<(), StoreError> {
        if crate::metrics::seeded() {
            return Ok(());
        }
        let (commands, pipelines) = self.history_totals().await?;
        let commands: Vec<(&str, u64)> = commands.iter().map(|(o, n)| (o.as_str(), *n)).collect();
        let models = self.model_totals().await?;
        crate::metrics::seed(&commands, &pipelines, &models);
        Ok(())
    }

    /// What this home's conversations spent, by model (the Metrics pane's figures, for `merlya metrics`).
    pub async fn model_totals(&self) -> Result<Vec<crate::metrics::ModelTotals>, StoreError> {
        let rows: Vec<(String, i64, i64, i64, f64)> = query(
            "SELECT model, CAST(SUM(calls) AS BIGINT), CAST(SUM(input_tokens) AS BIGINT), \
                    CAST(SUM(output_tokens) AS BIGINT), SUM(cost_usd) \
             FROM conversation_usage GROUP BY model ORDER BY model",
        )
        .fetch_all(self.pool())
        .await
        .ctx("cannot total model use")?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(rows.into_iter().map(|(m, c, i, o, cost)| (m, count(c), count(i), count(o), cost)).collect())
    }

    /// Totals this home recorded, for seeding the metrics registry: command outcomes (as the audit log
    /// names them) and pipeline ends by kind and status.
    pub async fn history_totals(&self) -> Result<(Vec<(String, u64)>, Vec<(String, String, u64)>), StoreError> {
        let commands: Vec<(String, i64)> = query(
            "SELECT CASE WHEN exit_code = 0 AND error IS NULL THEN 'ok' \
                    WHEN error LIKE 'timed out%' THEN 'timed_out' \
                    WHEN error = 'cancelled' THEN 'cancelled' ELSE 'failed' END AS outcome, COUNT(*) \
             FROM command_history GROUP BY outcome",
        )
        .fetch_all(self.pool())
        .await
        .ctx("cannot count commands")?;
        let pipelines: Vec<(String, String, i64)> =
            query("SELECT kind, status, COUNT(*) FROM pipeline_runs GROUP BY kind, status")
                .fetch_all(self.pool())
                .await
                .ctx("cannot count pipeline runs")?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok((
            commands.into_iter().map(|(o, n)| (o, count(n))).collect(),
            // Runs still in flight have not ended: they are counted when they do.
            pipelines
                .into_iter()
                .filter(|(_, status, _)| {
                    super::pipelines::PipelineStatus::ALL.iter().any(|s| s.as_str() == status && !s.in_flight())
                })
                .map(|(k, s, n)| (k, s, count(n)))
                .collect(),
        ))
    }

    /// Statistics over the newest 10,000 commands and every pipeline run.
    pub async fn command_stats(&self) -> Result<CommandStats, StoreError> {
        let rows: Vec<(Option<i64>, Option<String>, i64)> =
            query("SELECT exit_code, error, duration_ms FROM command_history ORDER BY id DESC LIMIT 10000")
                .fetch_all(self.pool())
                .await
                .ctx("cannot read command statistics")?;
        let mut stats = CommandStats { latency: vec![0; LATENCY_BUCKETS_MS.len() + 1], ..Default::default() };
        for (exit, error, ms) in rows {
            match (exit, &error) {
                (Some(0), None) => stats.succeeded += 1,
                (None, Some(e)) if e.starts_with("cannot reach") || e.starts_with("connection to") => {
                    stats.unreachable += 1
                }
                _ => stats.failed += 1,
            }
            let ms = u64::try_from(ms).unwrap_or(0);
            let bucket = LATENCY_BUCKETS_MS.iter().position(|b| ms <= *b).unwrap_or(LATENCY_BUCKETS_MS.len());
            stats.latency[bucket] += 1;
        }
        let (runs, failed): (i64, i64) = query(
            "SELECT COUNT(*), CAST(COALESCE(SUM(CASE WHEN status IN ('failed', 'rolled_back', 'denied') THEN 1 ELSE 0 END), 0) \
             AS BIGINT) FROM pipeline_runs",
        )
        .fetch_one(self.pool())
        .await
        .ctx("cannot count pipeline runs")?;
        stats.pipeline_runs = u64::try_from(runs).unwrap_or(0);
        stats.pipelines_failed = u64::try_from(failed).unwrap_or(0);
        Ok(stats)
    }
}
