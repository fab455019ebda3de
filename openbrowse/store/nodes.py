"""NodeRepo: the ``nodes`` table, where every server process says it is alive (spec §26.2).

Times are the database's own clock in epoch seconds, never a node's, so hosts with skewed clocks still agree on who
is alive. A registration starts a new *epoch* for its id: a process that registered earlier under the same id (a
duplicate, or the same node frozen and then woken) finds its heartbeats refused, which is how it learns that the
cluster has moved on without it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from openbrowse.domain.browsers import BrowserStatus
from openbrowse.domain.sessions import SessionStatus
from openbrowse.store.schema import browsers, nodes as table, sessions

if TYPE_CHECKING:
    from openbrowse.store.db import Database, Tx


@dataclass(frozen=True, slots=True)
class NodeRow:
    id: str
    url: str
    epoch: int
    slots: int
    busy: int
    queued: int
    draining: bool
    started_at: float
    last_seen_at: float


@dataclass(frozen=True, slots=True)
class NodeLoad:
    """What a heartbeat reports: slots in all, slots in use, runs waiting here, and whether the node drains."""

    slots: int
    busy: int
    queued: int
    draining: bool


@dataclass(frozen=True, slots=True)
class Adopted:
    """What a survivor took over from a dead node: the node, and the ids of its sessions and raw browsers."""

    node_id: str
    session_ids: list[str]
    browser_ids: list[str]


_HELD_STATUSES = [str(SessionStatus.RUNNING), str(SessionStatus.IDLE), str(SessionStatus.CREATED)]
"""The statuses in which a session may be held by its node (a run, a parked browser, a queued task)."""


@dataclass(frozen=True, slots=True)
class Membership:
    """What this node holds in the cluster: its id and the epoch its registration started."""

    node_id: str
    epoch: int


def database_now(kind: str) -> Any:
    """The database's clock as epoch seconds (a SQL expression)."""
    if kind == "postgresql":
        return sa.func.extract("epoch", sa.func.clock_timestamp())
    return (sa.func.julianday("now") - 2440587.5) * 86400.0


class NodeRepo:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._now = database_now(db.kind)

    async def register(self, node_id: str, url: str, slots: int, lease_s: float = 15.0) -> Membership:
        """Claim ``node_id`` for this process with a new epoch (the row's epoch + 1, or 1 for a new id). The node is
        dead once it has not been seen for its own ``lease_s``, whatever the other nodes' leases are."""
        async with self._db.transaction() as tx:
            await self._db.serialise(tx, _node_lock_key(node_id))
            epoch = await self._next_epoch(tx, node_id)
            values = {
                "url": url,
                "epoch": epoch,
                "slots": slots,
                "lease_s": lease_s,
                "busy": 0,
                "queued": 0,
                "draining": 0,
                "started_at": self._now,
                "last_seen_at": self._now,
                "left_at": None,
            }
            if epoch == 1:
                await tx.execute(table.insert().values(id=node_id, **values))
            else:
                await tx.execute(table.update().where(table.c.id == node_id).values(**values))
        return Membership(node_id, epoch)

    async def _next_epoch(self, tx: Tx, node_id: str) -> int:
        query = sa.select(table.c.epoch).where(table.c.id == node_id)
        if tx.kind == "postgresql":
            query = query.with_for_update()
        current = (await tx.execute(query)).scalar_one_or_none()
        return 1 if current is None else int(current) + 1

    async def heartbeat(self, member: Membership, *, load: NodeLoad) -> bool:
        """Say this node is alive; False when another registration took the id since (this node is fenced)."""
        async with self._db.transaction() as tx:
            result = await tx.execute(
                table.update()
                .where(table.c.id == member.node_id, table.c.epoch == member.epoch, table.c.left_at.is_(None))
                .values(
                    last_seen_at=self._now,
                    slots=load.slots,
                    busy=load.busy,
                    queued=load.queued,
                    draining=int(load.draining),
                )
            )
        return bool(result.rowcount == 1)

    async def leave(self, member: Membership) -> None:
        """A clean exit: the node is gone at once, not after its lease runs out."""
        async with self._db.transaction() as tx:
            await tx.execute(
                table.update()
                .where(table.c.id == member.node_id, table.c.epoch == member.epoch)
                .values(left_at=self._now, busy=0, queued=0)
            )

    async def claim_dead(self, member: Membership) -> list[Adopted]:
        """Declare gone every other node not seen for its lease and adopt its sessions and active raw browsers, in
        one transaction: their rows name ``member`` from then on, and the dead node's writes are refused (its fence
        no longer holds). Each dead node is claimed by exactly one survivor (``FOR UPDATE SKIP LOCKED``); a
        survivor that is itself fenced claims nothing."""
        adopted: list[Adopted] = []
        async with self._db.transaction() as tx:
            if not await self._still_registered(tx, member):
                return []
            dead_query = sa.select(table.c.id).where(
                table.c.left_at.is_(None),
                table.c.last_seen_at < self._now - table.c.lease_s,
                table.c.id != member.node_id,
            )
            if tx.kind == "postgresql":
                dead_query = dead_query.with_for_update(skip_locked=True)
            for node_id in [str(found) for found in (await tx.execute(dead_query)).scalars()]:
                await tx.execute(
                    table.update().where(table.c.id == node_id).values(left_at=self._now, busy=0, queued=0)
                )
                held = await tx.execute(
                    sessions.update()
                    .where(sessions.c.owner_node == node_id, sessions.c.status.in_(_HELD_STATUSES))
                    .values(owner_node=member.node_id)
                    .returning(sessions.c.id)
                )
                session_ids = [str(found) for found in held.scalars()]
                active = await tx.execute(
                    browsers.update()
                    .where(browsers.c.owner_node == node_id, browsers.c.status == str(BrowserStatus.ACTIVE))
                    .values(owner_node=member.node_id)
                    .returning(browsers.c.id)
                )
                adopted.append(Adopted(node_id, session_ids, [str(found) for found in active.scalars()]))
        return adopted

    async def _still_registered(self, tx: Tx, member: Membership) -> bool:
        query = sa.select(table.c.id).where(
            table.c.id == member.node_id, table.c.epoch == member.epoch, table.c.left_at.is_(None)
        )
        return (await tx.execute(query)).first() is not None

    async def alive(self) -> list[NodeRow]:
        """The nodes seen within their lease that have not left, oldest registration first."""
        rows = await self._db.fetch_all(
            sa.select(table)
            .where(table.c.left_at.is_(None), table.c.last_seen_at > self._now - table.c.lease_s)
            .order_by(table.c.started_at, table.c.id)
        )
        return [_node_row(row) for row in rows]


def _node_lock_key(node_id: str) -> int:
    """A stable advisory-lock key per node id (PostgreSQL's lock keys are signed 64-bit integers)."""
    digest = hashlib.blake2b(f"node:{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _node_row(row: Any) -> NodeRow:
    return NodeRow(
        id=str(row["id"]),
        url=str(row["url"]),
        epoch=int(row["epoch"]),
        slots=int(row["slots"]),
        busy=int(row["busy"]),
        queued=int(row["queued"]),
        draining=bool(row["draining"]),
        started_at=float(row["started_at"]),
        last_seen_at=float(row["last_seen_at"]),
    )
