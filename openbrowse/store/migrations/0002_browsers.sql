CREATE TABLE browsers (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    timeout_minutes REAL NOT NULL,
    started_at TEXT NOT NULL,
    timeout_at TEXT NOT NULL,
    finished_at TEXT,
    stop_reason TEXT,
    profile_id TEXT,
    screen_width INTEGER,
    screen_height INTEGER,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX browsers_started_at ON browsers (started_at DESC);
CREATE INDEX browsers_status ON browsers (status);
