//! Each host's last health readings (load per core, fullest mount, memory in use), written by a
//! runbook run that read them and shown by the console's inventory as coloured columns.

use super::db::query;
use super::{SqlContext, Store, StoreError};

/// Which reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HealthCheck {
    /// 1-minute load average per core.
    Load,
    /// The fullest mount's space in use, in %.
    Disk,
    /// Memory in use, in %.
    Memory,
}

impl HealthCheck {
    /// The runbook check name it is read from (`incident_triage`'s `load`, `disk`, `memory`).
    pub fn as_str(self) -> &'static str {
        match self {
            HealthCheck::Load => "load",
            HealthCheck::Disk => "disk",
            HealthCheck::Memory => "memory",
        }
    }

    /// The reading a runbook check gives, if it is one of these.
    pub fn from_check(check: &str) -> Option<Self> {
        [HealthCheck::Load, HealthCheck::Disk, HealthCheck::Memory].into_iter().find(|c| c.as_str() == check)
    }
}

/// How the runbook's thresholds judged a reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HealthLevel {
    /// Within its thresholds.
    Ok,
    /// Past the warning threshold.
    Warn,
    /// Past the critical threshold.
    Crit,
}

impl HealthLevel {
    fn as_str(self) -> &'static str {
        match self {
            HealthLevel::Ok => "ok",
            HealthLevel::Warn => "warn",
            HealthLevel::Crit => "crit",
        }
    }

    fn parse(text: &str) -> Self {
        match text {
            "crit" => HealthLevel::Crit,
            "warn" => HealthLevel::Warn,
            _ => HealthLevel::Ok,
        }
    }
}

/// One reading of one host.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthReading {
    /// The host's inventory name.
    pub host: String,
    /// Which reading.
    pub check: HealthCheck,
    /// The number read (a ratio for load, a percentage for disk and memory).
    pub value: f64,
    /// Its verdict.
    pub level: HealthLevel,
    /// When it was read (RFC 3339).
    pub at: String,
}

impl Store {
    /// Keeps `readings` as each host's newest (one transaction).
    pub async fn record_health(&self, readings: &[HealthReading]) -> Result<(), StoreError> {
        if readings.is_empty() {
            return Ok(());
        }
        let mut tx = self.begin_write("record health readings").await?;
        for r in readings {
            query(
                "INSERT INTO host_health (host, \"check\", value, level, at) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT(host, \"check\") DO UPDATE SET value = excluded.value, level = excluded.level, \
                 at = excluded.at",
            )
            .bind(&r.host)
            .bind(r.check.as_str())
            .bind(r.value)
            .bind(r.level.as_str())
            .bind(&r.at)
            .execute(&mut tx)
            .await
            .ctx("cannot record health readings")?;
        }
        tx.commit().await.ctx("cannot record health readings")?;
        Ok(())
    }

    /// Every host's newest readings.
    pub async fn host_health(&self) -> Result<Vec<HealthReading>, StoreError> {
        let rows: Vec<(String, String, f64, String, String)> =
            query("SELECT host, \"check\", value, level, at FROM host_health ORDER BY host")
                .fetch_all(self.pool())
                .await
                .ctx("cannot read health readings")?;
        Ok(rows
            .into_iter()
            .filter_map(|(host, check, value, level, at)| {
                let check = HealthCheck::from_check(&check)?;
                Some(HealthReading { host, check, value, level: HealthLevel::parse(&level), at })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_newest_reading_of_each_check_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_backend::store_in(dir.path()).await;
        let reading =
            |check, value, level, at: &str| HealthReading { host: "web1".into(), check, value, level, at: at.into() };
        store
            .record_health(&[
                reading(HealthCheck::Disk, 97.0, HealthLevel::Crit, "2026-11-26T10:00:00Z"),
                reading(HealthCheck::Load, 0.5, HealthLevel::Ok, "2026-11-26T10:00:00Z"),
            ])
            .await
            .unwrap();
        store
            .record_health(&[reading(HealthCheck::Disk, 40.0, HealthLevel::Ok, "2026-11-26T11:00:00Z")])
            .await
            .unwrap();
        let mut rows = store.host_health().await.unwrap();
        rows.sort_by_key(|r| r.check);
        assert_eq!(
            rows,
            [
                reading(HealthCheck::Load, 0.5, HealthLevel::Ok, "2026-11-26T10:00:00Z"),
                reading(HealthCheck::Disk, 40.0, HealthLevel::Ok, "2026-11-26T11:00:00Z"),
            ]
        );
    }
}
