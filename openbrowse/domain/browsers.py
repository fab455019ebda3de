"""Raw-browser vocabulary (spec §19.1, §21): statuses, lifetimes, why a browser stopped, and the stored record."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from openbrowse.domain.ids import BrowserId

DEFAULT_TIMEOUT_MINUTES = 60.0
MAX_TIMEOUT_MINUTES = 240.0
"""BU's ``timeout`` (minutes) sets the maximum age; its own range stays BU's."""

MIN_LIFETIME_MS = 10_000
MAX_LIFETIME_MS = 24 * 3_600_000
"""``idleTimeoutMs`` and ``maxDurationMs`` accept 10 s to 24 h (seed)."""
DEFAULT_IDLE_TIMEOUT_MS = 5 * 60_000
DEFAULT_MAX_DURATION_MS = 60 * 60_000

MAX_WAIT_FOR_CAPACITY_MS = 30_000
MAX_QUEUE_SECONDS = 900
QUEUE_REASON_FULL = "vpc_full"
"""The seed's word for "every browser is busy"; the only queue reason a single host has."""


class BrowserStatus(StrEnum):
    ACTIVE = "active"
    STOPPED = "stopped"


class BrowserStopReason(StrEnum):
    """Why a raw browser ended, as stored; ``end_reasons`` maps it to the wire's ``endReason``."""

    REQUESTED = "requested"
    TIMEOUT = "timeout"
    IDLE_TIMEOUT = "idle_timeout"
    CAPACITY_TIMEOUT = "capacity_timeout"
    BROWSER_EXITED = "browser_exited"
    ABANDONED = "abandoned"
    SHUTDOWN = "shutdown"
    RESTART = "restart"
    NODE_LOST = "node_lost"
    """Its node stopped heartbeating; another node ended it (spec §26.5)."""
    MEMORY_LIMIT = "memory_limit"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class BrowserRecord:
    """One row of the ``browsers`` table: a browser that came up, or one queued for a slot (``queue_expires_at``).

    ``timeout_minutes`` is the maximum age (``maxDurationMs``); ``timeout_at`` is when it is reached, counted from
    ``started_at`` (for a queued browser: from when it was queued, until it starts).
    """

    id: BrowserId
    status: BrowserStatus
    timeout_minutes: float
    started_at: datetime
    timeout_at: datetime
    finished_at: datetime | None = None
    stop_reason: BrowserStopReason | None = None
    profile_id: str | None = None
    screen_width: int | None = None
    screen_height: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    queued_at: datetime | None = None
    queue_expires_at: datetime | None = None
    enable_recording: bool = False
    """The browser's display is recorded to its ``recordings/`` until it stops (spec §22.1)."""
    owner_node: str | None = None
    """The node whose slot holds it (spec §26.3)."""
    proxy: dict[str, Any] | None = None
    """The upstream proxy's public form (spec §28.1): ``country``, or ``host``/``port``/``scheme``/``hasUsername``."""
    proxy_bytes: int = 0

    @property
    def active(self) -> bool:
        return self.status is BrowserStatus.ACTIVE

    @property
    def starting(self) -> bool:
        """Still waiting in the queue for a slot."""
        return self.active and self.queue_expires_at is not None

    @property
    def live(self) -> bool:
        return self.active and self.queue_expires_at is None

    @property
    def max_duration_ms(self) -> int:
        return round(self.timeout_minutes * 60_000)

    def evolve(self, **changes: Any) -> BrowserRecord:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True)
class BrowserQueue:
    """Where a queued browser stands (spec §21.2). ``eta_seconds`` is an estimate."""

    position: int
    eta_seconds: int
    reason: str
    queued_at: datetime
    expires_at: datetime
