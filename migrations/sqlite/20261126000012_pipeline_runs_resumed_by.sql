-- An interrupted, stopped or cancelled change is resumed once: the original records the run that
-- resumed it, so a second resume can say so (issue 25).
ALTER TABLE pipeline_runs ADD COLUMN resumed_by TEXT NOT NULL DEFAULT '';
