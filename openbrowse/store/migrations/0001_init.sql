CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    model TEXT NOT NULL,
    llm_model TEXT NOT NULL,
    reasoning_effort TEXT NOT NULL,
    title TEXT,
    task TEXT,
    pending_task TEXT,
    queue_seq INTEGER,
    keep_alive INTEGER NOT NULL DEFAULT 0,
    output TEXT,
    output_schema TEXT,
    sensitive_data TEXT,
    system_prompt_extension TEXT,
    profile_id TEXT,
    step_count INTEGER NOT NULL DEFAULT 0,
    last_step_summary TEXT,
    is_task_successful INTEGER,
    live_url TEXT,
    browser_live INTEGER NOT NULL DEFAULT 0,
    max_cost_usd TEXT,
    allowance_usd TEXT,
    total_input_tokens INTEGER NOT NULL DEFAULT 0,
    total_output_tokens INTEGER NOT NULL DEFAULT 0,
    llm_cost_usd TEXT NOT NULL DEFAULT '0',
    captcha_cost_usd TEXT NOT NULL DEFAULT '0',
    failure_kind TEXT,
    failure_status_code INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX sessions_created_at ON sessions (created_at DESC);
CREATE INDEX sessions_status ON sessions (status);

CREATE TABLE messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    type TEXT NOT NULL,
    summary TEXT NOT NULL,
    data TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL
);
CREATE INDEX messages_session_seq ON messages (session_id, seq);

CREATE TABLE profiles (
    id TEXT PRIMARY KEY,
    name TEXT,
    user_id TEXT,
    last_used_at TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE INDEX profiles_created_at ON profiles (created_at DESC);
