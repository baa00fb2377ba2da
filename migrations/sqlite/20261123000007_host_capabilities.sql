-- What each host (and localhost) can run for change pipelines: ansible-playbook, terraform, kubectl
-- (+ its context), git, python. Cached with a TTL; forgotten as soon as the host's record changes.

CREATE TABLE host_capabilities (
    host         TEXT PRIMARY KEY,
    tools        TEXT NOT NULL,
    kube_context TEXT,
    checked_at   TEXT NOT NULL
);

CREATE TRIGGER host_capabilities_host_updated AFTER UPDATE ON hosts
BEGIN DELETE FROM host_capabilities WHERE host = OLD.name; END;
CREATE TRIGGER host_capabilities_host_deleted AFTER DELETE ON hosts
BEGIN DELETE FROM host_capabilities WHERE host = OLD.name; END;
