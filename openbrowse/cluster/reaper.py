"""NodeReaper: a surviving node ends the work of nodes that stopped heartbeating (spec §26.5).

Every third of ``NODE_LEASE_S`` it asks the database for nodes not seen for their own lease; for each one it claims
(exactly one survivor claims a dead node, and only while it is itself registered), the dead node's sessions and
active raw browsers now name this node, and this node types them: running runs end ``error``/``runner_lost`` with
a ``system`` event naming the node, parked sessions go cold, queued tasks are queued here in their place, raw
browsers end ``stopped``/``lost``/``runner_lost``. A dead node is therefore typed within ``NODE_LEASE_S`` plus a
third of it (plus the writes), well inside the spec's ``NODE_LEASE_S`` + 10 s.

A node judges others only once its own heartbeats have gone through for a whole lease: after the database was away
for every node, each looks silent until it has heartbeated again, and nodes must not declare each other dead then.

On SQLite there are no other nodes; the reaper is not started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType

from openbrowse.cluster.presence import NodePresence
from openbrowse.errors import StoreUnavailable
from openbrowse.shielding import run_shielded
from openbrowse.store.nodes import Adopted, NodeRepo

logger = logging.getLogger(__name__)

EndSessions = Callable[[str, list[str]], Awaitable[None]]
"""``end_sessions(dead_node_id, session_ids)``."""
EndBrowsers = Callable[[list[str]], Awaitable[object]]
"""``end_browsers(browser_ids)``."""


class NodeReaper:
    def __init__(
        self,
        repo: NodeRepo,
        presence: NodePresence,
        *,
        end_sessions: EndSessions,
        end_browsers: EndBrowsers,
    ) -> None:
        self._repo = repo
        self._presence = presence
        self._end_sessions = end_sessions
        self._end_browsers = end_browsers
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> NodeReaper:
        self._task = asyncio.create_task(self._run(), name="node-reaper")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await run_shielded(self._stop())

    async def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._presence.lease_s / 3)
            try:
                await self.reap_once()
            except StoreUnavailable as exc:
                logger.warning("Looking for dead nodes failed: %s", exc.message)
            except Exception:
                logger.exception("Looking for dead nodes failed")

    async def reap_once(self) -> list[Adopted]:
        member = self._presence.member
        if member is None or not self._presence.steady():
            return []
        adopted = await self._repo.claim_dead(member)
        for taken in adopted:
            logger.warning(
                "Node %s stopped heartbeating: ending its %d session(s) and %d raw browser(s) here",
                taken.node_id,
                len(taken.session_ids),
                len(taken.browser_ids),
            )
            await self._end_sessions(taken.node_id, taken.session_ids)
            await self._end_browsers(taken.browser_ids)
        return adopted
