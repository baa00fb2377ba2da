-- A counter bumped by every change to the inventory, so a running console
-- notices what `merlya hosts ...` changed in another terminal with one cheap read.

CREATE TABLE inventory_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO inventory_version (id, version) VALUES (1, 0);

CREATE TRIGGER hosts_inserted AFTER INSERT ON hosts BEGIN UPDATE inventory_version SET version = version + 1; END;
CREATE TRIGGER hosts_updated AFTER UPDATE ON hosts BEGIN UPDATE inventory_version SET version = version + 1; END;
CREATE TRIGGER hosts_deleted AFTER DELETE ON hosts BEGIN UPDATE inventory_version SET version = version + 1; END;
CREATE TRIGGER host_tags_inserted AFTER INSERT ON host_tags BEGIN UPDATE inventory_version SET version = version + 1; END;
CREATE TRIGGER host_tags_deleted AFTER DELETE ON host_tags BEGIN UPDATE inventory_version SET version = version + 1; END;
