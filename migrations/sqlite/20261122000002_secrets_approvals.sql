-- Names of stored secrets (never their values), so `merlya secret list` works on
-- keyrings that cannot enumerate.
CREATE TABLE secret_names (
    name       TEXT PRIMARY KEY,
    backend    TEXT NOT NULL,
    updated_at TEXT NOT NULL
);

-- "Always allow this command prefix on these hosts" decisions.
CREATE TABLE approval_rules (
    id         INTEGER PRIMARY KEY,
    prefix     TEXT NOT NULL,
    hosts      TEXT NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (prefix, hosts)
);
