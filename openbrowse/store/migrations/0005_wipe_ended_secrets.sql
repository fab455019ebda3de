-- Spec §25.3: secrets are wiped from the row when the session ends. Rows that ended before this rule existed
-- lose theirs now (a keep-alive session takes follow-ups until it expires, so it keeps them until then).
UPDATE sessions SET sensitive_data = NULL
WHERE sensitive_data IS NOT NULL
  AND (status = 'expired' OR (status IN ('stopped', 'timed_out', 'error') AND keep_alive = 0));
