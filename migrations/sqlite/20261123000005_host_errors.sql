-- Each host's last failure (kind, words, time), so the inventory shows why a host failed across
-- sessions and in `merlya hosts list`; cleared when the host next succeeds.

CREATE TABLE host_errors (
    host    TEXT PRIMARY KEY,
    kind    TEXT NOT NULL,
    message TEXT NOT NULL,
    at      TEXT NOT NULL
);
