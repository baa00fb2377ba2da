-- The last drift check of each host against its baseline (issue 26): its findings, for the
-- console's Drift pane (one row per host; a new check replaces it).
CREATE TABLE host_drift (
    host       TEXT PRIMARY KEY,
    checked_at TEXT NOT NULL,
    findings   TEXT NOT NULL
);
