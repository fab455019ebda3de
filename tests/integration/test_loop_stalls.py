"""The loop-lag monitor names the code that held a real event loop: a coroutine blocking it on purpose."""

from __future__ import annotations

import asyncio
import threading
import time

from openbrowse.loop_lag import LoopLagMonitor


def _hold_the_loop_on_purpose(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # CPU-bound, as a serialisation on the loop would be
        pass


async def _hold_then_wait_for_the_charge(monitor: LoopLagMonitor) -> None:
    """Block the loop from a coroutine named ``blocking_step``, then wait until the monitor has charged a stall."""

    async def blocking_step() -> None:
        _hold_the_loop_on_purpose(0.3)

    await asyncio.sleep(0.05)
    await blocking_step()
    deadline = time.monotonic() + 10
    while not monitor.stalls(5) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


async def test_a_blocking_coroutine_is_named_as_the_site_that_held_the_loop() -> None:
    async with LoopLagMonitor(interval=0.01) as monitor:
        await _hold_then_wait_for_the_charge(monitor)
    sites = [site for site, _ in monitor.stalls(5)]
    assert sites, "no stall was charged"
    held = sites[0]
    assert held.where == "tests.integration.test_loop_stalls._hold_the_loop_on_purpose"
    figures = monitor.stalls(5)[0][1]
    assert any("blocking_step" in frame for frame in figures.stack)
    assert figures.stalls >= 1
    assert figures.samples >= 1


def test_a_loop_outside_the_main_thread_is_sampled_from_the_watchdog() -> None:
    async def watched() -> LoopLagMonitor:
        async with LoopLagMonitor(interval=0.01) as monitor:
            await _hold_then_wait_for_the_charge(monitor)
        return monitor

    found: list[LoopLagMonitor] = []
    thread = threading.Thread(target=lambda: found.append(asyncio.run(watched())))
    thread.start()
    thread.join()
    (site, figures), *_ = found[0].stalls(5)
    assert site.where == "tests.integration.test_loop_stalls._hold_the_loop_on_purpose"
    assert any("blocking_step" in frame for frame in figures.stack)
