"""The idle clock and maximum age of a live raw browser (spec §21.1), on a virtual clock: the loop's time jumps to
its next timer, so each end is checked to the moment it is due, without waiting for it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from openbrowse.domain.browsers import BrowserStopReason
from openbrowse.errors import ProcessDied, ResourceLimitExceeded
from openbrowse.sessions.browser_lifetime import VIEWER_POLL_S, BrowserActivity, Lifetime, wait_for_end

pytestmark = pytest.mark.virtual_time


def now() -> float:
    return asyncio.get_running_loop().time()


def activity_now() -> BrowserActivity:
    return BrowserActivity(monotonic=now)


async def _never() -> BaseException:
    await asyncio.Event().wait()
    raise AssertionError


async def watch(
    lifetime: Lifetime,
    activity: BrowserActivity,
    viewers: list[int] | None = None,
    died: Callable[[], Awaitable[BaseException]] = _never,
) -> BrowserStopReason | None:
    stop = asyncio.Event()

    async def stop_requested() -> None:
        await stop.wait()

    counts = viewers if viewers is not None else [0]
    return await wait_for_end("b1", lifetime, activity, lambda: counts[0], stop_requested, died, monotonic=now)


async def test_an_unused_browser_idles_out() -> None:
    started = now()
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity_now())
    assert reason is BrowserStopReason.IDLE_TIMEOUT and now() - started == pytest.approx(0.2)


async def test_a_connected_client_holds_it_until_the_maximum_age() -> None:
    activity = activity_now()
    activity.cdp_connected()
    started = now()
    reason = await watch(Lifetime(idle_seconds=0.1, ends_at=started + 0.5), activity)
    assert reason is BrowserStopReason.TIMEOUT and now() - started == pytest.approx(0.5)


async def test_the_idle_clock_starts_when_the_last_client_leaves() -> None:
    activity = activity_now()
    activity.cdp_connected()
    started = now()
    asyncio.get_running_loop().call_later(0.4, activity.cdp_disconnected)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity)
    assert reason is BrowserStopReason.IDLE_TIMEOUT and now() - started == pytest.approx(0.6)


async def test_a_viewer_keeps_it_alive_while_watching() -> None:
    viewers = [1]
    started = now()
    asyncio.get_running_loop().call_later(1.5, viewers.__setitem__, 0, 0)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity_now(), viewers)
    # while watched, the watcher looks again at least every VIEWER_POLL_S: the idle clock starts that late at most
    assert reason is BrowserStopReason.IDLE_TIMEOUT
    assert 1.5 <= now() - started <= 1.5 + VIEWER_POLL_S + 0.2


async def test_a_dead_browser_is_lost_or_over_its_memory() -> None:
    async def crashed() -> BaseException:
        return ProcessDied("chromium", -9)

    async def over_memory() -> BaseException:
        return ResourceLimitExceeded("memory", "2048 MiB", "twice")

    lifetime = Lifetime(idle_seconds=5, ends_at=now() + 10)
    assert await watch(lifetime, activity_now(), died=crashed) is BrowserStopReason.BROWSER_EXITED
    assert await watch(lifetime, activity_now(), died=over_memory) is BrowserStopReason.MEMORY_LIMIT


async def test_a_pause_stops_the_idle_clock_until_the_resume() -> None:
    activity = activity_now()
    activity.paused = True
    started = now()

    def resume() -> None:
        activity.paused = False
        activity.touch()

    asyncio.get_running_loop().call_later(0.5, resume)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity)
    assert reason is BrowserStopReason.IDLE_TIMEOUT and now() - started == pytest.approx(0.7)


async def test_a_paused_browser_still_reaches_its_maximum_age() -> None:
    activity = activity_now()
    activity.paused = True
    started = now()
    reason = await watch(Lifetime(idle_seconds=0.1, ends_at=started + 0.4), activity)
    assert reason is BrowserStopReason.TIMEOUT and now() - started == pytest.approx(0.4)
