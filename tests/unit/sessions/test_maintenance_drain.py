"""The maintenance drain's clock (spec §21.6) on a virtual clock: the loop's time jumps to its next timer, so each
moment is checked exactly, without waiting through a real grace. The end-to-end tests (``test_maintenance*.py``)
send a real SIGTERM and check the same promises from below only (never before ``endsAt``).

* what still runs at the start is left alone until ``endsAt`` and ended for maintenance then, not before;
* a run that finishes by itself before ``endsAt`` is not ended, yet the drain (so the server) lasts until ``endsAt``;
* parked and queued sessions rest at once; a server with nothing running drains at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

import pytest

from openbrowse.sessions.maintenance import Maintenance, MaintenanceDrain

if TYPE_CHECKING:
    from openbrowse.sessions.browsers import BrowserService
    from openbrowse.sessions.manager import SessionManager

pytestmark = pytest.mark.virtual_time

GRACE_S = 20.0


def now() -> float:
    return asyncio.get_running_loop().time()


class Worker:
    """A session's worker as the drain sees it: a run that goes on until told to end, or ends by itself."""

    def __init__(self, phase: str, *, finishes_at: float | None = None) -> None:
        self.phase = phase
        self.stopped_at: float | None = None
        self.ended_for_maintenance_at: float | None = None
        self._end = asyncio.Event()
        self.task: asyncio.Task[None] | None = (
            asyncio.get_running_loop().create_task(self._run(finishes_at)) if phase == "running" else None
        )

    async def _run(self, finishes_at: float | None) -> None:
        if finishes_at is None:
            await self._end.wait()
        else:
            await asyncio.sleep(finishes_at - now())

    async def stop(self, reason: object) -> bool:
        self.stopped_at = now()
        return True

    def release_for_maintenance(self) -> bool:
        return False

    async def end_for_maintenance(self) -> None:
        if self.task is None or self.task.done():
            return
        self.ended_for_maintenance_at = now()
        self._end.set()
        await self.task


class Manager:
    def __init__(self, *workers: Worker) -> None:
        self.draining = False
        self._workers = list(workers)

    def workers(self) -> list[Worker]:
        return self._workers


class Browsers:
    def __init__(self) -> None:
        self.closed_at: float | None = None

    async def begin_drain(self) -> None:
        return None

    def live_tasks(self) -> list[asyncio.Task[None]]:
        return []

    async def aclose(self) -> None:
        self.closed_at = now()


async def drained_at(manager: Manager, browsers: Browsers) -> float:
    """Begin the drain at the loop's time 0 and return when it reported back as finished."""
    maintenance = Maintenance(GRACE_S)
    finished = asyncio.Event()
    drain = MaintenanceDrain(
        maintenance, cast("SessionManager", manager), cast("BrowserService", browsers), wake_streams=lambda: None
    )
    async with drain:
        maintenance.begin(finished.set)
        assert maintenance.deadline == now() + GRACE_S
        await finished.wait()
    assert manager.draining
    return now()


async def test_a_run_still_going_is_left_alone_until_ends_at_and_ended_for_maintenance_then() -> None:
    running = Worker("running")
    browsers = Browsers()
    assert await drained_at(Manager(running), browsers) == GRACE_S
    assert running.ended_for_maintenance_at == GRACE_S
    assert browsers.closed_at == GRACE_S


async def test_a_run_that_finishes_before_ends_at_is_not_ended_and_the_drain_still_lasts_until_ends_at() -> None:
    finishing = Worker("running", finishes_at=GRACE_S / 4)
    assert await drained_at(Manager(finishing), Browsers()) == GRACE_S
    assert finishing.ended_for_maintenance_at is None
    assert finishing.task is not None and finishing.task.done()


async def test_parked_and_queued_sessions_rest_at_once_and_an_idle_server_drains_at_once() -> None:
    parked, queued = Worker("waiting"), Worker("queued")
    assert await drained_at(Manager(parked, queued), Browsers()) == 0
    assert parked.stopped_at == 0 and queued.stopped_at == 0
