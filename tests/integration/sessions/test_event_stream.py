"""SessionEventStream on real SQLite: every message once and in order, pushed by the board, ending at rest."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from openbrowse.domain.activity import ActivityKind, CodeStatus
from openbrowse.domain.clock import utc_now
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId, new_session_id
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import InvalidRequest, SessionNotFound
from openbrowse.sessions.activity import ActivityBoard
from openbrowse.sessions.events import (
    ActivityEvent,
    CodeEvent,
    MessageEvent,
    SessionEvent,
    SessionEventStream,
    StatusEvent,
)
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo

NEVER = 3600.0  # a poll interval no test waits for: changes must arrive by push


@dataclass
class Parts:
    sessions: SessionRepo
    feed: FeedRepo
    board: ActivityBoard

    async def session(self, status: SessionStatus = SessionStatus.RUNNING) -> SessionId:
        now = utc_now()
        record = SessionRecord(
            id=new_session_id(), status=status, model="gpt-5.6-terra", llm_model="gpt-5.6-terra",
            reasoning_effort="none", created_at=now, updated_at=now,
        )  # fmt: skip
        await self.sessions.insert(record)
        return record.id

    def stream(self, session_id: SessionId, after_seq: int = 0) -> SessionEventStream:
        return SessionEventStream(self.sessions, self.feed, self.board, session_id, after_seq, poll_interval=NEVER)


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[Parts]:
    async with Database(tmp_path / "events.db") as db:
        board = ActivityBoard()
        sessions, feed = SessionRepo(db), FeedRepo(db)
        sessions.listen(board.touch)
        feed.listen(board.touch)
        yield Parts(sessions, feed, board)


async def collect(stream: SessionEventStream) -> list[SessionEvent]:
    return [event async for event in stream]


async def test_every_message_arrives_once_in_order_and_the_stream_ends_at_rest(parts: Parts) -> None:
    sid = await parts.session()

    async def write() -> None:
        for number in range(450):  # more than one batch
            await parts.feed.append(sid, FeedEntry.system("note", f"message {number}"))
            if number % 50 == 0:
                await asyncio.sleep(0)
        await parts.sessions.update(sid, status=SessionStatus.STOPPED, is_task_successful=True)

    events, _ = await asyncio.wait_for(asyncio.gather(collect(parts.stream(sid)), write()), timeout=60)
    delivered = [e.message.id for e in events if isinstance(e, MessageEvent)]
    assert delivered == [m.id for m in await parts.feed.all(sid)]
    statuses = [e for e in events if isinstance(e, StatusEvent)]
    assert statuses[0].record.status is SessionStatus.RUNNING
    assert statuses[-1].record.status is SessionStatus.STOPPED and events[-1] is statuses[-1]
    assert parts.board.watched() == 0


async def test_resume_after_a_message_sends_only_what_follows(parts: Parts) -> None:
    sid = await parts.session(SessionStatus.IDLE)
    written = [await parts.feed.append(sid, FeedEntry.system("note", f"m{n}")) for n in range(5)]
    stream = await SessionEventStream.open(parts.sessions, parts.feed, parts.board, sid, written[1].id)
    events = await collect(stream)
    assert [e.message.summary for e in events if isinstance(e, MessageEvent)] == ["m2", "m3", "m4"]
    assert isinstance(events[-1], StatusEvent) and events[-1].record.status is SessionStatus.IDLE


async def test_a_stream_that_goes_away_leaves_nothing_behind(parts: Parts) -> None:
    sid = await parts.session()
    events = aiter(parts.stream(sid))
    assert isinstance(await anext(events), StatusEvent)
    assert parts.board.watched() == 1
    waiting = asyncio.ensure_future(anext(events))
    await asyncio.sleep(0)
    waiting.cancel()  # the client disconnected while the stream waited for a change
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await events.aclose()  # type: ignore[attr-defined]
    assert parts.board.watched() == 0


async def test_open_refuses_unknown_sessions_and_cursors(parts: Parts) -> None:
    sid = await parts.session()
    other = await parts.session()
    foreign = await parts.feed.append(other, FeedEntry.system("note", "not yours"))
    with pytest.raises(SessionNotFound):
        await SessionEventStream.open(parts.sessions, parts.feed, parts.board, "missing", None)
    with pytest.raises(InvalidRequest, match="Unknown message cursor"):
        await SessionEventStream.open(parts.sessions, parts.feed, parts.board, sid, foreign.id)


async def test_activity_and_code_are_pushed_when_they_change(parts: Parts) -> None:
    sid = await parts.session()
    reporter = parts.board.reporter(sid)
    received: list[SessionEvent] = []
    changed = asyncio.Event()

    async def consume() -> None:
        async for event in parts.stream(sid):
            received.append(event)
            changed.set()

    async def next_event() -> SessionEvent:
        await asyncio.wait_for(changed.wait(), timeout=30)
        changed.clear()
        return received[-1]

    consumer = asyncio.create_task(consume())
    try:
        assert isinstance(await next_event(), StatusEvent)
        reporter.begin("Reasoning", ActivityKind.REASONING, step=3)
        event = await next_event()
        assert isinstance(event, ActivityEvent) and event.activity is not None
        assert (event.activity.label, event.activity.step, event.activity.spin) == ("Reasoning", 3, True)
        reporter.stream("I should open the form")
        event = await next_event()
        assert isinstance(event, ActivityEvent) and event.activity is not None
        assert event.activity.stream == "I should open the form" and event.activity.spin is False
        reporter.code("scrape.py", "print(1)", CodeStatus.WRITING)
        event = await next_event()
        assert isinstance(event, CodeEvent) and event.code.status is CodeStatus.WRITING
        reporter.finish()
        event = await next_event()
        assert isinstance(event, ActivityEvent) and event.activity is None
        await parts.sessions.update(sid, step_count=1)
        event = await next_event()
        assert isinstance(event, StatusEvent) and event.record.step_count == 1
        await parts.sessions.delete(sid)
        await asyncio.wait_for(consumer, timeout=30)  # a deleted session ends its streams
        assert parts.board.watched() == 0
    finally:
        consumer.cancel()
