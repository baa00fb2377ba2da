-- Changes of a resource an operator accepted (`merlya state accept`, `a` in the Drift pane): the
-- normal plan's `address action` pairs left to the template, recorded with what the state held
-- then (`expected`). A check reports them, not as drift, while the state still holds it.
ALTER TABLE resources ADD COLUMN accepted TEXT NOT NULL DEFAULT '[]';
-- A digest of the configuration merlya applied: with the state's serial, lineage and attributes as
-- recorded, it tells a check that a normal plan can only repeat the apply's post-check.
ALTER TABLE resources ADD COLUMN config_digest TEXT;
