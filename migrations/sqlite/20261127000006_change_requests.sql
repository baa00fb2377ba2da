-- Two-person approval (ADR 0033): a change that policy.two_person_approval_for names waits here,
-- bound to the digest of what was planned, until another operator approves or rejects it, or it
-- expires. The requester's own merlya voids it when it stops waiting (a re-plan is a new request).
CREATE TABLE change_requests (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    digest       TEXT NOT NULL,
    request      TEXT NOT NULL,
    why          TEXT NOT NULL,
    requested_by TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    status       TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'approved', 'rejected', 'voided')),
    reviewed_by  TEXT,
    reviewed_at  TEXT,
    note         TEXT NOT NULL DEFAULT '',
    review_signature TEXT,
    CHECK (reviewed_by IS NULL OR reviewed_by != requested_by)
);
CREATE INDEX change_requests_pending ON change_requests (status, expires_at);
