-- Changes of a resource an operator accepted (`merlya state accept`, `a` in the Drift pane): the
-- normal plan's `address action` pairs left to the template, recorded with what the state held
-- then (`expected`). A check reports them, not as drift, while the state still holds it.
ALTER TABLE resources ADD COLUMN accepted TEXT NOT NULL DEFAULT '[]';
