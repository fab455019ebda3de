-- Profiles: the cookie domains of the jar, kept current on every write (spec §5.3).
ALTER TABLE profiles ADD COLUMN cookie_domains TEXT;
