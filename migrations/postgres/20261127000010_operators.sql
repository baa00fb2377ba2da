-- Operators who sign audit entries with a key of their own (ADR 0032): the public half of each
-- operator's ed25519 key, by `operator.name`. A name keeps the key it was registered with: rows are
-- never updated or deleted (a new key is a new name).
--
-- A signed entry (chain = 'ed25519') names its signer and carries the signature (hex) over its
-- hash; keyed (HMAC) and unkeyed rows, copied from an operator's SQLite store, leave both NULL.
CREATE TABLE operators (
    name       TEXT COLLATE "C" PRIMARY KEY,
    public_key TEXT COLLATE "C" NOT NULL CHECK (length(public_key) = 64),
    created_at TEXT COLLATE "C" NOT NULL
);

CREATE FUNCTION merlya_operators_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operators is append-only: a registered key is never replaced';
END
$$;
CREATE TRIGGER operators_no_update BEFORE UPDATE OR DELETE ON operators
    FOR EACH ROW EXECUTE FUNCTION merlya_operators_append_only();
CREATE TRIGGER operators_no_truncate BEFORE TRUNCATE ON operators
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_operators_append_only();

ALTER TABLE audit_log ADD COLUMN signer    TEXT COLLATE "C";
ALTER TABLE audit_log ADD COLUMN signature TEXT COLLATE "C";
