"""Warm spares: slots started ahead of demand (Xvfb + Chromium, fresh user-data dir, no live view), so a new
session or raw browser gets a running browser at once instead of waiting ~0.3-0.5 s for a cold start.

The :class:`SpareKeeper` belongs to the :class:`~openbrowse.slots.pool.SlotPool`, which decides when a spare may
be started (``PREWARM_SLOTS`` wanted, a free slot index and nobody queued) and hands one out in ``lease``. Rules:

* A spare is nobody's: not a session, not leased, not counted. Nothing but its own start ever touched it.
* A spare is handed over at most once and never returns: a released slot is torn down and wiped as always, and
  the pool starts a NEW spare on a free index. So one session's cookies, storage or history can never reach
  another through a spare.
* A spare still starting when a caller arrives is handed over anyway; the caller waits for that start to finish
  (it began earlier, so it ends sooner than a cold start begun now, and two starts would share the 2 CPUs).
* Before the hand-over the browser is probed: the slot's processes alive, CDP ``/json/version`` answering, exactly
  one page target and it is ``about:blank``, the window of the requested size. Anything else: the spare is stopped
  and the caller gets a cold start on the same slot.
* A started spare is ``warming`` until its processes settle (Chromium's own start-up work goes on for about a
  second after CDP answers, and a client arriving then pays ~0.15 s more for its first connect and page); only
  then is it ``ready``. A caller never waits for this: it takes a warming spare as it is.
* An idle spare whose Xvfb or Chromium dies is stopped and its slot given back; the keeper does not start another
  one right away (a browser that keeps crashing would otherwise restart in a loop); the next release or lease does.

Every start runs in a task the keeper owns; :meth:`SpareKeeper.aclose` cancels and awaits them (the pool then
closes every slot, which reaps the processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from openbrowse.shielding import run_shielded
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.settle import settle

if TYPE_CHECKING:
    from openbrowse.slots.slot import Slot

__all__ = ["Spare", "SpareKeeper", "SpareState"]

logger = logging.getLogger(__name__)

SPARE_WINDOW = (SCREEN_WIDTH, SCREEN_HEIGHT)
PROBE_TIMEOUT = 2.0


class SpareState(StrEnum):
    STARTING = "starting"
    WARMING = "warming"
    READY = "ready"
    DEAD = "dead"


@dataclass(eq=False)
class Spare:
    """One pre-started slot (``index`` is the pool-local index)."""

    index: int
    slot: Slot
    started: asyncio.Event = field(default_factory=asyncio.Event)
    settled: asyncio.Event = field(default_factory=asyncio.Event)
    handed: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    ok: bool = False

    @property
    def state(self) -> SpareState:
        if not self.started.is_set():
            return SpareState.STARTING
        if not (self.ok and self.slot.running):
            return SpareState.DEAD
        return SpareState.READY if self.settled.is_set() else SpareState.WARMING


class SpareKeeper:
    """Starts, watches and hands out the pool's spares. Not thread-safe; lives on the pool's event loop."""

    def __init__(
        self,
        slots: list[Slot],
        wanted: int,
        *,
        take_index: Callable[[], int | None],
        give_back: Callable[[int], None],
    ) -> None:
        if wanted < 0:
            raise ValueError("the number of spares cannot be negative")
        self.wanted = wanted
        self._slots = slots
        self._take_index = take_index
        self._give_back = give_back
        self._spares: dict[int, Spare] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def spares(self) -> list[Spare]:
        """The spares not handed out yet (starting, ready, or dead and about to be stopped)."""
        return list(self._spares.values())

    def replenish(self) -> None:
        """Start spares on free slots until ``wanted`` exist or no slot is free. The pool calls this only when
        nobody is queued."""
        while not self._closed and len(self._spares) < self.wanted:
            index = self._take_index()
            if index is None:
                return
            spare = Spare(index, self._slots[index])
            self._spares[index] = spare
            task = asyncio.get_running_loop().create_task(self._keep(spare), name=f"spare-slot-{spare.slot.index}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def take(self) -> Spare | None:
        """Remove a spare for a caller (ready, else starting, else dead); the caller must :meth:`adopt` it."""
        if not self._spares:
            return None
        preference = (SpareState.READY, SpareState.WARMING, SpareState.STARTING, SpareState.DEAD)
        choice = min(self._spares.values(), key=lambda spare: preference.index(spare.state))
        del self._spares[choice.index]
        choice.handed.set_result(None)
        logger.info("Handing spare slot %d over (%s)", choice.slot.index, choice.state)
        return choice

    async def adopt(self, spare: Spare, window_size: tuple[int, int] | None) -> bool:
        """Wait for the spare's start and check it. True: its browser is the caller's as it is. False: it was
        stopped (dead, suspicious or the wrong window size) and the caller starts the slot cold."""
        await spare.started.wait()
        problem = await self._problem(spare, window_size)
        if problem is None:
            return True
        logger.warning("Spare slot %d not handed over (%s); starting it cold", spare.slot.index, problem)
        await spare.slot.stop()
        return False

    async def aclose(self) -> None:
        """Cancel the starts and watches (shielded; idempotent). The pool closes the slots afterwards."""
        self._closed = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await run_shielded(_gather(tasks))
        self._spares.clear()

    # -- internals ------------------------------------------------------------------------------------------
    async def _keep(self, spare: Spare) -> None:
        slot = spare.slot
        try:
            await slot.start(vnc=False, window_size=SPARE_WINDOW)
            spare.ok = True
        except Exception:
            logger.exception("Starting spare slot %d failed", slot.index)
        finally:
            spare.started.set()
        if spare.handed.done():
            return
        if spare.ok:
            settling = asyncio.ensure_future(settle([process.pid for process in slot.processes()]))
            await asyncio.wait((settling, spare.handed), return_when=asyncio.FIRST_COMPLETED)
            if spare.handed.done():
                settling.cancel()
                return
            spare.settled.set()
            logger.info("Spare slot %d is ready", slot.index)
            died = slot.died
            await asyncio.wait((died, spare.handed), return_when=asyncio.FIRST_COMPLETED)
            if spare.handed.done():
                died.cancel()
                return
            logger.warning("Spare slot %d died while idle (%s); stopping it", slot.index, died.result())
        # Still listed while it stops: a caller arriving now takes it, finds it dead and starts the slot cold.
        await slot.stop()
        if spare.handed.done() or self._closed:
            return
        del self._spares[spare.index]
        self._give_back(spare.index)

    async def _problem(self, spare: Spare, window_size: tuple[int, int] | None) -> str | None:
        slot = spare.slot
        if not spare.ok:
            return "its start failed"
        if not slot.running:
            return "its Xvfb or Chromium exited"
        if window_size is not None and tuple(window_size) != SPARE_WINDOW:
            return f"window {window_size[0]}x{window_size[1]} asked for"
        try:
            network = slot.network  # Chromium itself, inside the sandbox; not the host-side gate
            status, _ = await loopback_http_json(slot.cdp_port, "/json/version", within=PROBE_TIMEOUT, network=network)
            if status != 200:
                return f"CDP /json/version answered {status}"
            status, targets = await loopback_http_json(
                slot.cdp_port, "/json/list", within=PROBE_TIMEOUT, network=network
            )
        except (OSError, ValueError, TimeoutError) as exc:
            return f"CDP does not answer: {exc!r}"
        pages = [t for t in targets if isinstance(t, dict) and t.get("type") == "page"] if status == 200 else []
        if len(pages) != 1 or pages[0].get("url") != "about:blank":
            urls = [page.get("url") for page in pages]
            return f"expected one about:blank tab, found {urls}"
        return None


async def _gather(tasks: list[asyncio.Task[None]]) -> None:
    with contextlib.suppress(Exception):
        await asyncio.gather(*tasks, return_exceptions=True)
