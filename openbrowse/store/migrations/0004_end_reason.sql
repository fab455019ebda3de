ALTER TABLE sessions ADD COLUMN end_reason TEXT;
