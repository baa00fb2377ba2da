//! Teammates' runs, read from the audit log (ADR 0032): every command on every host is written ahead
//! as a `start` entry and ended by a `finish` entry naming it, so the log already holds each run's
//! per-host state. A console on a shared store lists the runs of other sessions that are in flight
//! (or just ended) without a table of its own or anything more to keep in step.

use serde::Serialize;

use super::db::{Row, query};
use super::{SqlContext, Store, StoreError};

/// How a host of a teammate's run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostRunState {
    /// Started, no outcome yet.
    Running,
    /// Exited 0.
    Ok,
    /// Any other outcome (failed, timed out, cancelled, not started).
    Failed,
}

/// One command of one session, on its hosts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamRun {
    /// The session that runs it (a console or a CLI command).
    pub session_id: String,
    /// Who: the signing operator on a team store, else the local account.
    pub who: String,
    /// The command as audited (secrets masked).
    pub command: String,
    /// When its first host started.
    pub started_at: String,
    /// Each host and where it stands, in the order they started.
    pub hosts: Vec<(String, HostRunState)>,
}

impl TeamRun {
    /// Hosts still running.
    pub fn running(&self) -> usize {
        self.hosts.iter().filter(|(_, s)| *s == HostRunState::Running).count()
    }

    /// Hosts that failed.
    pub fn failed(&self) -> usize {
        self.hosts.iter().filter(|(_, s)| *s == HostRunState::Failed).count()
    }
}

impl Store {
    /// Runs of sessions other than `own_session` started since `since` (RFC 3339) that are still in
    /// flight, or ended after `ended_since`: newest first.
    pub async fn team_runs(
        &self,
        own_session: &str,
        since: &str,
        ended_since: &str,
    ) -> Result<Vec<TeamRun>, StoreError> {
        let rows: Vec<Row> = query(
            "SELECT s.session_id, COALESCE(s.signer, s.\"user\") AS who, s.command, s.host, s.ts, \
                    f.outcome AS finished, f.ts AS finished_at \
             FROM audit_log s LEFT JOIN audit_log f ON f.ref_id = s.id AND f.event = 'finish' \
             WHERE s.event = 'start' AND s.ts > $1 AND s.session_id != $2 \
             ORDER BY s.id",
        )
        .bind(since)
        .bind(own_session)
        .fetch_all(self.pool())
        .await
        .ctx("cannot read teammates' runs")?;
        let mut runs: Vec<(TeamRun, Option<String>)> = Vec::new();
        for row in &rows {
            let session_id: String = row.try_get("session_id").ctx("cannot read a run")?;
            let command: String = row.try_get("command").ctx("cannot read a run")?;
            let finished: Option<String> = row.try_get("finished").ctx("cannot read a run")?;
            let finished_at: Option<String> = row.try_get("finished_at").ctx("cannot read a run")?;
            let state = match finished.as_deref() {
                None => HostRunState::Running,
                Some("ok") => HostRunState::Ok,
                Some(_) => HostRunState::Failed,
            };
            let host: String = row.try_get("host").ctx("cannot read a run")?;
            let at = runs.iter().position(|(r, _)| r.session_id == session_id && r.command == command);
            let (run, last_end) = match at {
                Some(i) => &mut runs[i],
                None => {
                    let run = TeamRun {
                        session_id,
                        who: row.try_get("who").ctx("cannot read a run")?,
                        command,
                        started_at: row.try_get("ts").ctx("cannot read a run")?,
                        hosts: Vec::new(),
                    };
                    runs.push((run, None));
                    runs.last_mut().ok_or_else(|| StoreError::Invalid("no run".into()))?
                }
            };
            // The same command run again on a host shows its newest state.
            match run.hosts.iter_mut().find(|(h, _)| *h == host) {
                Some(entry) => entry.1 = state,
                None => run.hosts.push((host, state)),
            }
            if finished_at.as_deref() > last_end.as_deref() {
                *last_end = finished_at;
            }
        }
        let mut kept: Vec<TeamRun> = runs
            .into_iter()
            .filter(|(run, last_end)| run.running() > 0 || last_end.as_deref().is_some_and(|t| t > ended_since))
            .map(|(run, _)| run)
            .collect();
        kept.reverse();
        Ok(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::audit::AuditOutcome;
    use crate::store::audit::tests::request;
    use crate::store::test_backend::store_in;

    #[tokio::test]
    async fn another_sessions_run_is_listed_with_each_hosts_state_and_ones_own_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path()).await;
        let on = |host: &str, session: &str| {
            let mut r = request(host, "systemctl restart nginx");
            r.session_id = session.into();
            r
        };
        let web01 = store.audit_start(on("web01", "alice-1")).await.unwrap();
        let _web02 = store.audit_start(on("web02", "alice-1")).await.unwrap();
        let web03 = store.audit_start(on("web03", "alice-1")).await.unwrap();
        let _mine = store.audit_start(on("web01", "bob-1")).await.unwrap();
        web01.finish(AuditOutcome::Ok, Some(0), None).await.unwrap();
        web03.finish(AuditOutcome::Failed, Some(1), Some("exit 1".into())).await.unwrap();

        let runs = store.team_runs("bob-1", "2000-01-01T00:00:00Z", "2000-01-01T00:00:00Z").await.unwrap();
        assert_eq!(runs.len(), 1, "{runs:?}");
        let run = &runs[0];
        assert_eq!((run.session_id.as_str(), run.command.as_str()), ("alice-1", "systemctl restart nginx"));
        assert_eq!(
            run.hosts,
            [
                ("web01".to_string(), HostRunState::Ok),
                ("web02".to_string(), HostRunState::Running),
                ("web03".to_string(), HostRunState::Failed)
            ]
        );
        assert_eq!((run.running(), run.failed()), (1, 1));
        // Runs that started before `since` are not listed.
        assert!(store.team_runs("bob-1", "2999-01-01T00:00:00Z", "2000-01-01T00:00:00Z").await.unwrap().is_empty());
    }
}
