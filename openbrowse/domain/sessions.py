"""Session vocabulary: statuses, stop strategies and the stored session record."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any

from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.ids import SessionId
from openbrowse.domain.secrets import ScopedSecrets

MIN_MAX_DURATION_MS = 10_000
MAX_MAX_DURATION_MS = 24 * 3600 * 1000
"""A session's ``maxDurationMs`` lies within 10 s to 24 h (spec §21.1), as a raw browser's does."""


class SessionStatus(StrEnum):
    CREATED = "created"
    RUNNING = "running"
    IDLE = "idle"
    STOPPED = "stopped"
    TIMED_OUT = "timed_out"
    ERROR = "error"
    EXPIRED = "expired"


TERMINAL_STATUSES = frozenset(
    {SessionStatus.STOPPED, SessionStatus.TIMED_OUT, SessionStatus.ERROR, SessionStatus.EXPIRED}
)
"""Statuses a run never leaves on its own. Keep-alive sessions still take follow-ups in all but ``expired``."""

RESTING_STATUSES = frozenset(TERMINAL_STATUSES | {SessionStatus.IDLE})
"""Statuses in which nothing is running or queued: clients stop polling here."""


class StopStrategy(StrEnum):
    SESSION = "session"
    TASK = "task"


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One row of the ``sessions`` table.

    ``model`` is the name echoed on the wire; ``llm_model`` the canonical catalog id the run uses.
    ``pending_task`` is set while a dispatched task waits for a slot (the *queued* sub-state of ``created``);
    ``queue_seq`` orders those waits so a restart re-queues them in submission order.
    """

    id: SessionId
    status: SessionStatus
    model: str
    llm_model: str
    reasoning_effort: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    task: str | None = None
    pending_task: str | None = None
    queue_seq: int | None = None
    keep_alive: bool = False
    output: Any = None
    output_schema: dict[str, Any] | None = None
    sensitive_data: ScopedSecrets | None = None
    """Pattern → name → value (spec §25.3); wiped when the session ends (keep-alive: when it expires)."""
    system_prompt_extension: str | None = None
    profile_id: str | None = None
    step_count: int = 0
    last_step_summary: str | None = None
    is_task_successful: bool | None = None
    live_url: str | None = None
    browser_live: bool = False
    max_cost_usd: Decimal | None = None
    allowance_usd: Decimal | None = None
    total_input_tokens: int = 0
    total_output_tokens: int = 0
    llm_cost_usd: Decimal = field(default_factory=Decimal)
    captcha_cost_usd: Decimal = field(default_factory=Decimal)
    failure_kind: FailureKind | None = None
    failure_status_code: int | None = None
    end_reason: EndReason | None = None
    pause: dict[str, Any] | None = None
    """While a person has taken over (spec §21.5): ``state``, ``reason``, ``by``, ``requestedAt``, ``pausedAt``,
    ``expiresAt`` as on the wire."""
    max_duration_ms: int | None = None
    """The whole session's wall-clock limit from ``created_at`` (spec §21.1); None: no limit."""
    enable_recording: bool = False
    """Each turn's display is recorded to the session's ``recordings/`` (spec §22.1)."""
    webhook_url: str | None = None
    """This session's own webhook target (spec §22.4), besides ``WEBHOOK_URL``."""
    owner_node: str | None = None
    """The node that last started or queued its run, and holds its browser while one is up (spec §26.3)."""
    workspace_id: str | None = None
    """The attached workspace (spec §27.2): the agent's files live there; follow-ups keep it."""
    cache_script: bool | None = None
    """``cacheScript`` as sent (spec §27.3): None caches templated tasks when a workspace is attached."""
    auto_heal: bool = True
    """``autoHeal`` (spec §27.3): a cached script that fails, or whose output fails the check, is healed."""
    proxy: dict[str, Any] | None = field(default=None, repr=False)
    """The upstream proxy (spec §28.1): ``country`` when from the pool, else ``customProxy``'s fields, credentials
    included while the session lives (wiped with ``sensitive_data`` when it ends); None: direct."""
    proxy_bytes: int = 0
    proxy_cost_usd: Decimal = field(default_factory=Decimal)

    @property
    def total_cost_usd(self) -> Decimal:
        return self.llm_cost_usd + self.captcha_cost_usd + self.proxy_cost_usd

    @property
    def ends_at(self) -> datetime | None:
        """When the session reaches its ``maxDurationMs`` (wall clock from its creation), or None without one."""
        if self.max_duration_ms is None:
            return None
        return self.created_at + timedelta(milliseconds=self.max_duration_ms)

    def overdue(self, now: datetime) -> bool:
        ends_at = self.ends_at
        return ends_at is not None and now >= ends_at

    @property
    def is_queued(self) -> bool:
        return self.status is SessionStatus.CREATED and self.pending_task is not None

    def evolve(self, **changes: Any) -> SessionRecord:
        return replace(self, **changes)


TITLE_LIMIT = 80


def title_from_task(task: str | None) -> str | None:
    """A session's title made from its first task: the first non-blank line, spaces collapsed, at most 80
    characters (spec §21.3)."""
    for line in (task or "").splitlines():
        words = " ".join(line.split())
        if words:
            return words if len(words) <= TITLE_LIMIT else words[: TITLE_LIMIT - 1].rstrip() + "…"
    return None
