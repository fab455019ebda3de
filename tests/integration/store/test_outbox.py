"""The webhook outbox on real SQLite: rows commit with the change they announce, or not at all, and survive a
reopen; the delivery worker's reads and settlements (spec §22.4)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.store.db import Database, Tx
from openbrowse.store.outbox import WebhookOutbox
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import StoreTarget

SESSION = SessionId("00000000-0000-4000-8000-0000000000aa")
HOOK = "https://hooks.example.com/openbrowse"
OWN = "https://own.example.com/hook"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def insert(sessions: SessionRepo, **fields: object) -> None:
    now = utc_now()
    record = SessionRecord(
        id=SESSION,
        status=SessionStatus.CREATED,
        model="gpt-x",
        llm_model="gpt-x",
        reasoning_effort="none",
        created_at=now,
        updated_at=now,
    )
    await sessions.insert(record.evolve(**fields))


@pytest.fixture
async def db(store_target: StoreTarget) -> AsyncIterator[Database]:
    async with Database(store_target) as database:
        yield database


async def test_status_change_writes_one_row_per_target(db: Database) -> None:
    clock = Clock()
    sessions, outbox = SessionRepo(db), WebhookOutbox(db, HOOK, epoch=clock)
    sessions.on_change(outbox.session_changed)
    await insert(sessions, webhook_url=OWN)
    await sessions.update(SESSION, status=SessionStatus.RUNNING)
    await sessions.update(SESSION, step_count=1)  # no status change: nothing to announce
    rows = await outbox.due(clock(), 10)
    assert sorted(row.target_url for row in rows) == sorted([HOOK, OWN])
    assert len({row.event_id for row in rows}) == 1  # one event, sent to both targets
    event = json.loads(rows[0].body)
    assert event["payload"]["status"] == "running" and event["payload"]["metadata"]["previousStatus"] == "created"
    assert await outbox.pending_count() == 2


async def test_no_target_no_row(db: Database) -> None:
    sessions, outbox = SessionRepo(db), WebhookOutbox(db, None)
    sessions.on_change(outbox.session_changed)
    await insert(sessions)
    await sessions.update(SESSION, status=SessionStatus.RUNNING)
    assert await outbox.pending_count() == 0


async def test_change_and_row_commit_together(db: Database) -> None:
    sessions, outbox = SessionRepo(db), WebhookOutbox(db, HOOK)
    sessions.on_change(outbox.session_changed)

    async def broken(conn: Tx, before: SessionRecord, after: SessionRecord) -> None:
        raise RuntimeError("disk full")

    await insert(sessions)
    sessions.on_change(broken)
    with pytest.raises(RuntimeError):
        await sessions.update(SESSION, status=SessionStatus.RUNNING)
    assert (await sessions.get(SESSION)).status is SessionStatus.CREATED
    assert await outbox.pending_count() == 0


async def test_pending_rows_survive_a_reopen_and_settle(store_target: StoreTarget) -> None:
    clock = Clock()
    async with Database(store_target) as db:
        sessions, outbox = SessionRepo(db), WebhookOutbox(db, HOOK, epoch=clock)
        sessions.on_change(outbox.session_changed)
        await insert(sessions)
        await sessions.update(SESSION, status=SessionStatus.RUNNING)
        await sessions.update(SESSION, status=SessionStatus.STOPPED)
    async with Database(store_target) as db:
        outbox = WebhookOutbox(db, HOOK, epoch=clock)
        first, second = await outbox.due(clock(), 10)
        assert first.seq < second.seq and first.attempts == 0
        await outbox.retry_at(first.seq, 1, clock() + 30, "answered 500")
        await outbox.delivered(second.seq, 1)
        assert await outbox.due(clock(), 10) == []
        assert await outbox.next_due() == clock() + 30
        clock.now += 30
        [again] = await outbox.due(clock(), 10)
        assert again.seq == first.seq and again.attempts == 1
        await outbox.failed(again.seq, 2, "refused")
        assert await outbox.next_due() is None and await outbox.pending_count() == 0
        assert await outbox.prune(clock() + 1) == 2
