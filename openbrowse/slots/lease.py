"""SlotLease: one holder's exclusive use of a display slot of the :class:`~openbrowse.slots.pool.SlotPool`.

The holder starts the slot's browser through the lease, parks it (keep-alive: evictable by a queued caller)
and releases it; releasing tears the slot's processes down before the pool hands the slot on. The pool keeps
the queue and decides evictions; the lease is the holder's side of it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from openbrowse.shielding import run_shielded
from openbrowse.slots.slot import Slot
from openbrowse.slots.spares import Spare

if TYPE_CHECKING:
    from types import TracebackType

    from openbrowse.slots.pool import SlotPool

__all__ = ["LeaseScope", "OnWait", "ReleaseCallback", "SlotLease"]

OnWait = Callable[[int], Awaitable[None]]
ReleaseCallback = Callable[[], Awaitable[None]]


class SlotLease:
    """Exclusive use of one slot until :meth:`release`. Also an async context manager that releases on exit."""

    def __init__(self, pool: SlotPool, index: int, owner: str) -> None:
        self._pool = pool
        self.index = index
        self.owner = owner
        self.slot: Slot = pool.slots[index]
        self.parked_since: float | None = None
        self._release_callback: ReleaseCallback | None = None
        self.evicting = False
        self._eviction_failed = False
        self._releasing = False
        self.released = asyncio.Event()
        self.spare: Spare | None = None
        self.warm = False
        self._starting = asyncio.Lock()  # two concurrent starts must not both decide about the spare

    @property
    def parked(self) -> bool:
        return self.parked_since is not None

    @property
    def active(self) -> bool:
        return not self._releasing

    def _check_active(self) -> None:
        if self._releasing:
            raise RuntimeError(f"the lease of slot {self.slot.index} held by {self.owner} was released")

    async def start_browser(self, *, vnc: bool = False, window_size: tuple[int, int] | None = None) -> Slot:
        """Start the slot's processes (idempotent; rebuilds a slot whose Xvfb or Chromium died); return it.

        Xvfb and Chromium only by default: the live view (x11vnc, websockify) starts with its first viewer
        (:meth:`Slot.add_viewer`) and stops after the last one left. A lease granted a warm spare gets its
        browser as it is if the spare passes its probe (:attr:`warm` becomes True), else a cold start.
        """
        self._check_active()
        self._pool._check_open()
        async with self._starting:
            spare, self.spare = self.spare, None
            if spare is not None:
                self.warm = await self._pool._spares.adopt(spare, window_size)
            await self.slot.start(vnc=vnc, window_size=window_size)
        return self.slot

    def park(self, release_callback: ReleaseCallback) -> None:
        """Mark this holder idle and evictable; ``release_callback`` must end up releasing the lease."""
        self._check_active()
        self.parked_since = asyncio.get_running_loop().time()
        self._release_callback = release_callback
        self._eviction_failed = False
        self._pool._maybe_evict()

    def unpark(self) -> bool:
        """Mark this holder busy again. False if an eviction has already begun (the holder is being released)."""
        if self.evicting or self._releasing:
            return False
        self.parked_since = None
        self._release_callback = None
        return True

    async def release(self) -> None:
        """Stop the slot's processes and hand the slot to the next waiter (shielded; idempotent)."""
        await run_shielded(self._pool._release(self))

    async def __aenter__(self) -> SlotLease:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        state = "released" if self._releasing else "parked" if self.parked else "busy"
        return f"<SlotLease slot={self.slot.index} owner={self.owner!r} {state}>"


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
