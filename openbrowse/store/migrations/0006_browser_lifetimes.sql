-- Spec §21.1/§21.2: a raw browser's idle timeout, and the queue it may wait in before it starts.
ALTER TABLE browsers ADD COLUMN idle_timeout_ms INTEGER NOT NULL DEFAULT 300000;
ALTER TABLE browsers ADD COLUMN queued_at TEXT;
ALTER TABLE browsers ADD COLUMN queue_expires_at TEXT;
