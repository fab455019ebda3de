"""SlotPool: ``MAX_CONCURRENT_SESSIONS`` display slots, handed out first come first served (spec §7).

* :meth:`SlotPool.acquire` (``async with``) or :meth:`SlotPool.lease` waits for the **lowest free** slot.
  Waiters are served strictly in arrival order from an explicit FIFO queue; a newcomer never overtakes a
  queued waiter even if a slot happens to be free at that instant. ``on_wait(n_ahead)`` is awaited once if the
  caller has to queue. Cancelling a waiter leaks nothing (a slot granted at the same moment is passed on).
* The lease (:mod:`openbrowse.slots.lease`) does not start processes by itself: the holder calls
  :meth:`SlotLease.start_browser` (so it can report "starting browser" separately from "waiting for a slot",
  choose the live view and window size, and restart a slot whose browser died). Releasing the lease tears all
  of the slot's processes down before the slot is handed on, so every run gets a fresh Chromium and a fresh
  user-data dir.
* Keep-alive eviction: a holder marks itself parked with :meth:`SlotLease.park` and an async release
  callback. When a caller has to queue, the pool asks the **longest-parked** holder to release (calls its
  callback in a pool-owned task) and waits up to ``eviction_timeout`` (30 s) for that slot to come back; the
  head of the queue then gets it. Only parked holders are ever evicted. A holder that parks while callers are
  queued is evicted at once.
* Entering the pool takes the run-dir lock and cleans up whatever a previous process of this instance left
  (see :mod:`openbrowse.slots.ledger`); closing it stops every slot.
* Warm spares (``spares``, the app passes ``PREWARM_SLOTS``): while a slot is free and nobody is queued, the
  pool keeps that many slots pre-started with nobody's browser in them and hands one to the next caller instead of
  a free slot; a spare is used once and never comes back (see :mod:`openbrowse.slots.spares`). A spare is neither
  busy nor free in :meth:`SlotPool.stats`; a caller that would queue never finds one, as a spare is handed out
  before anyone queues.
* A slot whose display or port another program holds (a developer's Chrome on 9222) is skipped, logged and
  listed in :attr:`SlotPool.blocked`, never killed; it is checked again whenever a caller needs a slot. When
  every free slot is blocked and none is in use, :meth:`SlotPool.lease` fails with the reasons.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openbrowse.errors import BrowserUnavailable
from openbrowse.shielding import run_shielded
from openbrowse.slots.foreign import describe_blockers, find_blockers
from openbrowse.slots.lease import ReleaseCallback, SlotLease
from openbrowse.slots.ledger import Ledger, cleanup_leftovers
from openbrowse.slots.seam import seam_dir
from openbrowse.slots.slot import Slot
from openbrowse.slots.slot_files import release_slot_mounts, remove_scratch_dirs
from openbrowse.slots.spares import Spare, SpareKeeper
from openbrowse.slots.vnc_access import vnc_socket_dir

if TYPE_CHECKING:
    from types import TracebackType

    from openbrowse.config import Settings
    from openbrowse.slots.ledger import CleanupReport

__all__ = ["LeaseScope", "OnWait", "PoolStats", "ReleaseCallback", "SlotLease", "SlotPool"]

logger = logging.getLogger(__name__)

EVICTION_TIMEOUT = 30.0

OnWait = Callable[[int], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class PoolStats:
    size: int
    busy: int
    parked: int
    free: int
    queued: int
    spares: int = 0


@dataclass(eq=False)
class _Waiter:
    owner: str
    future: asyncio.Future[int]


class SlotPool:
    """N display slots with FIFO waiting and eviction of parked holders. Use as ``async with``."""

    def __init__(
        self,
        settings: Settings,
        *,
        base_index: int = 0,
        size: int | None = None,
        eviction_timeout: float = EVICTION_TIMEOUT,
        spares: int = 0,
    ) -> None:
        self.settings = settings
        self.size = size if size is not None else settings.MAX_CONCURRENT_SESSIONS
        if self.size < 1:
            raise ValueError("a slot pool needs at least one slot")
        self.base_index = base_index
        self.eviction_timeout = eviction_timeout
        self.ledger = Ledger(settings.run_dir)
        self.slots = [Slot(settings, base_index + i, ledger=self.ledger) for i in range(self.size)]
        self._free: set[int] = set(range(self.size))
        self._leases: dict[int, SlotLease] = {}
        self._waiters: deque[_Waiter] = deque()
        self._evictions: dict[int, asyncio.Task[None]] = {}
        self._open = False
        self._closed = False
        self._blocked: dict[int, str] = {}
        self._taken: dict[int, list[str]] = {}
        self.last_cleanup: CleanupReport | None = None
        self._spares = SpareKeeper(
            self.slots, spares, take_index=self._take_free_slot, give_back=lambda index: self._slot_freed(index)
        )

    # -- lifecycle ------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Lock the run dir and clean up leftovers of a previous process of this instance."""
        if self._open or self._closed:
            raise RuntimeError("SlotPool can be started once")
        self.ledger.lock()
        try:
            await asyncio.to_thread(release_slot_mounts, self.settings.run_dir)  # before their folders are wiped
            self.last_cleanup = await asyncio.to_thread(
                cleanup_leftovers,
                self.ledger.path,
                self.settings.run_dir,
                self.settings.run_dir / "slots",
            )
            self.ledger.reset()
            await asyncio.to_thread(remove_scratch_dirs, self.settings.run_dir)
            await asyncio.to_thread(shutil.rmtree, vnc_socket_dir(self.settings.run_dir), True)
            await asyncio.to_thread(shutil.rmtree, seam_dir(self.settings.run_dir, 0).parent, True)  # root's alone
        except BaseException:
            self.ledger.unlock()
            raise
        if not self.last_cleanup.empty:
            logger.warning("Slot start-up cleanup: %s", self.last_cleanup)
        self._open = True
        problems = await asyncio.to_thread(
            lambda: {i: describe_blockers(slot.layout) for i, slot in enumerate(self.slots)}
        )
        for index, problem in problems.items():
            if problem is not None:
                self._note_blocked(index, problem)
        self._replenish()

    async def aclose(self) -> None:
        """Fail queued callers, stop eviction tasks and every slot (shielded; idempotent)."""
        await run_shielded(self._close())

    async def _close(self) -> None:
        if self._closed:
            return
        self._closed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.future.done():
                waiter.future.set_exception(BrowserUnavailable("The display slot pool is shutting down"))
        tasks = list(self._evictions.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._spares.aclose()
        for lease in list(self._leases.values()):
            lease.abandon()
        await asyncio.gather(*(slot.aclose() for slot in self.slots), return_exceptions=True)
        self._leases.clear()
        if self._open:  # a slot stopped mid-start may have left its folders: nothing of this instance stays in /run
            await asyncio.to_thread(remove_scratch_dirs, self.settings.run_dir)
            await asyncio.to_thread(shutil.rmtree, seam_dir(self.settings.run_dir, 0).parent, True)
            self.ledger.reset()
            self.ledger.unlock()

    async def __aenter__(self) -> SlotPool:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    # -- acquiring ------------------------------------------------------------------------------------------
    def acquire(self, owner: str, on_wait: OnWait | None = None) -> LeaseScope:
        """``async with pool.acquire(owner) as lease:`` — wait for a slot (FIFO), release it on exit."""
        return LeaseScope(self, owner, on_wait)

    async def lease(self, owner: str, on_wait: OnWait | None = None) -> SlotLease:
        """Wait for the lowest free slot in FIFO order; the caller must ``await lease.release()``."""
        self.check_open()
        if not self._waiters and (spare := self._spares.take()) is not None:
            lease = self._grant(spare.index, owner, spare)
            self._replenish()
            return lease
        if not self._waiters and self._free:
            index = self._take_free_slot()
            if index is not None:
                return self._grant(index, owner)
            if not self._leases:  # nobody will ever free one: every slot is held by other programs
                raise BrowserUnavailable(" ".join(self._blocked.values()))
        waiter = _Waiter(owner, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        ahead = len(self._waiters) - 1
        logger.info("%s waits for a display slot (%d ahead)", owner, ahead)
        self._maybe_evict()
        try:
            if on_wait is not None:
                await on_wait(ahead)
            index = await waiter.future
        except BaseException:
            self._abandon(waiter)
            raise
        if self._closed:
            raise BrowserUnavailable("The display slot pool is shutting down")
        return self._grant(index, owner)

    def _take_free_slot(self) -> int | None:
        """The lowest free slot no foreign program holds (taken out of the free set), or None."""
        for index in sorted(self._free):
            slot = self.slots[index]
            taken = find_blockers(slot.layout)  # cheap; the owners are named (a /proc scan) only when this changes
            if not taken:
                if self._blocked.pop(index, None) is not None:
                    self._taken.pop(index, None)
                    logger.info("Display slot %d is usable again", slot.index)
                self._free.discard(index)
                return index
            if self._taken.get(index) != taken or index not in self._blocked:
                self._taken[index] = taken
                self._note_blocked(
                    index, describe_blockers(slot.layout) or f"Display slot {slot.index} is unusable: {taken}"
                )
        return None

    def _note_blocked(self, index: int, problem: str) -> None:
        if self._blocked.get(index) != problem:
            logger.error("%s; the pool skips it", problem)
        self._blocked[index] = problem

    @property
    def blocked(self) -> dict[int, str]:
        """Slots (absolute index) that another program makes unusable, with the reason; never killed."""
        return {self.slots[index].index: problem for index, problem in self._blocked.items()}

    def _abandon(self, waiter: _Waiter) -> None:
        future = waiter.future
        if future.done() and not future.cancelled() and future.exception() is None:
            self._slot_freed(future.result())  # granted at the moment we gave up: pass it on
            self._replenish()
            return
        with contextlib.suppress(ValueError):
            self._waiters.remove(waiter)
        future.cancel()

    def _grant(self, index: int, owner: str, spare: Spare | None = None) -> SlotLease:
        lease = SlotLease(self, index, self.slots[index], owner, spare=spare)
        self._leases[index] = lease
        logger.info("Slot %d leased to %s", self.slots[index].index, owner)
        return lease

    def _slot_freed(self, index: int) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.future.done():
                waiter.future.set_result(index)
                return
        self._free.add(index)

    def _replenish(self) -> None:
        """Start spares while capacity allows: the pool is open, a slot is free and nobody is queued."""
        if self._open and not self._closed and not self._waiters:
            self._spares.replenish()

    # -- the leases' side (openbrowse.slots.lease.LeaseHost) -------------------------------------------------
    def check_open(self) -> None:
        if self._closed or not self._open:
            raise BrowserUnavailable("The display slot pool is not running")

    async def adopt_spare(self, spare: Spare, window_size: tuple[int, int] | None) -> bool:
        return await self._spares.adopt(spare, window_size)

    def holder_parked(self) -> None:
        self._maybe_evict()

    def slot_returned(self, lease: SlotLease) -> None:
        if self._leases.get(lease.index) is lease:
            del self._leases[lease.index]
            if not self._closed:
                self._slot_freed(lease.index)
                self._replenish()

    # -- eviction -------------------------------------------------------------------------------------------
    def _maybe_evict(self) -> None:
        if self._closed:
            return
        needed = len(self._waiters) - len(self._evictions)
        while needed > 0:
            candidates = [lease for lease in self._leases.values() if lease.evictable]
            if not candidates:
                return
            victim = min(candidates, key=lambda lease: lease.parked_since or 0.0)
            callback = victim.begin_eviction()
            task = asyncio.get_running_loop().create_task(
                self._evict(victim, callback), name=f"evict-slot-{victim.index}"
            )
            self._evictions[victim.index] = task
            needed -= 1

    async def _evict(self, lease: SlotLease, callback: ReleaseCallback | None) -> None:
        failed = False
        logger.info("Asking parked %s to release slot %d for a queued caller", lease.owner, lease.slot.index)
        try:
            async with asyncio.timeout(self.eviction_timeout):
                if callback is not None:
                    await callback()
                await lease.released.wait()
        except TimeoutError:
            failed = True
            logger.warning(
                "%s did not release slot %d within %.0f s", lease.owner, lease.slot.index, self.eviction_timeout
            )
        except Exception:
            failed = True
            logger.exception("Release callback of %s failed", lease.owner)
        finally:
            lease.end_eviction(failed=failed)
            self._evictions.pop(lease.index, None)
        self._maybe_evict()

    # -- introspection --------------------------------------------------------------------------------------
    def stats(self) -> PoolStats:
        parked = sum(1 for lease in self._leases.values() if lease.parked and lease.active)
        free = len(self._free)
        spares = len(self._spares.spares)
        return PoolStats(
            size=self.size,
            busy=self.size - free - parked - spares,
            parked=parked,
            free=free,
            queued=len(self._waiters),
            spares=spares,
        )

    def queue_position(self, owner: str) -> int | None:
        """``owner``'s place in the FIFO queue (1 = next), or None when it is not waiting."""
        for position, waiter in enumerate(self._waiters, start=1):
            if waiter.owner == owner:
                return position
        return None

    def idle_slots(self) -> int:
        """Slots a caller would get at once or as soon as their teardown ends: spares, usable free slots and slots
        being released (none while others queue). A raw browser's stop answers before its slot is torn down, so
        a create right after it must not be refused for that slot."""
        if self._waiters:
            return 0
        usable = sum(1 for index in self._free if index not in self._blocked)
        releasing = sum(1 for lease in self._leases.values() if not lease.active)
        return usable + len(self._spares.spares) + releasing

    @property
    def spares(self) -> list[Spare]:
        """The pre-started slots nobody holds yet (see :mod:`openbrowse.slots.spares`)."""
        return self._spares.spares

    @property
    def spares_wanted(self) -> int:
        return self._spares.wanted

    @property
    def leases(self) -> list[SlotLease]:
        return list(self._leases.values())


class LeaseScope:
    """``async with pool.acquire(owner) as lease:``: a lease for the block, released on the way out."""

    def __init__(self, pool: SlotPool, owner: str, on_wait: OnWait | None) -> None:
        self._pool = pool
        self._owner = owner
        self._on_wait = on_wait
        self._lease: SlotLease | None = None

    async def __aenter__(self) -> SlotLease:
        self._lease = await self._pool.lease(self._owner, self._on_wait)
        return self._lease

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._lease is not None:
            await self._lease.release()
