"""Waiting for a freshly started slot to go quiet.

Chromium answers CDP well before it has finished starting: for about a second afterwards its browser process and
first helpers keep both cores busy, and a client that connects and loads a page then pays for it. A spare is
called ready only once the CPU time of its processes grows by less than :data:`QUIET_CORES` over a window, or
after :data:`SETTLE_LIMIT_S` whatever happens (a page the browser keeps busy on its own must not hold it back).
"""

from __future__ import annotations

import asyncio
import contextlib

import psutil

__all__ = ["QUIET_CORES", "SETTLE_LIMIT_S", "cpu_seconds", "settle"]

QUIET_CORES = 0.1
WINDOW_S = 0.2
SETTLE_LIMIT_S = 3.0


def cpu_seconds(pids: list[int]) -> float:
    """User plus system CPU time of ``pids`` and all their descendants (processes gone by now count as 0)."""
    total = 0.0
    seen: set[int] = set()
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            root = psutil.Process(pid)
            for process in (root, *root.children(recursive=True)):
                if process.pid in seen:
                    continue
                seen.add(process.pid)
                with contextlib.suppress(psutil.Error):
                    times = process.cpu_times()
                    total += times.user + times.system
    return total


async def settle(pids: list[int]) -> None:
    """Return once ``pids`` and their descendants use under :data:`QUIET_CORES` over a window (at most the limit)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SETTLE_LIMIT_S
    before = await asyncio.to_thread(cpu_seconds, pids)
    while loop.time() < deadline:
        await asyncio.sleep(WINDOW_S)
        after = await asyncio.to_thread(cpu_seconds, pids)
        if after - before < QUIET_CORES * WINDOW_S:
            return
        before = after
