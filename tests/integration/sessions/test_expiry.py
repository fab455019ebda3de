"""Created shells expire after 15 minutes (spec §6 transition 4), with an injected clock and real SQLite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from openbrowse.config import Settings
from openbrowse.domain.sessions import SessionRecord, SessionStatus, StopStrategy
from openbrowse.errors import InvalidRequest
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.requests import SessionCreate
from openbrowse.sessions.runtime import Engine, WorkerRuntime
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.sessions import SessionRepo
from tests.integration.sessions.harness import AnyRunStarts


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 8, 18, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


class NoSlots:
    """Shells never run, so nothing may ask for a slot."""

    def acquire(self, owner: str, on_wait: Any = None) -> Any:
        raise AssertionError("a shell must not take a slot")


async def no_engine(record: SessionRecord) -> Engine:
    raise AssertionError("a shell must not start a run")


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def manager(tmp_path: Path, clock: Clock) -> AsyncIterator[SessionManager]:
    settings = Settings(OPENBROWSE_HOME=tmp_path)
    async with Database(settings.db_path) as db:
        sessions, feed = SessionRepo(db, clock), FeedRepo(db, clock)
        runtime = WorkerRuntime(
            settings, sessions, feed, NoSlots(), make_engine=no_engine, policy=AnyRunStarts(),
        )  # fmt: skip
        async with SessionManager(settings, sessions, feed, ProfileRepo(db), runtime, clock) as manager:
            yield manager


async def test_shell_expires_after_fifteen_minutes(manager: SessionManager, clock: Clock) -> None:
    shell = await manager.create(SessionCreate())
    clock.advance(minutes=14, seconds=59)
    assert await manager.expire_stale_shells() == []
    clock.advance(seconds=1)
    expired = await manager.expire_stale_shells()
    assert [r.id for r in expired] == [shell.id]
    record = await manager.get(shell.id)
    assert record.status is SessionStatus.EXPIRED
    assert record.last_step_summary == "Expired: created without a task"


async def test_expired_sessions_take_no_follow_up(manager: SessionManager, clock: Clock) -> None:
    shell = await manager.create(SessionCreate(keep_alive=True, sent_fields=frozenset({"keep_alive"})))
    clock.advance(minutes=20)
    await manager.expire_stale_shells()
    with pytest.raises(InvalidRequest, match="Session is expired, not idle"):
        await manager.follow_up(shell.id, SessionCreate(task="late", sent_fields=frozenset({"task"})))


async def test_only_shells_expire(manager: SessionManager, clock: Clock) -> None:
    shell = await manager.create(SessionCreate())
    await manager.stop(shell.id, StopStrategy.TASK)
    clock.advance(hours=1)
    assert await manager.expire_stale_shells() == []
    assert (await manager.get(shell.id)).status is SessionStatus.IDLE
