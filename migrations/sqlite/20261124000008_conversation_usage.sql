-- Token and cost totals per conversation and per model, and the summary that stands for a
-- conversation's older turns once it is past its context tier (compaction).

CREATE TABLE conversation_usage (
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    model           TEXT NOT NULL,
    calls           INTEGER NOT NULL DEFAULT 0,
    input_tokens    INTEGER NOT NULL DEFAULT 0,
    output_tokens   INTEGER NOT NULL DEFAULT 0,
    cost_usd        REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (conversation_id, model)
);

ALTER TABLE conversations ADD COLUMN summary TEXT;
ALTER TABLE conversations ADD COLUMN summary_turns INTEGER NOT NULL DEFAULT 0;
