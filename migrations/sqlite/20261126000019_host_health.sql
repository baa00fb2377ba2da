-- Each host's last health readings (issue 27): load per core, the fullest mount and memory in use,
-- from the newest triage that read them, with the verdict of that runbook's thresholds. The
-- console's inventory shows them as columns.
CREATE TABLE host_health (
    host  TEXT NOT NULL,
    "check" TEXT NOT NULL,
    value REAL NOT NULL,
    level TEXT NOT NULL,
    at    TEXT NOT NULL,
    PRIMARY KEY (host, "check")
);
