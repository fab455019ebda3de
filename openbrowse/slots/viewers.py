"""LiveViewers: who watches a slot's live view, and stopping the VNC side once nobody does (spec §4.10).

x11vnc and websockify cost about 45 MiB per slot (issue 11), so they run only while someone watches: the first
viewer starts them (the slot's ``ensure_vnc``), and ``grace`` seconds after the last one left an owned task
calls ``stop_if_idle``. A viewer arriving in between cancels that task, so the same processes keep serving.

Tickets carry a generation that :meth:`LiveViewers.reset` (the slot's teardown) bumps: a viewer of an earlier
run whose bridge ends late never counts against the viewers of the run that took the slot next.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

__all__ = ["VNC_IDLE_GRACE", "LiveViewers"]

VNC_IDLE_GRACE = 10.0  # seconds between the last viewer leaving and x11vnc/websockify stopping


class LiveViewers:
    """The live viewers of one slot. ``stop_if_idle`` must re-check :attr:`count` under the slot's lock."""

    def __init__(self, name: str, stop_if_idle: Callable[[], Awaitable[None]], grace: float = VNC_IDLE_GRACE) -> None:
        self.name = name
        self.grace = grace
        self._stop_if_idle = stop_if_idle
        self._count = 0
        self._generation = 0
        self._reaper: asyncio.Task[None] | None = None

    @property
    def count(self) -> int:
        return self._count

    @property
    def stop_pending(self) -> bool:
        """True while the VNC side is due to stop because its last viewer left."""
        reaper = self._reaper
        return reaper is not None and not reaper.done() and not reaper.cancelling()

    def arrive(self) -> int:
        """Count a viewer in; return its ticket for :meth:`leave`."""
        self._cancel_reaper()
        self._count += 1
        return self._generation

    def leave(self, ticket: int, *, running: bool) -> None:
        """Count a viewer out; after the last one of a ``running`` slot, stop the VNC side after ``grace``."""
        if ticket != self._generation or self._count == 0:
            return  # a viewer of a run that has ended since; that run's teardown stopped everything
        self._count -= 1
        if self._count == 0 and running:
            self._cancel_reaper()
            self._reaper = asyncio.get_running_loop().create_task(self._reap(ticket), name=f"{self.name}-vnc-idle")

    async def reset(self) -> None:
        """A new generation with no viewers (the slot is being torn down); the pending stop is cancelled."""
        self._generation += 1
        self._count = 0
        reaper, self._reaper = self._reaper, None
        if reaper is not None:
            reaper.cancel()
            await asyncio.gather(reaper, return_exceptions=True)

    def _cancel_reaper(self) -> None:
        if self._reaper is not None and not self._reaper.done():
            self._reaper.cancel()

    async def _reap(self, ticket: int) -> None:
        await asyncio.sleep(self.grace)
        if self._count == 0 and ticket == self._generation:
            await self._stop_if_idle()
