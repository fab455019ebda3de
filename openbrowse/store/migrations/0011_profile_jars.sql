-- Spec §26.1: a profile's jar lives in its row (and the copy an import replaced, spec §9.4), so every node reads and
-- merges the same jar under a row lock. Jar files from before are moved in at start-up (ProfileService.adopt_files).
ALTER TABLE profiles ADD COLUMN jar TEXT;
ALTER TABLE profiles ADD COLUMN jar_backup TEXT;
