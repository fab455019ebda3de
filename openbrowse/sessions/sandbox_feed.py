"""What a slot's sandbox reports goes into the feed of the session that holds the slot (spec §19.2, §24.5):

* each destination the egress enforcer refused, once per (host, port, rule) for as long as the session holds the
  slot: an ``event`` of category ``network`` naming the host and the rule, never a body. Names that do not resolve
  are left out (Chromium's own background requests fail that way on every start);
* each failure streak of the holder's upstream proxy (spec §28.1): a ``network`` event naming it by ``host:port``;
* the first time the sandbox went over its memory cap: a ``system`` event (the second time ends the session).

Listeners are called on the server's event loop; each schedules its feed write as a task the attachment owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from openbrowse.domain.feed import EventCategory, FeedEntry, FeedSink
from openbrowse.domain.ids import SessionId
from openbrowse.network.refusal import Refusal
from openbrowse.network.upstream import UpstreamProxy
from openbrowse.slots.confinement import SlotConfinement

__all__ = ["SandboxFeed"]

logger = logging.getLogger(__name__)

QUIET_RULES = frozenset({"unresolvable"})


class SandboxFeed:
    """Attached while one session holds a slot; :meth:`detach` (idempotent) stops listening."""

    def __init__(self, confinement: SlotConfinement, session_id: SessionId, feed: FeedSink) -> None:
        self._confinement = confinement
        self._session_id = session_id
        self._feed = feed
        self._seen: set[tuple[str, int | None, str]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.get_running_loop()
        self._remove_refusals: Callable[[], None] | None = None
        if confinement.egress is not None:
            self._remove_refusals = confinement.egress.add_refusal_listener(self._refused)
        self._remove_proxy = confinement.route.add_failure_listener(self._proxy_failed) if confinement.route else None
        confinement.warning_listeners.append(self._warned)

    def _write(self, entry: FeedEntry) -> None:
        task = self._loop.create_task(self._append(entry))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _append(self, entry: FeedEntry) -> None:
        try:
            await self._feed.append(self._session_id, entry)
        except Exception:
            logger.exception("Could not record a sandbox event for session %s", self._session_id)

    def _refused(self, refusal: Refusal) -> None:
        key = (refusal.host, refusal.port, refusal.rule)
        if refusal.rule in QUIET_RULES or key in self._seen:
            return
        self._seen.add(key)
        where = refusal.host if refusal.port is None else f"{refusal.host}:{refusal.port}"
        summary = f"Network policy refused {where}: {refusal.reason}"
        self._write(FeedEntry.event(EventCategory.NETWORK, "refused", summary, host=refusal.host, rule=refusal.rule))

    def _proxy_failed(self, proxy: UpstreamProxy, reason: str) -> None:
        summary = f"Upstream proxy {proxy.label} failed: {reason}. Nothing was sent directly instead."
        self._write(FeedEntry.event(EventCategory.NETWORK, "proxy_failed", summary, proxy=proxy.label))

    def _warned(self, text: str) -> None:
        self._write(FeedEntry.system("resource_limit", text, level="warning"))

    async def detach(self) -> None:
        if self._remove_refusals is not None:
            self._remove_refusals()
            self._remove_refusals = None
        if self._remove_proxy is not None:
            self._remove_proxy()
            self._remove_proxy = None
        with contextlib.suppress(ValueError):
            self._confinement.warning_listeners.remove(self._warned)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
