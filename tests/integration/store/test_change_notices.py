"""Two nodes' repos on one real PostgreSQL database (spec §26.4): what one writes, the other hears by NOTIFY, so
its kept views are dropped and its event streams wake; while it cannot hear, it keeps nothing and reads the
database; once it hears again, it keeps views again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest
import sqlalchemy as sa

from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionStatus
from openbrowse.store.change_notices import APPLICATION_NAME, ChangeNotices
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import StoreTarget
from tests.support.postgres import ThrowawayPostgres
from tests.support.records import session_record
from tests.support.waiting import wait_for_async

SESSION = SessionId("00000000-0000-4000-8000-0000000000bb")


@dataclass
class Node:
    db: Database
    notices: ChangeNotices
    sessions: SessionRepo
    feed: FeedRepo
    woken: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)


@pytest.fixture
async def nodes(throwaway_postgres: ThrowawayPostgres) -> AsyncIterator[tuple[Node, Node]]:
    target = StoreTarget.parse(throwaway_postgres.new_database())
    async with (
        Database(target) as db_a,
        Database(target) as db_b,
        ChangeNotices(target) as notices_a,
        ChangeNotices(target) as notices_b,
    ):
        made: list[Node] = []
        for db, notices in ((db_a, notices_a), (db_b, notices_b)):
            node = Node(db, notices, SessionRepo(db), FeedRepo(db))
            node.sessions.follow(notices)
            node.feed.follow(notices)
            node.sessions.listen(node.woken.append)
            node.feed.listen(node.woken.append)
            sa.event.listen(db.engine.sync_engine, "before_cursor_execute", _recorder(node.queries))
            made.append(node)
        yield made[0], made[1]


def _recorder(queries: list[str]) -> Callable[..., None]:
    def record(_conn: object, _cursor: object, statement: str, *_args: object) -> None:
        queries.append(statement)

    return record


async def insert(repo: SessionRepo) -> None:
    await repo.insert(session_record(SESSION))


def session_reads(queries: list[str]) -> int:
    return sum(1 for q in queries if q.lstrip().upper().startswith("SELECT") and "FROM sessions" in q)


async def test_a_view_is_kept_until_another_node_writes_the_row(nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    await insert(b.sessions)
    await wait_for_async(lambda: SESSION in a.woken, 30, what="node A to hear node B's insert")
    a.woken.clear()
    assert (await a.sessions.view(SESSION)).status is SessionStatus.CREATED
    reads = session_reads(a.queries)
    assert (await a.sessions.view(SESSION)).status is SessionStatus.CREATED
    assert session_reads(a.queries) == reads, "a second view with no write between is kept, not read again"

    await b.sessions.update(SESSION, status=SessionStatus.RUNNING)
    await wait_for_async(lambda: SESSION in a.woken, 30, what="node A to hear node B's write")
    assert (await a.sessions.view(SESSION)).status is SessionStatus.RUNNING


async def test_another_nodes_feed_append_wakes_this_nodes_streams(nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    await insert(a.sessions)
    await wait_for_async(lambda: SESSION in b.woken, 30, what="node B to hear the insert")
    b.woken.clear()
    await a.feed.append(SESSION, FeedEntry.system("test", "hello from node A"))
    await wait_for_async(lambda: SESSION in b.woken, 30, what="node B to hear node A's append")


async def test_after_the_listener_was_cut_no_kept_view_outlives_a_write(nodes: tuple[Node, Node]) -> None:
    a, b = nodes
    await insert(b.sessions)
    await a.sessions.view(SESSION)  # kept by node A
    async with b.db.transaction() as tx:  # the database server cuts both nodes' listening connections
        await tx.execute(
            sa.text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name"),
            {"name": APPLICATION_NAME},
        )
    # written while node A was deaf, or just after it heard again: either way it must not see the kept view
    await b.sessions.update(SESSION, status=SessionStatus.RUNNING)
    await wait_for_async(lambda: a.notices.connections >= 2 and a.notices.listening, 60, what="node A to listen again")
    assert (await a.sessions.view(SESSION)).status is SessionStatus.RUNNING
    await b.sessions.update(SESSION, status=SessionStatus.STOPPED)
    heard: bool = await wait_for_async(
        lambda: _status_is(a, SessionStatus.STOPPED), 30, what="node A to hear the next write"
    )
    assert heard


async def _status_is(node: Node, status: SessionStatus) -> bool:
    return (await node.sessions.view(SESSION)).status is status
