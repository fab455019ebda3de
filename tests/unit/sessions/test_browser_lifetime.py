"""The idle clock and maximum age of a live raw browser (spec §21.1), on short real timers."""

from __future__ import annotations

import asyncio
import time

from openbrowse.domain.browsers import BrowserStopReason
from openbrowse.errors import ProcessDied, ResourceLimitExceeded
from openbrowse.sessions.browser_lifetime import BrowserActivity, Lifetime, wait_for_end


async def _never() -> BaseException:
    await asyncio.Event().wait()
    raise AssertionError


async def watch(
    lifetime: Lifetime, activity: BrowserActivity, viewers: list[int] | None = None, died: object = _never
) -> BrowserStopReason | None:
    stop = asyncio.Event()
    counts = viewers if viewers is not None else [0]
    return await wait_for_end("b1", lifetime, activity, lambda: counts[0], stop.wait, died)  # type: ignore[arg-type]


async def test_an_unused_browser_idles_out() -> None:
    started = time.monotonic()
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), BrowserActivity())
    assert reason is BrowserStopReason.IDLE_TIMEOUT and 0.2 <= time.monotonic() - started < 1


async def test_a_connected_client_holds_it_until_the_maximum_age() -> None:
    activity = BrowserActivity()
    activity.cdp_connected()
    started = time.monotonic()
    reason = await watch(Lifetime(idle_seconds=0.1, ends_at=started + 0.5), activity)
    assert reason is BrowserStopReason.TIMEOUT and time.monotonic() - started >= 0.5


async def test_the_idle_clock_starts_when_the_last_client_leaves() -> None:
    activity = BrowserActivity()
    activity.cdp_connected()
    started = time.monotonic()
    asyncio.get_running_loop().call_later(0.4, activity.cdp_disconnected)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity)
    assert reason is BrowserStopReason.IDLE_TIMEOUT and time.monotonic() - started >= 0.6


async def test_a_viewer_keeps_it_alive_while_watching() -> None:
    viewers = [1]
    started = time.monotonic()
    asyncio.get_running_loop().call_later(1.5, viewers.__setitem__, 0, 0)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), BrowserActivity(), viewers)
    assert reason is BrowserStopReason.IDLE_TIMEOUT and 1.5 <= time.monotonic() - started < 3


async def test_a_dead_browser_is_lost_or_over_its_memory() -> None:
    async def crashed() -> BaseException:
        return ProcessDied("chromium", -9)

    async def over_memory() -> BaseException:
        return ResourceLimitExceeded("memory", "2048 MiB", "twice")

    lifetime = Lifetime(idle_seconds=5, ends_at=time.monotonic() + 10)
    assert await watch(lifetime, BrowserActivity(), died=crashed) is BrowserStopReason.BROWSER_EXITED
    assert await watch(lifetime, BrowserActivity(), died=over_memory) is BrowserStopReason.MEMORY_LIMIT


async def test_a_pause_stops_the_idle_clock_until_the_resume() -> None:
    activity = BrowserActivity()
    activity.paused = True
    started = time.monotonic()

    def resume() -> None:
        activity.paused = False
        activity.touch()

    asyncio.get_running_loop().call_later(0.5, resume)
    reason = await watch(Lifetime(idle_seconds=0.2, ends_at=started + 10), activity)
    assert reason is BrowserStopReason.IDLE_TIMEOUT and 0.7 <= time.monotonic() - started < 1.5


async def test_a_paused_browser_still_reaches_its_maximum_age() -> None:
    activity = BrowserActivity()
    activity.paused = True
    started = time.monotonic()
    reason = await watch(Lifetime(idle_seconds=0.1, ends_at=started + 0.4), activity)
    assert reason is BrowserStopReason.TIMEOUT and time.monotonic() - started >= 0.4
