-- Each skill run's outcome (issue 27): its culprits and why, for the incident report — what a
-- postmortem needs from a triage, without its internal batch script.
CREATE TABLE skill_runs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL,
    ts         TEXT NOT NULL,
    skill      TEXT NOT NULL,
    version    TEXT NOT NULL,
    hosts      INTEGER NOT NULL,
    culprits   TEXT NOT NULL
);
CREATE INDEX skill_runs_by_ts ON skill_runs (ts);
