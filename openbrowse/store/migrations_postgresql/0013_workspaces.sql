-- Spec §27: workspaces (their files are on disk under OPENBROWSE_FILES_DIR/workspaces/<id>/), and the session's
-- workspace and cache choices.
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX workspaces_created_at ON workspaces (created_at DESC);
ALTER TABLE sessions ADD COLUMN workspace_id TEXT;
ALTER TABLE sessions ADD COLUMN cache_script INTEGER;
ALTER TABLE sessions ADD COLUMN auto_heal INTEGER NOT NULL DEFAULT 1;
