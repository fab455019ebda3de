"""NodePresence: this process as a node of the cluster (spec §26.2, §26.7).

Entered at start-up after the store: it registers the node (a new epoch), then heartbeats every third of
``NODE_LEASE_S`` with what the node holds, and on a clean exit marks the node gone so the others need not wait
for its lease to run out. A heartbeat the database refuses means another process registered under this id since:
the node is *fenced*, says so once in the log, and stops claiming to be alive under that id.

On SQLite the cluster is this process alone, and the same code keeps the one row current, so ``/health/details``
reads the same either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from openbrowse.errors import StoreUnavailable
from openbrowse.shielding import run_shielded
from openbrowse.slots.pool import PoolStats
from openbrowse.store.nodes import Membership, NodeLoad, NodeRepo, NodeRow
from openbrowse.store.ownership import NodeOwnership

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ClusterView:
    """The nodes alive now and the runs waiting across all of them."""

    nodes: list[NodeRow]
    queued: int


def stop_this_process() -> None:
    """What a fenced node does: its runs and browsers belong to others now, so it shuts down as on SIGTERM (its
    browsers are torn down, its writes are refused) and comes back fresh, under a new epoch, when its supervisor
    restarts it."""
    logger.error("This node was declared gone by the cluster: shutting down")
    os.kill(os.getpid(), signal.SIGTERM)


def node_load(stats: PoolStats, *, draining: bool) -> NodeLoad:
    """A heartbeat's figures from the slot pool: parked keep-alive browsers hold their slot, so they count busy."""
    return NodeLoad(slots=stats.size, busy=stats.busy + stats.parked, queued=stats.queued, draining=draining)


class NodePresence:
    def __init__(
        self,
        repo: NodeRepo,
        *,
        node_id: str,
        url: str,
        lease_s: float,
        load: Callable[[], NodeLoad],
        ownership: NodeOwnership | None = None,
        on_fenced: Callable[[], None] | None = None,
    ) -> None:
        self._repo = repo
        self._ownership = ownership
        self._on_fenced = on_fenced
        self.node_id = node_id
        self.url = url
        self.lease_s = lease_s
        self._load = load
        self._member: Membership | None = None
        self._beating: asyncio.Task[None] | None = None
        self.fenced = False
        self._steady_since: float | None = None
        """Another registration took this id: this process no longer speaks for the node."""

    @property
    def member(self) -> Membership | None:
        """This node's registration while it holds one (None once fenced or closed)."""
        return None if self.fenced else self._member

    async def __aenter__(self) -> NodePresence:
        self._member = await self._repo.register(self.node_id, self.url, self._load().slots, self.lease_s)
        self._steady_since = asyncio.get_running_loop().time()
        if self._ownership is not None:
            self._ownership.hold(self._member.epoch)  # from now on this node's writes carry its fence
        if self._member.epoch > 1:
            logger.info("Node %s registered again (epoch %d)", self.node_id, self._member.epoch)
        self._beating = asyncio.create_task(self._beat(self._member), name=f"node-heartbeat-{self.node_id}")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await run_shielded(self._close())

    async def _close(self) -> None:
        beating, self._beating = self._beating, None
        if beating is not None:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
        member, self._member = self._member, None
        if member is not None and not self.fenced:
            try:
                await self._repo.leave(member)
            except StoreUnavailable:
                logger.warning("Could not mark node %s as gone; the others will see its lease run out", self.node_id)

    async def _beat(self, member: Membership) -> None:
        interval = self.lease_s / 3
        while True:
            await asyncio.sleep(interval)
            try:
                still_ours = await self._repo.heartbeat(member, load=self._load())
            except StoreUnavailable as exc:
                self._steady_since = None
                logger.warning("Heartbeat of node %s failed: %s", self.node_id, exc.message)
                continue
            except Exception:
                self._steady_since = None
                logger.exception("Heartbeat of node %s failed", self.node_id)
                continue
            if self._steady_since is None:
                self._steady_since = asyncio.get_running_loop().time()
            if not still_ours:
                self.fenced = True
                logger.error(
                    "Node %s was registered again by another process (or declared gone): this one is fenced and "
                    "stops heartbeating under that id",
                    self.node_id,
                )
                if self._on_fenced is not None:
                    self._on_fenced()
                return

    def steady(self) -> bool:
        """Whether this node's heartbeats have gone through for a whole lease. Only then may it judge others: after
        the database was away for everyone, every node looks silent until each has heartbeated once again."""
        since = self._steady_since
        return since is not None and asyncio.get_running_loop().time() - since >= self.lease_s

    async def cluster(self) -> ClusterView:
        nodes = await self._repo.alive()
        return ClusterView(nodes=nodes, queued=sum(node.queued for node in nodes))
