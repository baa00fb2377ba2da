-- A change pipeline's whole record, so that a run can be inspected, resumed or rolled back after merlya
-- stopped: what was asked (spec), what was shown (summary, diff), who decided, what rollback needs.

ALTER TABLE pipeline_runs ADD COLUMN spec TEXT NOT NULL DEFAULT 'null';
ALTER TABLE pipeline_runs ADD COLUMN summary TEXT NOT NULL DEFAULT '';
ALTER TABLE pipeline_runs ADD COLUMN diff TEXT NOT NULL DEFAULT '';
ALTER TABLE pipeline_runs ADD COLUMN decision TEXT NOT NULL DEFAULT '';
ALTER TABLE pipeline_runs ADD COLUMN rollback_data TEXT NOT NULL DEFAULT 'null';
ALTER TABLE pipeline_runs ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
ALTER TABLE pipeline_runs ADD COLUMN resumed_from TEXT NOT NULL DEFAULT '';
ALTER TABLE pipeline_runs ADD COLUMN owner_pid INTEGER NOT NULL DEFAULT 0;
