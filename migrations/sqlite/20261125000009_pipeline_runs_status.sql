-- Every start looks for runs still in flight (to mark those of dead processes interrupted): an index
-- on the status keeps that lookup from reading every run a long-lived home has stored.
CREATE INDEX IF NOT EXISTS pipeline_runs_status ON pipeline_runs(status);
