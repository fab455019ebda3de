"""Maintenance: the drain a SIGTERM starts (spec §21.6).

The server keeps answering while it drains, so viewers and clients learn what happens:

1. at once: ``notice`` (``maintenance_warning {endsAt}``, ``SHUTDOWN_GRACE_S`` from now) for every SSE stream and
   live viewer; new runs, follow-ups and raw browsers are refused; parked keep-alive sessions go cold (``idle``,
   resumable: a later follow-up replays); queued runs and queued raw browsers end (queued runs are re-queued at
   the next start, as after any shutdown);
2. until ``endsAt``: running sessions go on; a turn that ends then ends as usual (and never parks);
3. at ``endsAt``: each session still running stops at its next safe point (a step in progress finishes, a model
   call in flight is dropped) and ends ``stopped`` with ``endReason: maintenance``; raw browsers end the same way.

Profiles and recordings are saved by the same close path as any other end. ``endsAt`` is a promise to everyone who
was told it: when anything still ran at the start of the drain, the drain lasts until ``endsAt`` even if all of it
finished sooner (a user who reads the time may use all of it); only a server with nothing running drains at once.
Whoever started it (the server) is told when it finished, and then shuts down as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from openbrowse.sessions.run_endings import StopReason
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from openbrowse.sessions.browsers import BrowserService
    from openbrowse.sessions.manager import SessionManager

__all__ = ["Maintenance", "MaintenanceDrain", "MaintenanceNotice"]

logger = logging.getLogger(__name__)

MAINTENANCE_TEXT = (
    "This browser restarts for maintenance at {time}. Finish what you are doing, then start a new session."
)


@dataclass(frozen=True, slots=True)
class MaintenanceNotice:
    ends_at_ms: int
    """When the remaining sessions and browsers end, in ms since the epoch (the wire's ``endsAt``)."""

    def wire(self) -> dict[str, object]:
        return {"type": "maintenance_warning", "endsAt": self.ends_at_ms}


class Maintenance:
    """The drain's request and its notice: created with the app, so a SIGTERM is taken from the first moment.

    :meth:`begin` announces the drain; the :class:`MaintenanceDrain` of the running services carries it out and
    then reports back through :meth:`finished`.
    """

    def __init__(self, grace_seconds: float) -> None:
        self.grace_seconds = grace_seconds
        self.notice: MaintenanceNotice | None = None
        self.announced = asyncio.Event()
        self.deadline = 0.0
        """When the drain ends what is left, in the event loop's time (set by :meth:`begin`)."""
        self._on_drained: Callable[[], None] | None = None

    @property
    def draining(self) -> bool:
        return self.notice is not None

    def begin(self, on_drained: Callable[[], None]) -> None:
        """Start the drain (a repeat does nothing); ``on_drained`` runs once it finished, however it finished."""
        if self.notice is not None:
            return
        self._on_drained = on_drained
        self.deadline = asyncio.get_running_loop().time() + self.grace_seconds
        self.notice = MaintenanceNotice(round((time.time() + self.grace_seconds) * 1000))
        self.announced.set()

    def finished(self) -> None:
        """The drain is over: tell whoever began it (once)."""
        on_drained, self._on_drained = self._on_drained, None
        if on_drained is not None:
            on_drained()


class MaintenanceDrain:
    """Ends what the services still run once :class:`Maintenance` began (an async context of the lifespan).

    A drain that began before the services existed starts as soon as they do. Leaving the context cancels a drain
    in progress (shielded), before the services it ends close.
    """

    def __init__(
        self,
        maintenance: Maintenance,
        manager: SessionManager,
        browsers: BrowserService,
        wake_streams: Callable[[], None],
    ) -> None:
        self._maintenance = maintenance
        self._manager = manager
        self._browsers = browsers
        self._wake_streams = wake_streams
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> MaintenanceDrain:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="maintenance-drain")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run_shielded(asyncio.wait({task}))

    async def _run(self) -> None:
        maintenance = self._maintenance
        await maintenance.announced.wait()
        try:
            await self._drain(maintenance.deadline)
        finally:
            maintenance.finished()

    async def _drain(self, deadline: float) -> None:
        loop = asyncio.get_running_loop()
        manager, browsers = self._manager, self._browsers
        self._wake_streams()
        logger.info("Draining for maintenance: what still runs in %.0f s ends then", deadline - loop.time())
        try:
            manager.draining = True
            await asyncio.gather(_end_resting(manager), browsers.begin_drain())
            left = [*_tasks(manager), *browsers.live_tasks()]
            if left and deadline > loop.time():
                await asyncio.wait(left, timeout=deadline - loop.time())
                # what ran when the drain began was promised endsAt: the server stays until then
                await asyncio.sleep(max(0.0, deadline - loop.time()))
            workers = manager.workers()
            await asyncio.gather(
                *(worker.end_for_maintenance() for worker in workers), browsers.aclose(), return_exceptions=True
            )
        except Exception:
            logger.exception("The maintenance drain failed; the shutdown ends what is left")
        logger.info("Maintenance drain finished")


async def _end_resting(manager: SessionManager) -> None:
    """Parked sessions go cold (idle, resumable) and queued runs stop (re-queued at the next start), first."""
    ending: list[asyncio.Future[Any]] = []
    for worker in manager.workers():
        if worker.phase in {"waiting", "queued"}:
            ending.append(asyncio.ensure_future(worker.stop(StopReason.SHUTDOWN)))
        elif worker.release_for_maintenance() and worker.task is not None:
            ending.append(worker.task)
    if ending:
        await asyncio.wait(ending)


def _tasks(manager: SessionManager) -> list[asyncio.Task[None]]:
    return [worker.task for worker in manager.workers() if worker.task is not None]
