"""Nodes on both real stores (spec §26.2): registration epochs, heartbeats refused once another process took the
id (fencing), a clean leave, and who counts as alive by the database's own clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from openbrowse.cluster.presence import ClusterView, NodePresence
from openbrowse.store.db import Database
from openbrowse.store.nodes import NodeLoad, NodeRepo
from openbrowse.store.schema import nodes as table
from openbrowse.store.target import StoreTarget
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
    [row] = await repo.alive(15)
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
    assert [node.id for node in await repo.alive(15)] == ["here"]


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
    assert await repo.alive(3) == []


async def test_a_fenced_presence_stops_heartbeating_and_does_not_mark_the_new_owner_gone(db: Database) -> None:
    repo = NodeRepo(db)
    async with NodePresence(repo, node_id="dup", url="http://127.0.0.1:1", lease_s=3, load=lambda: IDLE) as old:
        newer = await repo.register("dup", "http://127.0.0.1:2", 1)
        await wait_for_async(lambda: old.fenced, 30, what="the older process to learn it is fenced")
    [row] = await repo.alive(15)
    assert (row.url, row.epoch) == ("http://127.0.0.1:2", newer.epoch)
