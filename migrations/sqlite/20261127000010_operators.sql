-- Operators who sign audit entries with a key of their own (ADR 0032): the public half of each
-- operator's ed25519 key, by `operator.name`. A name keeps the key it was registered with: rows are
-- never updated or deleted (a new key is a new name).
--
-- A signed entry (chain = 'ed25519') names its signer and carries the signature (hex) over its
-- hash; keyed (HMAC) and unkeyed rows leave both NULL. On SQLite (one operator) the log stays
-- keyed; the table is here so the two backends keep one schema.
CREATE TABLE operators (
    name       TEXT PRIMARY KEY NOT NULL,
    public_key TEXT NOT NULL CHECK (length(public_key) = 64),
    created_at TEXT NOT NULL
);
CREATE TRIGGER operators_no_update BEFORE UPDATE ON operators
BEGIN
    SELECT RAISE(ABORT, 'operators is append-only: a registered key is never replaced');
END;
CREATE TRIGGER operators_no_delete BEFORE DELETE ON operators
BEGIN
    SELECT RAISE(ABORT, 'operators is append-only: a registered key is never replaced');
END;

ALTER TABLE audit_log ADD COLUMN signer    TEXT;
ALTER TABLE audit_log ADD COLUMN signature TEXT;
