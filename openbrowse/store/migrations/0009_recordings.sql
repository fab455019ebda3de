-- Spec §22.1: whether a session's or raw browser's display is recorded (enableRecording, or RECORDING_DEFAULT).
-- The recordings themselves are files in the owner's file area (recordings/), listed from there.
ALTER TABLE sessions ADD COLUMN enable_recording INTEGER NOT NULL DEFAULT 0;
ALTER TABLE browsers ADD COLUMN enable_recording INTEGER NOT NULL DEFAULT 0;
