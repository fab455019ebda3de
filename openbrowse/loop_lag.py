"""Event-loop lag: how late the API's event loop wakes a timer, sampled continuously while the server runs.

A lag of hundreds of milliseconds means something ran on the loop without yielding (CPU-bound work, a blocking
call) and every request waited for it. ``/health/details`` reports the current, worst and 99th-percentile lag,
and the code that held the loop in each stall (:mod:`openbrowse.loop_stalls`); ``/metrics`` the top sites.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from dataclasses import dataclass
from types import TracebackType

from openbrowse.loop_stalls import Site, SiteFigures, StallWatchdog

SAMPLE_INTERVAL = 0.05
WINDOW = 1200
"""Samples kept for the percentile: about one minute at the sample interval."""


@dataclass(frozen=True, slots=True)
class LagFigures:
    """Milliseconds; ``max_ms`` is the worst since start, ``p99_ms`` over the recent window."""

    current_ms: float
    max_ms: float
    p99_ms: float
    samples: int


class LoopLagMonitor:
    """Owns one sampling task on the running loop; enter it in the lifespan, read :meth:`figures` anywhere."""

    def __init__(self, interval: float = SAMPLE_INTERVAL, window: int = WINDOW) -> None:
        self._interval = interval
        self._recent: deque[float] = deque(maxlen=window)
        self._max = 0.0
        self._count = 0
        self._task: asyncio.Task[None] | None = None
        self._watchdog = StallWatchdog(interval)

    async def __aenter__(self) -> LoopLagMonitor:
        self._task = asyncio.create_task(self._sample(), name="loop-lag-monitor")
        self._watchdog.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        task, self._task = self._task, None
        await asyncio.shield(asyncio.to_thread(self._watchdog.stop))
        self._watchdog.restore()
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(asyncio.wait({task}))

    async def _sample(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            expected = loop.time() + self._interval
            await asyncio.sleep(self._interval)
            lag = max(0.0, loop.time() - expected)
            self.record(lag)
            self._watchdog.beat(lag)

    def record(self, lag_seconds: float) -> None:
        self._recent.append(lag_seconds)
        self._max = max(self._max, lag_seconds)
        self._count += 1

    def figures(self) -> LagFigures:
        recent = sorted(self._recent)
        current = self._recent[-1] if self._recent else 0.0
        p99 = recent[min(len(recent) - 1, math.ceil(0.99 * len(recent)) - 1)] if recent else 0.0
        return LagFigures(
            current_ms=round(current * 1000, 1),
            max_ms=round(self._max * 1000, 1),
            p99_ms=round(p99 * 1000, 1),
            samples=self._count,
        )

    def stalls(self, count: int) -> list[tuple[Site, SiteFigures]]:
        """The ``count`` code sites that held the loop longest in stalls since start, worst first."""
        return self._watchdog.top(count)
