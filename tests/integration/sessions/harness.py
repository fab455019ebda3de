"""An in-process SessionManager over real SQLite, with a scripted engine and slot pool in place of the browser.

The engine stands in for browser + agent only; the manager, the workers, the state machine and the store are the
real ones. Every engine and pool method yields to the event loop, so a stop landing "at the N-th await" of a run
can hit every stage of its life: queued, launching, mid-turn, finishing, parked, closing.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import NOTHING_KEPT, Salvage, TurnEnding, TurnOutcome
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import ProcessDied
from openbrowse.sessions.manager import SessionManager

YIELDS_PER_STAGE = 3


async def _yield(times: int = YIELDS_PER_STAGE) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


_PARK_ORDER = itertools.count()


class AnyRunStarts:
    """A :class:`~openbrowse.sessions.policy.RunPolicy` that lets every run start; live URLs name the session."""

    def never_started_problem(self, record: SessionRecord) -> str | None:
        return None

    def live_url(self, session_id: SessionId) -> str:
        return f"http://live/{session_id}"


class FakeLease:
    """Implements the worker's SlotLease: park/unpark bookkeeping, eviction through the release callback."""

    def __init__(self, owner: str, pool: FakePool) -> None:
        self.owner = owner
        self._pool = pool
        self.parked = False
        self.parked_at = 0
        self.evicting = False
        self._callback: Callable[[], Awaitable[None]] | None = None

    async def start_browser(self) -> Any:
        """The slot's browser: the fake engine never looks at it."""
        await _yield()
        return self

    def park(self, release_callback: Callable[[], Awaitable[None]]) -> None:
        self.parked, self._callback = True, release_callback
        self.parked_at = next(_PARK_ORDER)
        self._pool.maybe_evict()

    def unpark(self) -> bool:
        if self.evicting:
            return False
        self.parked, self._callback = False, None
        return True

    def begin_eviction(self) -> asyncio.Task[None]:
        """What the pool does to the longest-parked holder when a newcomer needs its slot: mark it, then ask it
        (in a task of its own) to release."""
        callback = self._callback
        assert self.parked and callback is not None, "only a parked lease can be evicted"
        self.evicting = True

        async def release() -> None:
            await callback()

        return asyncio.get_running_loop().create_task(release())


class FakePool:
    """FIFO slots with a capacity; a newcomer evicts the longest-parked holder, as the real pool does (spec
    §7.3); records who holds a slot so a test can prove nothing is left held."""

    def __init__(self, capacity: int = 2) -> None:
        self._free = asyncio.Semaphore(capacity)
        self.leases: dict[str, FakeLease] = {}
        self.evictions: set[asyncio.Task[None]] = set()
        self._waiting = 0

    @asynccontextmanager
    async def _acquire(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None) -> AsyncIterator[FakeLease]:
        self._waiting += 1
        try:
            if self._free.locked():
                self.maybe_evict()
                if on_wait is not None:
                    await on_wait(0)
            await self._free.acquire()
        finally:
            self._waiting -= 1
        try:
            await _yield()
            lease = self.leases[owner] = FakeLease(owner, self)
            try:
                yield lease
            finally:
                del self.leases[owner]
        finally:
            self._free.release()

    def evict(self, owner: str) -> None:
        """Begin evicting ``owner``'s slot if it is parked (what a newcomer would trigger)."""
        lease = self.leases.get(owner)
        if lease is not None and lease.parked and not lease.evicting:
            self._track(lease.begin_eviction())

    def _track(self, eviction: asyncio.Task[None]) -> None:
        self.evictions.add(eviction)
        eviction.add_done_callback(self.evictions.discard)

    def maybe_evict(self) -> None:
        if self._waiting <= len(self.evictions) or not self._free.locked():
            return
        parked = [lease for lease in self.leases.values() if lease.parked and not lease.evicting]
        if parked:
            self._track(min(parked, key=lambda lease: lease.parked_at).begin_eviction())

    def acquire(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None = None) -> Any:
        return self._acquire(owner, on_wait)


@dataclass
class Script:
    """What the engines of one session answer: one output per turn (the last one repeats), ending as ``ending``;
    a ``blocking`` turn never ends by itself (a stop, a timeout or a death ends it)."""

    outputs: list[str] = field(default_factory=lambda: ["42.00 EUR"])
    turn_yields: int = 6
    ending: TurnEnding = TurnEnding.FINISHED
    blocking: bool = False


class FakeEngine:
    """Implements the worker's Engine: yields between stages, answers from its script, can be made to die.

    It has a profile, saved once (by ``save_profile`` or else by ``close``, as the real engine does); while
    ``Engines.save_gate`` is closed a save waits there, with ``saving`` set.
    """

    def __init__(self, record: SessionRecord, script: Script, registry: Engines) -> None:
        self.record = record
        self._script = script
        self._turns = 0
        self._died = asyncio.Event()
        self.closed = False
        self.launched = False
        self.saving = asyncio.Event()
        self.profile_saved = False
        registry.live.add(self)
        self._registry = registry

    async def launch(self, browser: Awaitable[Any], task: str) -> None:
        await browser
        await _yield()
        self.launched = True

    async def wait_died(self) -> BaseException:
        await self._died.wait()
        return ProcessDied("Chromium", -9)

    def die(self) -> None:
        self._died.set()

    async def run_turn(self, task: str) -> TurnOutcome:
        await _yield(self._script.turn_yields)
        if self._script.blocking:
            await asyncio.Event().wait()
        outputs = self._script.outputs
        output = outputs[min(self._turns, len(outputs) - 1)]
        self._turns += 1
        return TurnOutcome(self._script.ending, f"Done: {output}", output=output, is_task_successful=True)

    async def salvage(self) -> Salvage:
        await _yield(1)
        return NOTHING_KEPT

    def live_slot(self) -> None:
        return None

    async def save_profile(self) -> None:
        if self.profile_saved:
            return
        self.saving.set()
        gate = self._registry.save_gate
        if gate is not None:
            await gate.wait()
        await _yield()
        self.profile_saved = True

    async def close(self) -> None:
        await asyncio.shield(self.save_profile())
        await _yield()
        self.closed = True
        self._registry.live.discard(self)

    on_human_needed: Callable[[str], Awaitable[None]] | None = None

    async def pause(self) -> None:
        await _yield()

    async def wait_paused(self) -> None:
        await _yield()

    async def resume(self, note: str) -> None:
        await _yield()


class Engines:
    """The engine factory; ``live`` holds engines not yet closed (a leaked browser would stay here)."""

    def __init__(self) -> None:
        self.live: set[FakeEngine] = set()
        self.scripts: dict[str, Script] = {}
        self.by_session: dict[str, FakeEngine] = {}
        self.save_gate: asyncio.Event | None = None

    async def make(self, record: SessionRecord) -> FakeEngine:
        await _yield(1)
        engine = FakeEngine(record, self.scripts.get(record.id, Script()), self)
        self.by_session[record.id] = engine
        return engine


async def settle(manager: SessionManager, rounds: int = 20000) -> None:
    """Wait until every run is parked with nothing pending, or gone.

    A worker can park a moment before it notices something that already happened (a browser that died during
    the turn is seen by the parked wait a few loop turns later), so the state must also survive a few rounds of
    pending wake-ups before it counts as settled."""
    seen = 0
    for _ in range(rounds):
        if all(w.phase == "parked" and w.awaiting_follow_up for w in manager.workers()):
            seen += 1
            if seen == 3:
                return
            for _ in range(20):
                await asyncio.sleep(0)
            continue
        seen = 0
        await asyncio.sleep(0.001)
    raise AssertionError(f"workers never settled: {[(w.session_id, w.phase) for w in manager.workers()]}")


async def wait_for_status(
    manager: SessionManager, session_id: str, statuses: set[SessionStatus], rounds: int = 2000
) -> SessionRecord:
    for _ in range(rounds):
        record = await manager.get(session_id)
        if record.status in statuses and not record.is_queued:
            return record
        await asyncio.sleep(0.005)
    raise AssertionError(f"{session_id} stayed {record.status}, wanted {statuses}")


async def orphans(manager: SessionManager) -> list[SessionRecord]:
    """Sessions that say a run is going on (running, or queued) while no worker exists for them."""
    busy = await manager.sessions.with_status(SessionStatus.RUNNING, SessionStatus.CREATED)
    return [r for r in busy if (r.status is SessionStatus.RUNNING or r.is_queued) and manager.worker(r.id) is None]
