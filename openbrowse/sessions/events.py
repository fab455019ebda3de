"""A session's event stream (spec §4.8): feed rows exactly once and in order, status, activity and code.

Each round reads the session row *first* and the feed after it, so every message written before the status
it reports has been delivered by the time that status is: a stream that ends on a resting status has sent
the whole feed. Rounds run when the board signals a change (feed append, row update, activity) and at least
every ``poll_interval`` seconds, which keeps it correct even if a signal were missed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from openbrowse.domain.activity import Activity, CodeDraft
from openbrowse.domain.feed import Message
from openbrowse.domain.sessions import RESTING_STATUSES, SessionRecord
from openbrowse.errors import InvalidRequest
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.maintenance import Maintenance, MaintenanceNotice
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo

BATCH = 200
POLL_INTERVAL = 1.0


@dataclass(frozen=True, slots=True)
class MessageEvent:
    message: Message


@dataclass(frozen=True, slots=True)
class StatusEvent:
    record: SessionRecord
    activity: Activity | None


@dataclass(frozen=True, slots=True)
class ActivityEvent:
    activity: Activity | None


@dataclass(frozen=True, slots=True)
class CodeEvent:
    code: CodeDraft


@dataclass(frozen=True, slots=True)
class MaintenanceEvent:
    notice: MaintenanceNotice


SessionEvent = MessageEvent | StatusEvent | ActivityEvent | CodeEvent | MaintenanceEvent


def status_key(record: SessionRecord) -> tuple[object, ...]:
    """The fields of a ``status`` event except ``activity`` (which has its own event): a change re-sends it."""
    return (
        record.status,
        record.live_url,
        record.step_count,
        record.total_input_tokens,
        record.total_output_tokens,
        record.llm_cost_usd,
        record.captcha_cost_usd,
        record.is_task_successful,
        record.failure_kind,
        record.end_reason,
        record.browser_live,
    )


class SessionEventStream:
    """Opened by :meth:`open` (which checks the session and the resume cursor), then iterated once."""

    def __init__(
        self,
        sessions: SessionRepo,
        feed: FeedRepo,
        board: ActivityBoard,
        session_id: str,
        after_seq: int,
        poll_interval: float = POLL_INTERVAL,
        maintenance: Maintenance | None = None,
    ) -> None:
        self._sessions = sessions
        self._feed = feed
        self._board = board
        self._session_id = session_id
        self._seq = after_seq
        self._poll_interval = poll_interval
        self._maintenance = maintenance

    @classmethod
    async def open(
        cls,
        sessions: SessionRepo,
        feed: FeedRepo,
        board: ActivityBoard,
        session_id: str,
        last_event_id: str | None,
        maintenance: Maintenance | None = None,
    ) -> SessionEventStream:
        """Raises ``SessionNotFound`` for an unknown session and ``InvalidRequest`` for an unknown resume id."""
        await sessions.get(session_id)
        after_seq = 0
        if last_event_id:
            seq = await feed.seq_of(session_id, last_event_id)
            if seq is None:
                raise InvalidRequest("Unknown message cursor")
            after_seq = seq
        return cls(sessions, feed, board, session_id, after_seq, maintenance=maintenance)

    async def __aiter__(self) -> AsyncIterator[SessionEvent]:
        sent_status: tuple[object, ...] | None = None
        sent_activity: Activity | None = None
        sent_code: CodeDraft | None = None
        warned = False
        while True:
            with self._board.watching(self._session_id) as wakeup:
                record = await self._sessions.find_view(self._session_id)
                if record is None:
                    return  # deleted while streaming
                notice = self._maintenance.notice if self._maintenance is not None else None
                if notice is not None and not warned and record.status not in RESTING_STATUSES:
                    warned = True
                    yield MaintenanceEvent(notice)
                async for message in self._new_messages():
                    yield MessageEvent(message)
                activity = self._board.activity(self._session_id)
                if status_key(record) != sent_status:
                    sent_status = status_key(record)
                    yield StatusEvent(record, activity)
                if activity != sent_activity:
                    sent_activity = activity
                    yield ActivityEvent(activity)
                code = self._board.code(self._session_id)
                if code is not None and code != sent_code:
                    sent_code = code
                    yield CodeEvent(code)
                if record.status in RESTING_STATUSES:
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wakeup.wait(), self._poll_interval)

    async def _new_messages(self) -> AsyncIterator[Message]:
        while True:
            batch = await self._feed.since(self._session_id, self._seq, BATCH)
            for message in batch:
                self._seq = message.seq
                yield message
            if len(batch) < BATCH:
                return


__all__ = [
    "ActivityEvent",
    "CodeEvent",
    "MaintenanceEvent",
    "MessageEvent",
    "SessionEvent",
    "SessionEventStream",
    "StatusEvent",
    "status_key",
]
