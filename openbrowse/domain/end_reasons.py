"""Why a session or a raw browser ended: the seed's ``endReason`` vocabulary (spec §21.1, §24.5).

Sessions keep BU's ``status`` and raw browsers BU's ``active``/``stopped``; ``endReason`` is added beside them, set
once when the status becomes terminal and cleared when a follow-up reopens the session.
"""

from __future__ import annotations

from enum import StrEnum

from openbrowse.domain.browsers import BrowserStatus, BrowserStopReason
from openbrowse.domain.failures import FailureKind


class EndReason(StrEnum):
    CLOSED = "closed"
    IDLE_TIMEOUT = "idle_timeout"
    MAX_DURATION = "max_duration"
    RUNNER_LOST = "runner_lost"
    ERROR = "error"
    MEMORY_LIMIT = "memory_limit"
    CAPACITY_TIMEOUT = "capacity_timeout"
    MAINTENANCE = "maintenance"


class BrowserState(StrEnum):
    """The seed's lifecycle word for a raw browser, shown next to BU's status."""

    STARTING = "starting"
    LIVE = "live"
    PAUSED = "paused"
    ENDED = "ended"
    LOST = "lost"


def end_reason_of_failure(kind: FailureKind | None) -> EndReason:
    """A failed run's end reason when nothing more specific was recorded."""
    if kind is FailureKind.SESSION_TIMEOUT:
        return EndReason.MAX_DURATION
    return EndReason.ERROR


_BROWSER_END_REASONS = {
    BrowserStopReason.REQUESTED: EndReason.CLOSED,
    BrowserStopReason.ABANDONED: EndReason.CLOSED,
    BrowserStopReason.TIMEOUT: EndReason.MAX_DURATION,
    BrowserStopReason.IDLE_TIMEOUT: EndReason.IDLE_TIMEOUT,
    BrowserStopReason.CAPACITY_TIMEOUT: EndReason.CAPACITY_TIMEOUT,
    BrowserStopReason.BROWSER_EXITED: EndReason.RUNNER_LOST,
    BrowserStopReason.RESTART: EndReason.RUNNER_LOST,
    BrowserStopReason.NODE_LOST: EndReason.RUNNER_LOST,
    BrowserStopReason.SHUTDOWN: EndReason.MAINTENANCE,
    BrowserStopReason.MEMORY_LIMIT: EndReason.MEMORY_LIMIT,
}


def browser_end_reason(status: BrowserStatus, stop_reason: BrowserStopReason | None) -> EndReason | None:
    if status is BrowserStatus.ACTIVE:
        return None
    return _BROWSER_END_REASONS.get(stop_reason, EndReason.ERROR) if stop_reason else EndReason.ERROR


def browser_state(
    status: BrowserStatus, stop_reason: BrowserStopReason | None, *, queued: bool = False, paused: bool = False
) -> BrowserState:
    if status is BrowserStatus.ACTIVE:
        if queued:
            return BrowserState.STARTING
        return BrowserState.PAUSED if paused else BrowserState.LIVE
    if browser_end_reason(status, stop_reason) is EndReason.RUNNER_LOST:
        return BrowserState.LOST
    return BrowserState.ENDED
