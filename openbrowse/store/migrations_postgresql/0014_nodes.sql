-- Spec §26.2: every server process is a node. It registers at start-up (each registration a new epoch, which fences
-- a process that registered before under the same id) and heartbeats; times are the database's, in epoch seconds,
-- so nodes on hosts with skewed clocks agree on who is alive; each node is judged by its own lease (lease_s).
CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    url TEXT NOT NULL,
    epoch BIGINT NOT NULL,
    slots INTEGER NOT NULL,
    lease_s DOUBLE PRECISION NOT NULL,
    busy INTEGER NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,
    draining INTEGER NOT NULL DEFAULT 0,
    started_at DOUBLE PRECISION NOT NULL,
    last_seen_at DOUBLE PRECISION NOT NULL,
    left_at DOUBLE PRECISION
);
