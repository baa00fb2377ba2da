-- Host baselines (issue 26): what a host looked like when an operator accepted it, and the later
-- captures a drift check compares with it. `facts` is JSON: section -> key -> value.
CREATE TABLE baselines (
    id          INTEGER PRIMARY KEY,
    host        TEXT NOT NULL,
    accepted    INTEGER NOT NULL DEFAULT 0,
    captured_at TEXT NOT NULL,
    facts       TEXT NOT NULL
);
CREATE INDEX baselines_by_host ON baselines (host, accepted, id);
