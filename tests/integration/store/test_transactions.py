"""Write transactions survive cancellation at any await, and reads never see uncommitted writes (real SQLite)."""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openbrowse.store.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(tmp_path / "store.db") as database:
        async with database.transaction() as conn:
            await conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        yield database


async def _write(db: Database, body: str, *, rows: int = 2) -> None:
    async with db.transaction() as conn:
        for _ in range(rows):
            await conn.execute("INSERT INTO notes (body) VALUES (?)", (body,))


async def _count(db: Database, body: str) -> int:
    row = await db.fetch_one("SELECT COUNT(*) FROM notes WHERE body = ?", (body,))
    assert row is not None
    return int(row[0])


async def _cancel_after(task: asyncio.Task[None], loop_turns: int) -> None:
    for _ in range(loop_turns):
        await asyncio.sleep(0)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_a_write_cancelled_at_its_begin_leaves_the_store_writable(db: Database) -> None:
    victim = asyncio.create_task(_write(db, "victim"))
    await _cancel_after(victim, 1)  # the task has run up to its first await: BEGIN IMMEDIATE
    await _write(db, "after")
    assert await _count(db, "after") == 2
    assert await _count(db, "victim") == 0


async def test_writes_cancelled_at_every_await_leave_no_transaction_open(db: Database) -> None:
    """Cancel one of two contending writers after 0..59 loop turns, sometimes twice (a second stop lands in the
    rollback); each writer's rows are all there or none are, and the next write always succeeds."""
    rng = random.Random(7)
    for turns in range(60):
        victim = asyncio.create_task(_write(db, f"victim-{turns}", rows=3))
        rival = asyncio.create_task(_write(db, f"rival-{turns}", rows=3))
        await _cancel_after(victim if turns % 2 else rival, turns)
        if rng.random() < 0.5:
            victim.cancel()
            rival.cancel()
        await asyncio.gather(victim, rival, return_exceptions=True)
        await _write(db, f"after-{turns}")
        assert await _count(db, f"after-{turns}") == 2
        assert await _count(db, f"victim-{turns}") in {0, 3}
        assert await _count(db, f"rival-{turns}") in {0, 3}


async def test_a_failed_write_rolls_back_and_frees_the_lock(db: Database) -> None:
    async def doomed() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO notes (body) VALUES ('doomed')")
            raise RuntimeError("the caller failed half-way")

    with pytest.raises(RuntimeError):
        await doomed()
    await _write(db, "after")
    assert await _count(db, "doomed") == 0 and await _count(db, "after") == 2


async def test_reads_do_not_see_another_coroutines_uncommitted_write(db: Database) -> None:
    inside = asyncio.Event()
    finish = asyncio.Event()

    async def slow_writer() -> None:
        async with db.transaction() as conn:
            await conn.execute("INSERT INTO notes (body) VALUES ('pending')")
            inside.set()
            await finish.wait()

    writer = asyncio.create_task(slow_writer())
    await inside.wait()
    try:
        assert await _count(db, "pending") == 0
        assert await db.fetch_all("SELECT body FROM notes") == []
    finally:
        finish.set()
        await writer
    assert await _count(db, "pending") == 1


async def test_a_transaction_reads_its_own_writes(db: Database) -> None:
    async with db.transaction() as conn:
        await conn.execute("INSERT INTO notes (body) VALUES ('mine')")
        async with conn.execute("SELECT COUNT(*) FROM notes WHERE body = 'mine'") as cursor:
            row = await cursor.fetchone()
        assert row is not None and row[0] == 1


async def test_a_cancelled_read_never_pins_reads_to_an_old_snapshot(db: Database) -> None:
    await _write(db, "seed", rows=5)
    for turns in range(12):
        reader = asyncio.create_task(db.fetch_one("SELECT body FROM notes ORDER BY id"))
        for _ in range(turns):
            await asyncio.sleep(0)
        reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reader
        await _write(db, f"fresh-{turns}", rows=1)
        assert await _count(db, f"fresh-{turns}") == 1
