"""How long a live raw browser lives (spec §21.1): its idle clock, its maximum age, and watching for its end.

A browser is *in use* while a CDP client is connected through the proxy, while someone watches its live view, while
it is paused for a person (spec §21.5), and for a moment at each control-API call. It ends with ``idle_timeout`` once
it has not been in use for its ``idleTimeoutMs``, with ``max_duration`` at its ``timeoutAt`` (paused or not), with
``runner_lost`` when Chromium or its sandbox dies (``memory_limit`` for the memory cap), or when someone asks it to
stop.

CDP connections and control calls are reported to :class:`BrowserActivity` as they happen. Live viewers are
counted by the slot and not reported, so while one watches, the watcher looks again every
:data:`VIEWER_POLL_S` seconds: the idle clock then starts at most that late after the last viewer left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from openbrowse.domain.browsers import BrowserStopReason
from openbrowse.errors import ResourceLimitExceeded

__all__ = ["VIEWER_POLL_S", "BrowserActivity", "Lifetime", "wait_for_end"]

logger = logging.getLogger(__name__)

VIEWER_POLL_S = 1.0


class BrowserActivity:
    """When a browser was last in use, and what holds it in use right now: CDP clients, or a pause."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self.last_used = monotonic()
        self.cdp_clients = 0
        self.paused = False

    def touch(self) -> None:
        self.last_used = self._monotonic()

    def cdp_connected(self) -> None:
        self.cdp_clients += 1
        self.touch()

    def cdp_disconnected(self) -> None:
        self.cdp_clients = max(0, self.cdp_clients - 1)
        self.touch()  # the idle clock starts when the last client leaves


@dataclass(frozen=True, slots=True)
class Lifetime:
    """A live browser's limits, on the monotonic clock."""

    idle_seconds: float
    ends_at: float  # the maximum age, as a monotonic deadline


async def wait_for_end(
    browser_id: str,
    lifetime: Lifetime,
    activity: BrowserActivity,
    viewers: Callable[[], int],
    stop_requested: Callable[[], Awaitable[None]],
    died: Callable[[], Awaitable[BaseException]],
    monotonic: Callable[[], float] = time.monotonic,
) -> BrowserStopReason | None:
    """Wait until the browser should end; return why, or None when a stop was requested (its reason is set)."""
    stop = asyncio.ensure_future(stop_requested())
    death = asyncio.ensure_future(died())
    try:
        while True:
            now = monotonic()
            watched = viewers() > 0
            if watched or activity.cdp_clients > 0 or activity.paused:
                activity.last_used = now
            if now >= lifetime.ends_at:
                logger.info("Raw browser %s reached its maximum age", browser_id)
                return BrowserStopReason.TIMEOUT
            idle_end = activity.last_used + lifetime.idle_seconds
            if now >= idle_end:
                logger.info("Raw browser %s was idle for %.0f s", browser_id, lifetime.idle_seconds)
                return BrowserStopReason.IDLE_TIMEOUT
            wake = min(lifetime.ends_at, idle_end, now + VIEWER_POLL_S if watched else idle_end)
            done, _ = await asyncio.wait({stop, death}, timeout=wake - now, return_when=asyncio.FIRST_COMPLETED)
            if stop in done:
                return None
            if death in done:
                return _reason_of_death(browser_id, death.result())
    finally:
        for waiter in (stop, death):
            waiter.cancel()
        await asyncio.gather(stop, death, return_exceptions=True)


def _reason_of_death(browser_id: str, death: BaseException) -> BrowserStopReason:
    logger.warning("Raw browser %s ended: %s", browser_id, death)
    if isinstance(death, ResourceLimitExceeded) and death.limit == "memory":
        return BrowserStopReason.MEMORY_LIMIT
    return BrowserStopReason.BROWSER_EXITED
