"""Warm spares in the slot pool, with real Xvfb and Chromium: handed over once, never reused, probed first."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.slots.pool import PoolStats, SlotPool
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.slot import Slot
from openbrowse.slots.spares import Spare, SpareState
from tests.support.display import needs_display

pytestmark = [pytest.mark.display, needs_display]


async def _ready_spare(pool: SlotPool, within: float = 60.0) -> Spare:
    async with asyncio.timeout(within):
        while True:
            ready = [spare for spare in pool.spares if spare.state is SpareState.READY]
            if ready:
                return ready[0]
            await asyncio.sleep(0.02)


def _chromium_pid(slot: Slot) -> int:
    processes = [p for p in slot.processes() if p.name == "Chromium"]
    assert processes and processes[0].pid is not None
    return processes[0].pid


async def _pages(slot: Slot) -> list[str]:
    status, targets = await loopback_http_json(slot.cdp_port, "/json/list", network=slot.network)
    assert status == 200
    return [t["url"] for t in targets if t.get("type") == "page"]


async def test_a_spare_is_handed_over_once_and_a_new_one_replaces_it(data_dir: Path, base_index: int) -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=2)
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        spare = await _ready_spare(pool)
        assert pool.stats() == PoolStats(size=2, busy=0, parked=0, free=1, queued=0, spares=1)
        assert not any(p.name in {"x11vnc", "websockify"} for p in spare.slot.processes())  # live view off
        spare_pid = _chromium_pid(spare.slot)

        lease = await pool.lease("first")
        slot = await lease.start_browser()
        assert lease.warm and slot is spare.slot and _chromium_pid(slot) == spare_pid
        assert await _pages(slot) == ["about:blank"]

        replacement = await _ready_spare(pool)  # started on the other slot while the first one is in use
        assert replacement.slot is not slot
        assert pool.stats() == PoolStats(size=2, busy=1, parked=0, free=0, queued=0, spares=1)
        used_dir = slot.user_data_dir
        await lease.release()

        # The released slot is wiped and stays free: the one spare wanted already exists.
        assert not used_dir.exists()
        assert pool.spares == [replacement]
        assert pool.stats().free == 1
        second = await pool.lease("second")
        await second.start_browser()
        # (taking the spare starts a new one on the wiped slot, in a fresh profile at the same path)
        assert second.warm and second.slot is replacement.slot
        assert second.slot.user_data_dir != used_dir
        await second.release()


async def test_with_one_slot_the_released_slot_becomes_a_new_spare_with_a_fresh_profile(
    settings: Settings, base_index: int
) -> None:
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        first_spare = await _ready_spare(pool)
        first_pid = _chromium_pid(first_spare.slot)
        lease = await pool.lease("user")
        slot = await lease.start_browser()
        assert lease.warm
        assert pool.spares == []  # no free slot: no spare while the only slot is in use
        status, _ = await loopback_http_json(
            slot.cdp_port, "/json/new?http://127.0.0.1:9/", method="PUT", network=slot.network
        )
        assert status == 200
        left_by_user = slot.user_data_dir / "left-by-the-user"
        left_by_user.write_text("state of the first user")
        await lease.release()

        second_spare = await _ready_spare(pool)
        assert second_spare is not first_spare and _chromium_pid(second_spare.slot) != first_pid
        assert await _pages(second_spare.slot) == ["about:blank"]
        # Chromium may create an empty cookie store at start; what matters is that nothing of the user's is left
        assert not (second_spare.slot.user_data_dir / left_by_user.name).exists()


async def test_a_touched_spare_is_stopped_and_the_caller_starts_cold(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        spare = await _ready_spare(pool)
        spare_pid = _chromium_pid(spare.slot)
        status, _ = await loopback_http_json(
            spare.slot.cdp_port, "/json/new?about:blank", method="PUT", network=spare.slot.network
        )
        assert status == 200  # someone opened a second tab in it

        lease = await pool.lease("user")
        slot = await lease.start_browser()
        assert not lease.warm
        assert _chromium_pid(slot) != spare_pid and not psutil.pid_exists(spare_pid)
        assert await _pages(slot) == ["about:blank"]
        await lease.release()


async def test_a_spare_whose_chromium_was_killed_is_never_handed_over(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        spare = await _ready_spare(pool)
        spare_pid = _chromium_pid(spare.slot)
        os.kill(spare_pid, signal.SIGKILL)

        lease = await pool.lease("user")  # right away, whether or not the pool noticed the death yet
        slot = await lease.start_browser()
        assert not lease.warm
        assert slot.running and _chromium_pid(slot) != spare_pid
        assert await _pages(slot) == ["about:blank"]
        await lease.release()


async def test_a_caller_takes_a_spare_that_is_still_starting(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        assert [spare.state for spare in pool.spares] == [SpareState.STARTING]
        lease = await pool.lease("early")
        slot = await lease.start_browser()
        assert lease.warm and slot.running
        await lease.release()


async def test_closing_the_pool_stops_spares_that_are_starting(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index, spares=1) as pool:
        assert [spare.state for spare in pool.spares] == [SpareState.STARTING]
    # the autouse fixture checks that no process is left
