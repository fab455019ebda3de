"""A session's ``maxDurationMs`` (spec §21.1): one wall-clock limit for the whole session, counted from its creation.

It covers every turn, the time queued for a slot, parked keep-alive time and pauses alike. Counting from the
creation (not the first start) makes ``createdAt + maxDurationMs`` a moment the caller can compute and rely on.

When it is reached:

* a session with a worker (queued, running or parked) is stopped by its :class:`DeadlineTimer`: a running turn
  ends like a stop, keeping what can be salvaged; a parked keep-alive browser is released; the session becomes
  ``stopped`` with ``endReason: max_duration``;
* a session without one (a shell that never got a task, or a keep-alive session left idle and cold by a restart)
  is ended by the periodic sweep, :func:`end_overdue_sessions`;
* from then on the session is over for good: a follow-up is refused (:func:`refuse_if_overdue`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import InvalidRequest
from openbrowse.sessions.states import Trigger

if TYPE_CHECKING:
    from openbrowse.domain.ids import SessionId
    from openbrowse.sessions.status_port import StatusPort
    from openbrowse.store.feed import FeedRepo
    from openbrowse.store.sessions import SessionRepo

__all__ = ["DeadlineTimer", "end_overdue_sessions", "reached_summary", "refuse_if_overdue"]

logger = logging.getLogger(__name__)


def reached_summary(record: SessionRecord) -> str:
    seconds = (record.max_duration_ms or 0) / 1000
    return f"Stopped: the session reached its maximum duration ({seconds:g} s)."


def refuse_if_overdue(record: SessionRecord, now: datetime, *, sent_limit: bool) -> None:
    """A follow-up neither changes the limit nor revives a session that reached it."""
    if sent_limit:
        raise InvalidRequest("maxDurationMs can only be set when a session is created.")
    if record.overdue(now):
        raise InvalidRequest("Session reached its maxDurationMs; start a new session.")


class DeadlineTimer:
    """Calls ``on_reached`` once at ``ends_at`` (wall clock); owned by one worker, cancelled when its run ends."""

    def __init__(self, on_reached: Callable[[], None], clock: Clock = utc_now) -> None:
        self._on_reached = on_reached
        self._clock = clock
        self._handle: asyncio.TimerHandle | None = None

    def arm(self, ends_at: datetime | None) -> None:
        self.cancel()
        if ends_at is None:
            return
        delay = max((ends_at - self._clock()).total_seconds(), 0.0)
        self._handle = asyncio.get_running_loop().call_later(delay, self._on_reached)

    def cancel(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()


async def end_overdue_sessions(
    sessions: SessionRepo,
    feed: FeedRepo,
    status: StatusPort,
    has_run: Callable[[SessionId], bool],
    now: datetime,
) -> list[SessionRecord]:
    """End sessions past their limit that no worker watches (``has_run`` is False): shells without a task and cold
    idle sessions."""
    ended = []
    for candidate in await sessions.with_status(SessionStatus.CREATED, SessionStatus.IDLE):
        if not candidate.overdue(now) or has_run(candidate.id):
            continue
        async with status.lock(candidate.id):
            record = await sessions.get(candidate.id)
            if record.is_queued or has_run(record.id) or not record.overdue(now):
                continue  # a run took it over meanwhile: its worker's timer ends it
            summary = reached_summary(record)
            ended.append(
                await status.apply_locked(
                    record.id,
                    Trigger.STOP_SESSION,
                    last_step_summary=summary,
                    live_url=None,
                    browser_live=False,
                    end_reason=EndReason.MAX_DURATION,
                )
            )
            await feed.append(record.id, FeedEntry.system("maxDuration", summary))
            logger.info("Session %s reached its maximum duration while no run held it", record.id)
    return ended
