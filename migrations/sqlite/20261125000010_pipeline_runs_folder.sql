-- A Terraform change looks up the last good run in the same folder (what its rollback re-applies).
-- Without an index on the folder that lookup read the spec of every succeeded run, through the
-- overflow pages of its stage outputs, on each run: its cost grew with the history kept.
CREATE INDEX IF NOT EXISTS pipeline_runs_folder ON pipeline_runs(kind, json_extract(spec, '$.dir'));
