-- Keyed, write-ahead audit log (ADR 0013).
--
-- Rows written before this migration keep chain = 'sha256' (the unkeyed
-- chain); new rows are 'hmac-sha256', keyed with MERLYA_HOME/audit.key. The
-- first keyed row after unkeyed ones is a 'rebase' entry that pins the old
-- chain's head under the key.
--
-- An execution is two rows: a 'start' written before the command runs and a
-- 'finish' naming it in ref_id. Refused and denied attempts are one
-- 'attempt' row. A start with no finish is reported as unfinished.
ALTER TABLE audit_log ADD COLUMN chain        TEXT NOT NULL DEFAULT 'sha256';
ALTER TABLE audit_log ADD COLUMN event        TEXT NOT NULL DEFAULT 'legacy';
ALTER TABLE audit_log ADD COLUMN outcome      TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN ref_id       INTEGER;
ALTER TABLE audit_log ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN login_user   TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN address      TEXT NOT NULL DEFAULT '';
ALTER TABLE audit_log ADD COLUMN port         INTEGER;
ALTER TABLE audit_log ADD COLUMN approval_ref TEXT;
ALTER TABLE audit_log ADD COLUMN reason       TEXT;
CREATE INDEX audit_log_ref ON audit_log(ref_id);

-- Append-only: merlya never updates or deletes an audit row. (Whoever can
-- write the file can drop these triggers; the keyed chain and the external
-- checkpoint are what detect that.)
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only');
END;
