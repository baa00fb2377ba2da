-- Ignore rules for host drift decided in the console or the CLI (`i` in the Drift pane, `merlya
-- baseline ignore`), beside the config's `drift.ignore`: each approved, audited, and counted under
-- its name in every check.
CREATE TABLE drift_ignores (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL,
    section    TEXT,
    key        TEXT NOT NULL,
    hosts      TEXT,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
);
