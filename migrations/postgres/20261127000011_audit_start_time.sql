-- Teammates' runs (store::team_runs) are read from the recent start entries on every refresh of a
-- console: an index on (event, ts) keeps that a range read, not a walk of the whole audit log.
CREATE INDEX audit_log_event_ts ON audit_log (event, ts);
