"""An in-process SessionManager over real SQLite, with a scripted engine and slot pool in place of the browser.

The engine stands in for browser + agent only; the manager, the workers, the state machine and the store are the
real ones. Every engine and pool method yields to the event loop, so a stop landing "at the N-th await" of a run
can hit every stage of its life: queued, launching, mid-turn, finishing, parked, closing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from openbrowse.domain.runs import NOTHING_KEPT, Salvage, TurnEnding, TurnOutcome
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import ProcessDied
from openbrowse.sessions.manager import SessionManager

YIELDS_PER_STAGE = 3


async def _yield(times: int = YIELDS_PER_STAGE) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


class FakeLease:
    """Implements the worker's SlotLease: park/unpark bookkeeping, eviction through the release callback."""

    def __init__(self, owner: str) -> None:
        self.owner = owner
        self.parked = False
        self.evicting = False
        self._callback: Callable[[], Awaitable[None]] | None = None

    def park(self, release_callback: Callable[[], Awaitable[None]]) -> None:
        self.parked, self._callback = True, release_callback

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
        return asyncio.get_running_loop().create_task(callback())


class FakePool:
    """FIFO slots with a capacity; records who holds one so a test can prove nothing is left held."""

    def __init__(self, capacity: int = 2) -> None:
        self._free = asyncio.Semaphore(capacity)
        self.leases: dict[str, FakeLease] = {}

    @asynccontextmanager
    async def _acquire(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None) -> AsyncIterator[FakeLease]:
        if self._free.locked() and on_wait is not None:
            await on_wait(0)
        async with self._free:
            await _yield()
            lease = self.leases[owner] = FakeLease(owner)
            try:
                yield lease
            finally:
                del self.leases[owner]

    def acquire(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None = None) -> Any:
        return self._acquire(owner, on_wait)


@dataclass
class Script:
    """What the engines of one session answer: one output per turn (the last one repeats)."""

    outputs: list[str] = field(default_factory=lambda: ["42.00 EUR"])
    turn_yields: int = 6


class FakeEngine:
    """Implements the worker's Engine: yields between stages, answers from its script, can be made to die."""

    def __init__(self, record: SessionRecord, script: Script, registry: Engines) -> None:
        self.record = record
        self._script = script
        self._turns = 0
        self._died = asyncio.Event()
        self.closed = False
        self.launched = False
        registry.live.add(self)
        self._registry = registry

    async def launch(self, lease: Any, task: str) -> None:
        await _yield()
        self.launched = True

    async def wait_died(self) -> BaseException:
        await self._died.wait()
        return ProcessDied("Chromium", -9)

    def die(self) -> None:
        self._died.set()

    async def run_turn(self, task: str) -> TurnOutcome:
        await _yield(self._script.turn_yields)
        outputs = self._script.outputs
        output = outputs[min(self._turns, len(outputs) - 1)]
        self._turns += 1
        return TurnOutcome(TurnEnding.FINISHED, f"Done: {output}", output=output, is_task_successful=True)

    async def salvage(self) -> Salvage:
        await _yield(1)
        return NOTHING_KEPT

    def live_slot(self) -> None:
        return None

    async def close(self) -> None:
        await _yield()
        self.closed = True
        self._registry.live.discard(self)


class Engines:
    """The engine factory; ``live`` holds engines not yet closed (a leaked browser would stay here)."""

    def __init__(self) -> None:
        self.live: set[FakeEngine] = set()
        self.scripts: dict[str, Script] = {}
        self.by_session: dict[str, FakeEngine] = {}

    async def make(self, record: SessionRecord) -> FakeEngine:
        await _yield(1)
        engine = FakeEngine(record, self.scripts.get(record.id, Script()), self)
        self.by_session[record.id] = engine
        return engine


async def settle(manager: SessionManager, rounds: int = 200) -> None:
    """Wait until no worker is left between stages (every run parked, resting or gone)."""
    for _ in range(rounds):
        workers = manager.workers()
        if all(w.phase == "parked" for w in workers):
            return
        await asyncio.wait({w.task for w in workers if w.task is not None and w.phase != "parked"}, timeout=5)
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
