"""Wire models: request bodies and response objects in camelCase, plus converters from domain records."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from openbrowse.api.output_schema import output_schema_problem
from openbrowse.config import webhook_url_problem
from openbrowse.domain.clock import to_wire
from openbrowse.domain.feed import Message
from openbrowse.domain.money import format_usd
from openbrowse.domain.sessions import MAX_MAX_DURATION_MS, MIN_MAX_DURATION_MS, SessionRecord
from openbrowse.sessions.proxies import proxy_used_mb, public_proxy
from openbrowse.sessions.unsupported import unhonoured_fields

MAX_PAGE = 1_000_000
"""Largest page number a list accepts: far beyond any real listing, and its offset stays inside SQLite's int64."""


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


MAX_COST_USD_LIMIT = 1e9
"""Far above any real budget; keeps the cent arithmetic of the ceiling within Decimal's precision."""


class CreateSessionBody(WireModel):
    """``POST /v3/sessions``. Unknown fields are ignored; which fields were *sent* matters for follow-ups."""

    task: str | None = None
    session_id: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    thinking_level: Any = None
    thinking_effort: Any = None
    model_thinking_effort: Any = None
    keep_alive: bool | None = None
    max_cost_usd: float | None = None
    profile_id: str | None = None
    output_schema: dict[str, Any] | None = None
    sensitive_data: dict[str, str | dict[str, str]] | None = None
    """Domain-scoped ``{"https://*.example.com": {"name": "value"}}`` (or flat, bound to the task's start URL)."""
    system_prompt_extension: str | None = None
    max_duration_ms: int | None = Field(default=None, ge=MIN_MAX_DURATION_MS, le=MAX_MAX_DURATION_MS)
    """The whole session's limit, all turns and parked time, counted from its creation (spec §21.1)."""
    enable_recording: bool | None = None
    """Record each turn's display to an MP4 listed in ``recordingUrls`` (spec §22.1); default RECORDING_DEFAULT."""

    webhook_url: str | None = None
    """This session's own webhook target, besides ``WEBHOOK_URL`` (spec §22.4)."""
    workspace_id: str | None = Field(default=None, max_length=100)
    """Attach a workspace (spec §27.2): the agent's file actions see it as their root."""
    cache_script: bool | None = None
    """Cache a script for this task's template (spec §27.3); null: when the task has ``@{{…}}`` and a workspace."""
    auto_heal: bool | None = None
    """Re-run the agent when a cached script fails or its output fails the check (spec §27.3); default true."""
    custom_proxy: dict[str, Any] | None = None
    """``{host, port, username?, password?, ignoreCertErrors?, scheme?: "http"|"socks5"}`` (spec §28.1)."""
    proxy_country_code: str | None = None
    """A country of the operator's ``PROXY_POOL``; ``null``: direct; absent: ``PROXY_DEFAULT_COUNTRY``."""
    agentmail: Any = None
    code_mode: Any = None
    enable_scheduled_tasks: Any = None
    """BU-only: accepted, and a value we cannot honour adds one ``system`` event to the feed (spec §2.2)."""

    def unhonoured(self) -> list[str]:
        sent = {"agentmail": self.agentmail, "codeMode": self.code_mode}
        return unhonoured_fields({**sent, "enableScheduledTasks": self.enable_scheduled_tasks})

    @field_validator("webhook_url")
    @classmethod
    def _webhook_url(cls, value: str | None) -> str | None:
        problem = webhook_url_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("max_cost_usd")
    @classmethod
    def _finite_positive(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise ValueError("maxCostUsd must be a finite number greater than 0")
        if value is not None and value > MAX_COST_USD_LIMIT:
            raise ValueError(f"maxCostUsd must be at most {MAX_COST_USD_LIMIT:,.0f}")
        return value

    @field_validator("output_schema")
    @classmethod
    def _valid_json_schema(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        problem = output_schema_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    def sent(self, name: str) -> bool:
        return name in self.model_fields_set


class StopSessionBody(WireModel):
    strategy: Literal["session", "task"] = "session"


class UpdateSessionBody(WireModel):
    """``PATCH /v3/sessions/{id}`` (spec §21.3): a new title; ``null`` clears it."""

    title: str | None = Field(default=None, max_length=200)


class SessionView(WireModel):
    id: str
    status: str
    model: str
    title: str | None
    output: Any
    output_schema: dict[str, Any] | None
    step_count: int
    last_step_summary: str | None
    is_task_successful: bool | None
    live_url: str | None
    recording_urls: list[str] = Field(default_factory=list)
    profile_id: str | None
    workspace_id: str | None = None
    proxy_country_code: str | None = None
    custom_proxy: dict[str, Any] | None = None
    """``{host, port, scheme, hasUsername}`` of the session's own proxy: never its credentials (spec §28.1)."""
    max_cost_usd: str | None
    total_input_tokens: int
    total_output_tokens: int
    llm_cost_usd: str
    proxy_cost_usd: str = "0"
    browser_cost_usd: str = "0"
    proxy_used_mb: str = "0"
    total_cost_usd: str
    screenshot_url: None = None
    reasoning_effort: str
    thinking_level: str | None
    failure_kind: str | None
    end_reason: str | None = None
    max_duration_ms: int | None = None
    pause: dict[str, Any] | None = None
    takeover_url: str | None = None
    queue: dict[str, Any] | None = None
    failure_status_code: int | None
    agentmail_email: None = None
    integrations_used: list[str] = Field(default_factory=list)
    keep_alive: bool
    captcha_cost_usd: str
    browser_live: bool
    created_at: str
    updated_at: str


_EFFORT_TO_THINKING_LEVEL = {"none": "disabled", "low": "low", "medium": "medium", "high": "high"}


class PauseSessionBody(WireModel):
    """``POST /v3/sessions/{id}/pause`` (spec §21.5)."""

    reason: str | None = Field(default=None, max_length=500)


class ResumeSessionBody(WireModel):
    """``POST /v3/sessions/{id}/resume``: ``note`` reaches the agent with the hand-back."""

    note: str | None = Field(default=None, max_length=2000)


def session_view(
    record: SessionRecord,
    takeover_url: str | None = None,
    queue: dict[str, Any] | None = None,
    recording_urls: list[str] | None = None,
) -> SessionView:
    return SessionView(
        id=record.id,
        status=record.status.value,
        model=record.model,
        title=record.title,
        output=record.output,
        output_schema=record.output_schema,
        step_count=record.step_count,
        last_step_summary=record.last_step_summary,
        is_task_successful=record.is_task_successful,
        live_url=record.live_url,
        recording_urls=recording_urls or [],
        profile_id=record.profile_id,
        workspace_id=record.workspace_id,
        custom_proxy=public_proxy(record.proxy)[0],
        proxy_country_code=public_proxy(record.proxy)[1],
        proxy_cost_usd=format_usd(record.proxy_cost_usd),
        proxy_used_mb=proxy_used_mb(record.proxy_bytes),
        max_cost_usd=format_usd(record.max_cost_usd) if record.max_cost_usd is not None else None,
        total_input_tokens=record.total_input_tokens,
        total_output_tokens=record.total_output_tokens,
        llm_cost_usd=format_usd(record.llm_cost_usd),
        total_cost_usd=format_usd(record.total_cost_usd),
        reasoning_effort=record.reasoning_effort,
        thinking_level=_EFFORT_TO_THINKING_LEVEL.get(record.reasoning_effort),
        failure_kind=record.failure_kind.value if record.failure_kind else None,
        end_reason=record.end_reason.value if record.end_reason else None,
        max_duration_ms=record.max_duration_ms,
        pause=record.pause,
        takeover_url=takeover_url if record.pause is not None else None,
        queue=queue,
        failure_status_code=record.failure_status_code,
        keep_alive=record.keep_alive,
        captcha_cost_usd=format_usd(record.captcha_cost_usd),
        browser_live=record.browser_live,
        created_at=to_wire(record.created_at),
        updated_at=to_wire(record.updated_at),
    )


def session_json(
    record: SessionRecord,
    takeover_url: str | None = None,
    queue: dict[str, Any] | None = None,
    recording_urls: list[str] | None = None,
) -> bytes:
    """The ``SessionView`` of ``record`` as the JSON bytes FastAPI would send for it (camelCase, compact)."""
    return session_view(record, takeover_url, queue, recording_urls).model_dump_json(by_alias=True).encode()


class SessionListView(WireModel):
    sessions: list[SessionView]
    total: int
    page: int
    page_size: int


class MessageView(WireModel):
    id: str
    session_id: str
    role: str
    type: str
    summary: str
    data: str
    screenshot_url: None = None
    hidden: bool
    created_at: str


def message_view(message: Message) -> MessageView:
    return MessageView(
        id=message.id,
        session_id=message.session_id,
        role=message.role,
        type=message.type,
        summary=message.summary,
        data=message.data,
        hidden=message.hidden,
        created_at=to_wire(message.created_at),
    )


class MessageListView(WireModel):
    messages: list[MessageView]
    has_more: bool


class HealthView(WireModel):
    status: str = "ok"
    database: str = "ok"
    """``ok`` or ``unreachable`` (then the answer is a 503, so a load balancer takes the node out)."""


class DatabaseView(WireModel):
    """The store behind the node (spec §26.1): its kind and whether it answered just now."""

    kind: str
    """``sqlite`` or ``postgresql``."""
    reachable: bool


class NodeView(WireModel):
    """This node (spec §26.7)."""

    id: str
    url: str


class ClusterNodeView(WireModel):
    id: str
    url: str
    slots: int
    busy: int
    draining: bool
    last_seen_at: str


class ClusterView(WireModel):
    """The nodes alive now (seen within ``NODE_LEASE_S``) and the runs waiting on all of them (spec §26.7)."""

    nodes: list[ClusterNodeView]
    queued: int


class LoopLagView(WireModel):
    """How late the API's event loop ran a timer, in ms: last sample, worst since start, p99 of the last minute."""

    current: float
    max: float
    p99: float
    samples: int


class LoopStallView(WireModel):
    """A code site that held the event loop in stalls over 20 ms: ``owner > where`` (the project's or
    browser-use's innermost frame, and the innermost frame of all), how many stalls and their lag in ms, and the
    stack (innermost first) of its worst stall."""

    site: str
    stalls: int
    samples: int
    total_ms: float
    worst_ms: float
    stack: list[str]


class SlotUseView(WireModel):
    """A display slot with processes: its absolute index, holder (session or browser id; none for a spare),
    state and the PSS of all its processes (Xvfb, Chromium and helpers) in MiB."""

    index: int
    owner: str | None = None
    state: str
    pss_mib: float


class SparesView(WireModel):
    """Pre-started slots nobody holds (``PREWARM_SLOTS``): how many are wanted and exist, and what they cost."""

    wanted: int
    count: int
    pss_mib: float
    slots: list[SlotUseView]


class SandboxView(WireModel):
    enabled: bool
    state: Literal["enabled", "unavailable", "unknown"]
    """``unknown`` until the start-up probe has answered; ``enabled`` only when it found the sandbox working."""
    problem: str | None = None
    warning: str | None = None


class HealthDetailsView(WireModel):
    status: str = "ok"
    version: str
    active_sessions: int
    queued_sessions: int
    parked_sessions: int
    max_concurrent_sessions: int
    running: int
    queued: int
    parked: int
    cpu: float
    memory: float
    is_available: bool
    loop_lag_ms: LoopLagView | None = None
    loop_stalls: list[LoopStallView] | None = None
    """The sites that held the loop longest since start, worst first (the rest summed as ``other``)."""
    live_objects: dict[str, int] | None = None
    slots: list[SlotUseView] | None = None
    """The slots of sessions and raw browsers (spares are listed under ``spares`` only)."""
    spares: SparesView | None = None
    sandbox: SandboxView | None = None
    """Whether slots run in their sandbox (spec §24.2), and why not when they cannot."""
    file_warnings: list[str] = Field(default_factory=list)
    """``.env`` and data files other users can read, as found at startup (spec §25.4)."""
    database: DatabaseView | None = None
    node: NodeView | None = None
    cluster: ClusterView | None = None
