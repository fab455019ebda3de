"""SlotLease: one holder's exclusive use of a display slot of the :class:`~openbrowse.slots.pool.SlotPool`.

The holder starts the slot's browser through the lease, parks it (keep-alive: evictable by a queued caller)
and releases it; releasing tears the slot's processes down before the pool hands the slot on. The pool keeps
the queue and decides evictions; the lease is the holder's side of it. The two meet only through public methods:
the lease sees its pool as a :class:`LeaseHost`, and the pool drives a lease's eviction and shutdown through
:meth:`SlotLease.begin_eviction`, :meth:`SlotLease.end_eviction` and :meth:`SlotLease.abandon`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from types import TracebackType

    from openbrowse.slots.slot import Slot
    from openbrowse.slots.spares import Spare

__all__ = ["LeaseHost", "ReleaseCallback", "SlotLease"]

logger = logging.getLogger(__name__)

ReleaseCallback = Callable[[], Awaitable[None]]


class LeaseHost(Protocol):
    """The pool as its leases see it (:class:`~openbrowse.slots.pool.SlotPool` implements it)."""

    def check_open(self) -> None:
        """Raise :class:`~openbrowse.errors.BrowserUnavailable` unless the pool is running."""

    async def adopt_spare(self, spare: Spare, window_size: tuple[int, int] | None) -> bool:
        """True when the warm spare's browser can be used as it is; False when it was stopped for a cold start."""

    def holder_parked(self) -> None:
        """A holder became evictable: evict it at once if callers are queued."""

    def slot_returned(self, lease: SlotLease) -> None:
        """The lease's slot is torn down: hand it to the next waiter or back to the free set."""


class SlotLease:
    """Exclusive use of one slot until :meth:`release`. Also an async context manager that releases on exit."""

    def __init__(self, host: LeaseHost, index: int, slot: Slot, owner: str, *, spare: Spare | None = None) -> None:
        self._host = host
        self.index = index
        """The slot's place in its pool (``slot.index`` is the absolute display number offset)."""
        self.owner = owner
        self.slot = slot
        self.parked_since: float | None = None
        self._release_callback: ReleaseCallback | None = None
        self._evicting = False
        self._eviction_failed = False
        self._releasing = False
        self.released = asyncio.Event()
        self.spare = spare
        self.warm = False
        self._starting = asyncio.Lock()  # two concurrent starts must not both decide about the spare

    @property
    def parked(self) -> bool:
        return self.parked_since is not None

    @property
    def active(self) -> bool:
        """Not released (nor being released)."""
        return not self._releasing

    @property
    def evicting(self) -> bool:
        return self._evicting

    @property
    def evictable(self) -> bool:
        """Parked, and not already being evicted, released, or past a failed eviction (asked once, never again)."""
        return self.parked and not self._evicting and not self._releasing and not self._eviction_failed

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
        self._host.check_open()
        async with self._starting:
            spare, self.spare = self.spare, None
            if spare is not None:
                self.warm = await self._host.adopt_spare(spare, window_size)
            await self.slot.start(vnc=vnc, window_size=window_size)
        return self.slot

    def park(self, release_callback: ReleaseCallback) -> None:
        """Mark this holder idle and evictable; ``release_callback`` must end up releasing the lease."""
        self._check_active()
        self.parked_since = asyncio.get_running_loop().time()
        self._release_callback = release_callback
        self._eviction_failed = False
        self._host.holder_parked()

    def unpark(self) -> bool:
        """Mark this holder busy again. False if an eviction has already begun (the holder is being released)."""
        if self._evicting or self._releasing:
            return False
        self.parked_since = None
        self._release_callback = None
        return True

    # -- the pool's side --------------------------------------------------------------------------------------
    def begin_eviction(self) -> ReleaseCallback | None:
        """Mark this parked holder as being evicted; return the callback that asks it to release."""
        self._evicting = True
        return self._release_callback

    def end_eviction(self, *, failed: bool) -> None:
        """The eviction is over; a holder that failed to release is not asked again until it parks anew."""
        self._evicting = False
        if failed:
            self._eviction_failed = True

    def abandon(self) -> None:
        """The pool closed: the lease ends without a stop of its own (the pool stops every slot)."""
        self._releasing = True
        self.released.set()

    # -- releasing ----------------------------------------------------------------------------------------------
    async def release(self) -> None:
        """Stop the slot's processes and hand the slot to the next waiter (shielded; idempotent)."""
        await run_shielded(self._release())

    async def _release(self) -> None:
        if self._releasing:
            await self.released.wait()
            return
        self._releasing = True
        self.parked_since = None
        try:
            await self.slot.stop()
        finally:
            self.slot.confinement.use_route(None)  # the next holder starts without this one's proxy
            self._host.slot_returned(self)
            self.released.set()
            logger.info("Slot %d released by %s", self.slot.index, self.owner)

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
