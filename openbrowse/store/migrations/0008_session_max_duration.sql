-- Spec §21.1: an agent session's limit for the whole session (all turns and parked time), from its creation.
ALTER TABLE sessions ADD COLUMN max_duration_ms INTEGER;
