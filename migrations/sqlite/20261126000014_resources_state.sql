-- The state tracker of provisioned resources (issue 26): what merlya expects, what was found, the
-- answers a template was rendered with (secrets as references), outputs, tags, the lifecycle and,
-- apart from it, the drift found by the last check. `operation` is written before an operation
-- starts, so a crash leaves the resource `unknown` until the next check.
ALTER TABLE resources ADD COLUMN template TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN backend TEXT NOT NULL DEFAULT 'terraform';
ALTER TABLE resources ADD COLUMN answers TEXT NOT NULL DEFAULT '{}';
ALTER TABLE resources ADD COLUMN expected TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN actual TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN previous TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN outputs TEXT NOT NULL DEFAULT '{}';
ALTER TABLE resources ADD COLUMN tags TEXT NOT NULL DEFAULT '{}';
ALTER TABLE resources ADD COLUMN drift_detail TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN last_checked_at TEXT;
ALTER TABLE resources ADD COLUMN tf_serial INTEGER;
ALTER TABLE resources ADD COLUMN tf_lineage TEXT;
ALTER TABLE resources ADD COLUMN workdir TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN operation TEXT NOT NULL DEFAULT '';
ALTER TABLE resources ADD COLUMN observe_only INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX resources_by_name ON resources (name);
