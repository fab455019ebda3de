"""SessionRepo.view serves rows from memory, yet never returns a row older than the last finished write (real
SQLite, readers and writers interleaved at every await)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import SessionNotFound
from openbrowse.store.db import Database
from openbrowse.store.sessions import SessionRepo

SESSION = SessionId("00000000-0000-4000-8000-000000000001")


@pytest.fixture
async def repo(tmp_path: Path) -> AsyncIterator[SessionRepo]:
    async with Database(tmp_path / "store.db") as db:
        sessions = SessionRepo(db)
        now = utc_now()
        await sessions.insert(
            SessionRecord(
                id=SESSION,
                status=SessionStatus.RUNNING,
                model="claude-sonnet-5",
                llm_model="claude-sonnet-5",
                reasoning_effort="medium",
                created_at=now,
                updated_at=now,
            )
        )
        yield sessions


async def test_a_view_after_a_write_shows_it(repo: SessionRepo) -> None:
    assert (await repo.view(SESSION)).step_count == 0
    assert (await repo.view(SESSION)).step_count == 0  # now from memory
    await repo.update(SESSION, step_count=1, last_step_summary="one")
    seen = await repo.view(SESSION)
    assert (seen.step_count, seen.last_step_summary) == (1, "one")


async def test_a_deleted_session_is_not_found(repo: SessionRepo) -> None:
    await repo.view(SESSION)
    await repo.delete(SESSION)
    assert await repo.find_view(SESSION) is None
    with pytest.raises(SessionNotFound):
        await repo.view(SESSION)


async def test_views_interleaved_with_writes_are_never_stale(repo: SessionRepo) -> None:
    """Each view returns at least the step count of the last write finished before the view began, and at most
    that of the last write begun before it ended; once the writers stop, every view shows the final row."""
    rng = random.Random(11)
    started = finished = 0
    problems: list[str] = []

    async def writer(turns: int) -> None:
        nonlocal started, finished
        for _ in range(turns):
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            started += 1
            count = started
            await repo.update(SESSION, step_count=count)
            finished = max(finished, count)

    async def reader(turns: int) -> None:
        for _ in range(turns):
            for _ in range(rng.randrange(3)):
                await asyncio.sleep(0)
            floor = finished
            seen = (await repo.view(SESSION)).step_count
            if not floor <= seen <= started:
                problems.append(f"saw {seen}, expected {floor}..{started}")

    await asyncio.gather(writer(60), *(reader(150) for _ in range(4)))
    assert problems == []
    assert (await repo.view(SESSION)).step_count == started
