"""The tables as SQLAlchemy Core sees them: one description for both backends (the DDL is in the migrations).

Column types are the ones both dialects store the same way: timestamps as ISO text (``to_wire``), booleans as 0/1,
money as decimal text, JSON as text. The repos convert, so a row reads back identically from SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

sessions = sa.Table(
    "sessions",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("model", sa.Text, nullable=False),
    sa.Column("llm_model", sa.Text, nullable=False),
    sa.Column("reasoning_effort", sa.Text, nullable=False),
    sa.Column("title", sa.Text),
    sa.Column("task", sa.Text),
    sa.Column("pending_task", sa.Text),
    sa.Column("queue_seq", sa.Integer),
    sa.Column("keep_alive", sa.Integer, nullable=False),
    sa.Column("output", sa.Text),
    sa.Column("output_schema", sa.Text),
    sa.Column("sensitive_data", sa.Text),
    sa.Column("system_prompt_extension", sa.Text),
    sa.Column("profile_id", sa.Text),
    sa.Column("step_count", sa.Integer, nullable=False),
    sa.Column("last_step_summary", sa.Text),
    sa.Column("is_task_successful", sa.Integer),
    sa.Column("live_url", sa.Text),
    sa.Column("browser_live", sa.Integer, nullable=False),
    sa.Column("max_cost_usd", sa.Text),
    sa.Column("allowance_usd", sa.Text),
    sa.Column("total_input_tokens", sa.Integer, nullable=False),
    sa.Column("total_output_tokens", sa.Integer, nullable=False),
    sa.Column("llm_cost_usd", sa.Text, nullable=False),
    sa.Column("captcha_cost_usd", sa.Text, nullable=False),
    sa.Column("failure_kind", sa.Text),
    sa.Column("failure_status_code", sa.Integer),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("end_reason", sa.Text),
    sa.Column("pause", sa.Text),
    sa.Column("max_duration_ms", sa.Integer),
    sa.Column("enable_recording", sa.Integer, nullable=False),
    sa.Column("webhook_url", sa.Text),
    sa.Column("owner_node", sa.Text),
    sa.Column("workspace_id", sa.Text),
    sa.Column("cache_script", sa.Integer),
    sa.Column("auto_heal", sa.Integer, nullable=False, server_default="1"),
    sa.Column("proxy", sa.Text),
    sa.Column("proxy_bytes", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("proxy_cost_usd", sa.Text, nullable=False, server_default="0"),
)

messages = sa.Table(
    "messages",
    metadata,
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=True),
    sa.Column("id", sa.Text, nullable=False, unique=True),
    sa.Column("session_id", sa.Text, nullable=False),
    sa.Column("role", sa.Text, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("summary", sa.Text, nullable=False),
    sa.Column("data", sa.Text, nullable=False),
    sa.Column("hidden", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Text, nullable=False),
)

profiles = sa.Table(
    "profiles",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text),
    sa.Column("user_id", sa.Text),
    sa.Column("last_used_at", sa.Text),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
    sa.Column("cookie_domains", sa.Text),
    sa.Column("jar", sa.Text),
    sa.Column("jar_backup", sa.Text),
)

browsers = sa.Table(
    "browsers",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("timeout_minutes", sa.Float, nullable=False),
    sa.Column("started_at", sa.Text, nullable=False),
    sa.Column("timeout_at", sa.Text, nullable=False),
    sa.Column("finished_at", sa.Text),
    sa.Column("stop_reason", sa.Text),
    sa.Column("profile_id", sa.Text),
    sa.Column("screen_width", sa.Integer),
    sa.Column("screen_height", sa.Integer),
    sa.Column("metadata", sa.Text, nullable=False),
    sa.Column("idle_timeout_ms", sa.Integer, nullable=False),
    sa.Column("queued_at", sa.Text),
    sa.Column("queue_expires_at", sa.Text),
    sa.Column("enable_recording", sa.Integer, nullable=False),
    sa.Column("owner_node", sa.Text),
    sa.Column("proxy", sa.Text),
    sa.Column("proxy_bytes", sa.BigInteger, nullable=False, server_default="0"),
)

webhook_outbox = sa.Table(
    "webhook_outbox",
    metadata,
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=True),
    sa.Column("event_id", sa.Text, nullable=False),
    sa.Column("event_type", sa.Text, nullable=False),
    sa.Column("target_url", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("next_attempt_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float),
    sa.Column("last_error", sa.Text),
)

nodes = sa.Table(
    "nodes",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("epoch", sa.BigInteger, nullable=False),
    sa.Column("slots", sa.Integer, nullable=False),
    sa.Column("lease_s", sa.Float, nullable=False),
    sa.Column("busy", sa.Integer, nullable=False),
    sa.Column("queued", sa.Integer, nullable=False),
    sa.Column("draining", sa.Integer, nullable=False),
    sa.Column("started_at", sa.Float, nullable=False),
    sa.Column("last_seen_at", sa.Float, nullable=False),
    sa.Column("left_at", sa.Float),
)

workspaces = sa.Table(
    "workspaces",
    metadata,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text),
    sa.Column("created_at", sa.Text, nullable=False),
    sa.Column("updated_at", sa.Text, nullable=False),
)
