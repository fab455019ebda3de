"""The event-loop lag monitor's figures, and that it samples a running loop and stops cleanly."""

from __future__ import annotations

import asyncio
import time

from openbrowse.loop_lag import LoopLagMonitor


def test_figures_report_current_worst_and_p99() -> None:
    monitor = LoopLagMonitor(window=100)
    for _ in range(98):
        monitor.record(0.001)
    monitor.record(0.5)
    monitor.record(0.002)
    lag = monitor.figures()
    assert lag.current_ms == 2.0
    assert lag.max_ms == 500.0
    assert lag.p99_ms == 2.0  # one stall in a hundred samples is above the 99th percentile
    assert lag.samples == 100


def test_window_forgets_old_samples_but_max_stays() -> None:
    monitor = LoopLagMonitor(window=3)
    for value in (0.9, 0.01, 0.01, 0.01):
        monitor.record(value)
    lag = monitor.figures()
    assert lag.p99_ms == 10.0
    assert lag.max_ms == 900.0


def test_no_samples_reads_as_zero() -> None:
    lag = LoopLagMonitor().figures()
    assert (lag.current_ms, lag.max_ms, lag.p99_ms, lag.samples) == (0.0, 0.0, 0.0, 0)


async def test_a_blocked_loop_shows_as_lag() -> None:
    async with LoopLagMonitor(interval=0.01) as monitor:
        await asyncio.sleep(0.05)
        time.sleep(0.2)  # holds the loop on purpose, as a CPU-bound step would
        deadline = time.monotonic() + 10
        while monitor.figures().max_ms < 150 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
    assert monitor.figures().max_ms >= 150
    assert not [t for t in asyncio.all_tasks() if t.get_name() == "loop-lag-monitor"]
