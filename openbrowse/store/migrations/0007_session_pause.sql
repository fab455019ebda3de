-- A person's takeover of a session (spec §21.5): the pause object as the API shows it, NULL when not paused.
ALTER TABLE sessions ADD COLUMN pause TEXT;
