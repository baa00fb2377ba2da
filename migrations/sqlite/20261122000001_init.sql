-- Foundation schema. One table per concept; timestamps are RFC 3339 UTC text.

CREATE TABLE hosts (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    hostname      TEXT NOT NULL,
    port          INTEGER NOT NULL DEFAULT 22,
    username      TEXT,
    jump          TEXT,
    identity_file TEXT,
    elevation     TEXT NOT NULL DEFAULT 'none',
    reachable     INTEGER,
    last_check    TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);

CREATE TABLE host_tags (
    host_id INTEGER NOT NULL REFERENCES hosts(id) ON DELETE CASCADE,
    tag     TEXT NOT NULL,
    PRIMARY KEY (host_id, tag)
);
CREATE INDEX host_tags_tag ON host_tags(tag);

-- localhost is always in the inventory; it runs commands without SSH.
INSERT INTO hosts (name, hostname, port, created_at, updated_at)
VALUES ('localhost', 'localhost', 22, strftime('%Y-%m-%dT%H:%M:%SZ','now'), strftime('%Y-%m-%dT%H:%M:%SZ','now'));

CREATE TABLE variables (
    name       TEXT PRIMARY KEY,
    value      TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at   TEXT
);

CREATE TABLE conversations (
    id         TEXT PRIMARY KEY,
    title      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE session_messages (
    id              INTEGER PRIMARY KEY,
    session_id      TEXT NOT NULL,
    conversation_id TEXT REFERENCES conversations(id) ON DELETE CASCADE,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    created_at      TEXT NOT NULL
);

CREATE TABLE command_history (
    id          INTEGER PRIMARY KEY,
    session_id  TEXT NOT NULL,
    host        TEXT NOT NULL,
    command     TEXT NOT NULL,
    exit_code   INTEGER,
    duration_ms INTEGER NOT NULL,
    error       TEXT,
    started_at  TEXT NOT NULL
);
CREATE INDEX command_history_host ON command_history(host);

CREATE TABLE raw_logs (
    id         INTEGER PRIMARY KEY,
    host       TEXT NOT NULL,
    command    TEXT NOT NULL,
    stdout     TEXT NOT NULL,
    stderr     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX raw_logs_expiry ON raw_logs(expires_at);

-- Hash-chained audit log: hash = sha256(prev_hash || canonical entry).
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY,
    ts          TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    host        TEXT NOT NULL,
    user        TEXT NOT NULL,
    command     TEXT NOT NULL,
    exit_code   INTEGER,
    duration_ms INTEGER NOT NULL,
    approved_by TEXT NOT NULL,
    prev_hash   TEXT NOT NULL,
    hash        TEXT NOT NULL
);

-- The head of the chain, updated in the same transaction as each append, so
-- that removing the newest entries is detected too.
CREATE TABLE audit_head (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    last_id INTEGER NOT NULL,
    hash    TEXT NOT NULL,
    count   INTEGER NOT NULL
);

CREATE TABLE pipeline_runs (
    id         TEXT PRIMARY KEY,
    kind       TEXT NOT NULL,
    status     TEXT NOT NULL,
    targets    TEXT NOT NULL,
    stages     TEXT NOT NULL DEFAULT '[]',
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

CREATE TABLE resources (
    id           TEXT PRIMARY KEY,
    provider     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    name         TEXT NOT NULL,
    spec         TEXT NOT NULL,
    status       TEXT NOT NULL,
    drift_status TEXT NOT NULL DEFAULT 'unknown',
    updated_at   TEXT NOT NULL
);

CREATE TABLE snapshots (
    id          INTEGER PRIMARY KEY,
    resource_id TEXT NOT NULL REFERENCES resources(id) ON DELETE CASCADE,
    data        TEXT NOT NULL,
    created_at  TEXT NOT NULL
);

CREATE TABLE capabilities (
    host        TEXT NOT NULL,
    name        TEXT NOT NULL,
    value       TEXT NOT NULL,
    detected_at TEXT NOT NULL,
    PRIMARY KEY (host, name)
);
