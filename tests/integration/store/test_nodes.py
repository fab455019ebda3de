"""Nodes on both real stores (spec §26.2): registration epochs, heartbeats refused once another process took the
id (fencing), a clean leave, and who counts as alive by the database's own clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from openbrowse.cluster.presence import ClusterView, NodePresence
from openbrowse.domain.browsers import BrowserRecord, BrowserStatus
from openbrowse.domain.clock import utc_now
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import BrowserId, SessionId
from openbrowse.domain.sessions import SessionStatus
from openbrowse.errors import NodeFenced
from openbrowse.store.browsers import BrowserRepo
from openbrowse.store.db import Database
from openbrowse.store.feed import FeedRepo
from openbrowse.store.nodes import NodeLoad, NodeRepo
from openbrowse.store.ownership import NodeOwnership
from openbrowse.store.schema import nodes as table
from openbrowse.store.sessions import SessionRepo
from openbrowse.store.target import StoreTarget
from tests.support.records import session_record
from tests.support.waiting import wait_for_async

IDLE = NodeLoad(slots=2, busy=0, queued=0, draining=False)


@pytest.fixture
async def db(store_target: StoreTarget) -> AsyncIterator[Database]:
    async with Database(store_target) as database:
        yield database


async def test_each_registration_is_a_new_epoch_that_fences_the_one_before(db: Database) -> None:
    repo = NodeRepo(db)
    first = await repo.register("node-a", "http://10.0.0.1:8420", 2)
    assert first.epoch == 1
    assert await repo.heartbeat(first, load=IDLE)
    second = await repo.register("node-a", "http://10.0.0.1:8420", 2)
    assert second.epoch == 2
    assert not await repo.heartbeat(first, load=IDLE), "the older registration must be fenced"
    assert await repo.heartbeat(second, load=NodeLoad(slots=3, busy=1, queued=4, draining=True))
    [row] = await repo.alive()
    assert (row.id, row.epoch, row.slots, row.busy, row.queued, row.draining) == ("node-a", 2, 3, 1, 4, True)


async def test_a_node_that_left_or_went_quiet_is_not_alive(db: Database) -> None:
    repo = NodeRepo(db)
    gone = await repo.register("gone", "http://10.0.0.2:8420", 1)
    quiet = await repo.register("quiet", "http://10.0.0.3:8420", 1)
    await repo.register("here", "http://10.0.0.4:8420", 1)
    await repo.leave(gone)
    assert not await repo.heartbeat(gone, load=IDLE), "a node that left does not come back by heartbeating"
    async with db.transaction() as tx:  # its last heartbeat an hour ago, by the database's clock
        await tx.execute(
            table.update().where(table.c.id == quiet.node_id).values(last_seen_at=table.c.last_seen_at - 3600)
        )
    assert [node.id for node in await repo.alive()] == ["here"]


async def test_two_processes_registering_one_new_id_at_once_get_distinct_epochs(db: Database) -> None:
    repo = NodeRepo(db)
    members = await asyncio.gather(*(repo.register("racer", "http://10.0.0.5:8420", 1) for _ in range(4)))
    assert sorted(member.epoch for member in members) == [1, 2, 3, 4]


async def test_presence_heartbeats_reports_the_cluster_and_leaves_on_exit(db: Database) -> None:
    repo = NodeRepo(db)
    load = NodeLoad(slots=2, busy=0, queued=0, draining=False)
    async with NodePresence(repo, node_id="n1", url="http://127.0.0.1:1", lease_s=3, load=lambda: load) as presence:
        load = NodeLoad(slots=2, busy=1, queued=3, draining=False)

        async def after_a_heartbeat() -> ClusterView | None:
            view = await presence.cluster()
            return view if [(node.id, node.busy) for node in view.nodes] == [("n1", 1)] else None

        view: ClusterView = await wait_for_async(after_a_heartbeat, 30, what="a heartbeat with the new load")
        assert view.queued == 3
    assert await repo.alive() == []


async def test_a_fenced_presence_stops_heartbeating_and_does_not_mark_the_new_owner_gone(db: Database) -> None:
    repo = NodeRepo(db)
    async with NodePresence(repo, node_id="dup", url="http://127.0.0.1:1", lease_s=3, load=lambda: IDLE) as old:
        newer = await repo.register("dup", "http://127.0.0.1:2", 1)
        await wait_for_async(lambda: old.fenced, 30, what="the older process to learn it is fenced")
    [row] = await repo.alive()
    assert (row.url, row.epoch) == ("http://127.0.0.1:2", newer.epoch)


async def _session(repo: SessionRepo, session_id: str, status: SessionStatus) -> None:
    await repo.insert(session_record(session_id, status))


async def _go_quiet(db: Database, node_id: str) -> None:
    """The node's last heartbeat an hour ago, by the database's clock."""
    async with db.transaction() as tx:
        await tx.execute(table.update().where(table.c.id == node_id).values(last_seen_at=table.c.last_seen_at - 3600))


async def test_a_survivor_adopts_a_quiet_nodes_held_rows_and_the_quiet_node_is_fenced(db: Database) -> None:
    repo = NodeRepo(db)
    dead_owner, survivor_owner = NodeOwnership("dead"), NodeOwnership("survivor")
    dead = await repo.register("dead", "http://10.0.0.7:8420", 1)
    survivor = await repo.register("survivor", "http://10.0.0.8:8420", 1)
    dead_owner.hold(dead.epoch)
    survivor_owner.hold(survivor.epoch)
    dead_sessions, dead_feed = SessionRepo(db, ownership=dead_owner), FeedRepo(db, ownership=dead_owner)
    for session_id, status in (("s-running", SessionStatus.RUNNING), ("s-stopped", SessionStatus.STOPPED)):
        await _session(dead_sessions, session_id, status)
    await _session(SessionRepo(db, ownership=survivor_owner), "s-other", SessionStatus.RUNNING)
    await BrowserRepo(db, ownership=dead_owner).insert(_browser("b-live"))

    assert await repo.claim_dead(survivor) == [], "nobody is quiet yet"
    await _go_quiet(db, "dead")
    [adopted] = await repo.claim_dead(survivor)
    assert (adopted.node_id, adopted.session_ids, adopted.browser_ids) == ("dead", ["s-running"], ["b-live"])
    assert await repo.claim_dead(survivor) == [], "a dead node is adopted once"
    assert [node.id for node in await repo.alive()] == ["survivor"]

    # the quiet node wakes up: its heartbeat and every write it tries are refused
    assert not await repo.heartbeat(dead, load=IDLE)
    with pytest.raises(NodeFenced):
        await dead_sessions.update(SessionId("s-running"), status=SessionStatus.STOPPED)
    with pytest.raises(NodeFenced):
        await dead_feed.append(SessionId("s-running"), FeedEntry.system("test", "written by a node the cluster lost"))
    assert (await dead_sessions.get("s-running")).status is SessionStatus.RUNNING
    assert await dead_feed.since("s-running", 0, 10) == []
    assert await repo.claim_dead(dead) == [], "a fenced node claims nothing"


async def test_each_dead_node_is_claimed_by_exactly_one_of_two_survivors(db: Database) -> None:
    repo = NodeRepo(db)
    first = await repo.register("survivor-1", "http://10.0.0.9:8420", 1)
    second = await repo.register("survivor-2", "http://10.0.0.10:8420", 1)
    for index in range(6):
        await repo.register(f"gone-{index}", "http://10.0.0.11:8420", 1)
        await _go_quiet(db, f"gone-{index}")
    claims = await asyncio.gather(*(repo.claim_dead(member) for member in (first, second, first, second)))
    claimed = sorted(adopted.node_id for claim in claims for adopted in claim)
    assert claimed == [f"gone-{index}" for index in range(6)]


def _browser(browser_id: str) -> BrowserRecord:
    now = utc_now()
    return BrowserRecord(
        id=BrowserId(browser_id),
        status=BrowserStatus.ACTIVE,
        timeout_minutes=60,
        started_at=now,
        timeout_at=now,
    )


async def test_each_node_is_judged_by_its_own_lease(db: Database) -> None:
    repo = NodeRepo(db)
    judge = await repo.register("judge", "http://10.0.0.12:8420", 1, lease_s=3)
    await repo.register("patient", "http://10.0.0.13:8420", 1, lease_s=7200)
    await repo.register("hasty", "http://10.0.0.14:8420", 1, lease_s=15)
    for node_id in ("patient", "hasty"):
        await _go_quiet(db, node_id)  # both silent for an hour: within the patient node's lease only
    assert sorted(node.id for node in await repo.alive()) == ["judge", "patient"]
    assert [adopted.node_id for adopted in await repo.claim_dead(judge)] == ["hasty"]
