-- Spec §22.4: a session's own webhook target, and the durable outbox of webhook deliveries. A row is written in the
-- same transaction as the change it announces and stays `pending` until delivered (or `failed` for good).
ALTER TABLE sessions ADD COLUMN webhook_url TEXT;
CREATE TABLE webhook_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id TEXT NOT NULL,
    event_type TEXT NOT NULL,
    target_url TEXT NOT NULL,
    body TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    next_attempt_at REAL NOT NULL,
    finished_at REAL,
    last_error TEXT
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (state, next_attempt_at);
