"""SessionRepo.update on real SQLite and PostgreSQL: the row it returns is the one its own transaction wrote, and
the row is read before the write only when a registered hook or watcher is concerned with a field it writes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import event

from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import SessionNotFound
from openbrowse.store.db import Database, Tx
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import StoreTarget

SESSION = SessionId("00000000-0000-4000-8000-0000000000cc")


class Statements:
    """Every statement the writer runs (SQLAlchemy's cursor event), to count the row's reads."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def __call__(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        self.seen.append(statement)

    def row_reads(self) -> int:
        return sum(statement.startswith("SELECT") and "FROM sessions" in statement for statement in self.seen)


@pytest.fixture
async def db(store_target: StoreTarget) -> AsyncIterator[Database]:
    async with Database(store_target) as database:
        yield database


async def traced_repo(db: Database) -> tuple[SessionRepo, Statements]:
    sessions, statements = SessionRepo(db), Statements()
    now = utc_now()
    await sessions.insert(
        SessionRecord(
            id=SESSION,
            status=SessionStatus.CREATED,
            model="gpt-x",
            llm_model="gpt-x",
            reasoning_effort="none",
            created_at=now,
            updated_at=now,
        )
    )
    event.listen(db.engine.sync_engine, "before_cursor_execute", statements)
    return sessions, statements


async def test_an_update_returns_the_row_it_wrote(db: Database) -> None:
    sessions, statements = await traced_repo(db)
    written = await sessions.update(SESSION, step_count=3, last_step_summary="three")
    assert statements.row_reads() == 0  # no observer: the write alone, its row from RETURNING
    assert (written.step_count, written.last_step_summary) == (3, "three")
    assert written == await sessions.get(SESSION)


async def test_the_row_is_read_before_only_for_a_concerned_observer(db: Database) -> None:
    sessions, statements = await traced_repo(db)
    hooked: list[tuple[SessionStatus, SessionStatus]] = []
    watched: list[int] = []

    async def hook(conn: Tx, before: SessionRecord, after: SessionRecord) -> None:
        hooked.append((before.status, after.status))

    sessions.on_change(hook, fields={"status"})
    sessions.watch(lambda before, after: watched.append(after.step_count - before.step_count), fields={"step_count"})

    await sessions.update(SESSION, last_step_summary="nobody looks at this")
    assert (statements.row_reads(), hooked, watched) == (0, [], [])

    await sessions.update(SESSION, status=SessionStatus.RUNNING)
    assert (statements.row_reads(), hooked, watched) == (1, [(SessionStatus.CREATED, SessionStatus.RUNNING)], [])

    await sessions.update(SESSION, step_count=2)
    assert (statements.row_reads(), watched) == (2, [2])
    assert len(hooked) == 1


async def test_an_observer_of_every_field_sees_every_update(db: Database) -> None:
    sessions, _ = await traced_repo(db)
    seen: list[str | None] = []
    sessions.watch(lambda before, after: seen.append(after.last_step_summary))
    await sessions.update(SESSION, last_step_summary="one")
    await sessions.update(SESSION, title="a title")
    assert seen == ["one", "one"]


async def test_an_update_of_an_unknown_session_is_not_found(db: Database) -> None:
    sessions, _ = await traced_repo(db)
    sessions.watch(lambda before, after: None)
    with pytest.raises(SessionNotFound):
        await sessions.update(SessionId("00000000-0000-4000-8000-0000000000dd"), step_count=1)
    with pytest.raises(SessionNotFound):
        await SessionRepo(db).update(SessionId("00000000-0000-4000-8000-0000000000dd"), step_count=1)
