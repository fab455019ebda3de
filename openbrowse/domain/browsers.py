"""Raw-browser vocabulary (spec §19.1): statuses, why a browser stopped, and the stored record."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from openbrowse.domain.ids import BrowserId

DEFAULT_TIMEOUT_MINUTES = 60.0
MAX_TIMEOUT_MINUTES = 240.0


class BrowserStatus(StrEnum):
    ACTIVE = "active"
    STOPPED = "stopped"


class BrowserStopReason(StrEnum):
    """Why a raw browser ended. Stored for operators; not on the wire."""

    REQUESTED = "requested"
    TIMEOUT = "timeout"
    BROWSER_EXITED = "browser_exited"
    ABANDONED = "abandoned"
    SHUTDOWN = "shutdown"
    RESTART = "restart"
    MEMORY_LIMIT = "memory_limit"


@dataclass(frozen=True, slots=True)
class BrowserRecord:
    """One row of the ``browsers`` table. A row exists only for a browser that came up."""

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

    @property
    def active(self) -> bool:
        return self.status is BrowserStatus.ACTIVE

    def evolve(self, **changes: Any) -> BrowserRecord:
        return replace(self, **changes)
