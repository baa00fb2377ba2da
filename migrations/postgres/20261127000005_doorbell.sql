-- The doorbell of a shared store (ADR 0032): every committed statement that changes what a console
-- shows rings the channel `merlya_store` with the table's name. PostgreSQL delivers a notification
-- only when its transaction commits and folds equal ones of one transaction into one, so a
-- console re-reads once per change, never a write that was rolled back. The payload names the table
-- only: a console re-reads through its own queries (by version), nothing is carried in the ring.
CREATE FUNCTION merlya_ring() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('merlya_store', TG_TABLE_NAME);
    RETURN NULL;
END $$;

CREATE TRIGGER inventory_version_ring AFTER INSERT OR UPDATE OR DELETE ON inventory_version
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER approval_rules_ring AFTER INSERT OR UPDATE OR DELETE ON approval_rules
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER pipeline_runs_ring AFTER INSERT OR UPDATE OR DELETE ON pipeline_runs
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER resources_ring AFTER INSERT OR UPDATE OR DELETE ON resources
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER host_drift_ring AFTER INSERT OR UPDATE OR DELETE ON host_drift
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER baselines_ring AFTER INSERT OR UPDATE OR DELETE ON baselines
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER drift_ignores_ring AFTER INSERT OR UPDATE OR DELETE ON drift_ignores
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER host_health_ring AFTER INSERT OR UPDATE OR DELETE ON host_health
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER host_errors_ring AFTER INSERT OR UPDATE OR DELETE ON host_errors
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
CREATE TRIGGER audit_log_ring AFTER INSERT ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION merlya_ring();
