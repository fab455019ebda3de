-- Spec §28.1: a session's or raw browser's upstream proxy and the bytes that went through it. A session's row holds
-- the proxy's credentials while it lives (like sensitive_data; wiped when it ends); a browser's holds no credentials.
ALTER TABLE sessions ADD COLUMN proxy TEXT;
ALTER TABLE sessions ADD COLUMN proxy_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN proxy_cost_usd TEXT NOT NULL DEFAULT '0';
ALTER TABLE browsers ADD COLUMN proxy TEXT;
ALTER TABLE browsers ADD COLUMN proxy_bytes BIGINT NOT NULL DEFAULT 0;
