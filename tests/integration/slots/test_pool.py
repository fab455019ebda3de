"""SlotPool queueing and eviction. No browser is started here, so these tests need no display binaries."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from openbrowse.config import Settings
from openbrowse.errors import BrowserUnavailable, ConfigError
from openbrowse.slots.pool import PoolStats, SlotLease, SlotPool
from tests.support.waiting import wait_for_async


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.fixture
def pool_settings(data_dir: Path) -> Settings:
    return Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=3)


async def test_lowest_free_index_is_handed_out(pool_settings: Settings, base_index: int) -> None:
    async with SlotPool(pool_settings, base_index=base_index) as pool:
        a, b, c = [await pool.lease(name) for name in "abc"]
        assert [a.index, b.index, c.index] == [0, 1, 2]
        assert [lease.slot.index for lease in (a, b, c)] == [base_index, base_index + 1, base_index + 2]
        await b.release()
        await a.release()
        d = await pool.lease("d")
        assert d.index == 0
        assert pool.stats() == PoolStats(size=3, busy=2, parked=0, free=1, queued=0)
        await c.release()
        await d.release()
        assert pool.stats() == PoolStats(size=3, busy=0, parked=0, free=3, queued=0)


async def test_fifo_with_one_slot_and_three_waiters(settings: Settings, base_index: int) -> None:
    order: list[str] = []
    waits: dict[str, int] = {}

    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")

        async def run(name: str) -> None:
            async def on_wait(ahead: int) -> None:
                waits[name] = ahead

            async with pool.acquire(name, on_wait) as lease:
                order.append(name)
                assert lease.index == 0
                await asyncio.sleep(0.01)

        tasks = []
        for name in ("w1", "w2", "w3"):
            tasks.append(asyncio.create_task(run(name)))
            await _settle()
        assert pool.stats().queued == 3
        assert waits == {"w1": 0, "w2": 1, "w3": 2}
        await holder.release()
        await asyncio.gather(*tasks)
        assert order == ["w1", "w2", "w3"]
        assert pool.stats() == PoolStats(size=1, busy=0, parked=0, free=1, queued=0)


async def test_newcomer_does_not_overtake_the_queue(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")
        first = asyncio.create_task(pool.lease("first"))
        await _settle()
        await holder.release()  # the slot is now reserved for "first"
        second = asyncio.create_task(pool.lease("second"))
        await _settle()
        assert first.done()
        assert not second.done()
        await (await first).release()
        await (await second).release()


async def test_cancelling_waiters_leaks_nothing(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")
        waiters = {name: asyncio.create_task(pool.lease(name)) for name in ("a", "b", "c")}
        await _settle()
        waiters["b"].cancel()
        await _settle()
        assert pool.stats().queued == 2
        # cancel "a" in the very tick in which the slot is granted to it: the slot must move on to "c"
        release = asyncio.create_task(holder.release())
        while pool.stats().queued == 2:
            await asyncio.sleep(0)
        waiters["a"].cancel()
        await release
        lease_c = await asyncio.wait_for(waiters["c"], 5)
        assert lease_c.owner == "c"
        for name in ("a", "b"):
            with pytest.raises(asyncio.CancelledError):
                await waiters[name]
        await lease_c.release()
        assert pool.stats() == PoolStats(size=1, busy=0, parked=0, free=1, queued=0)


async def test_on_wait_failure_leaves_the_queue(settings: Settings, base_index: int) -> None:
    async def broken(ahead: int) -> None:
        raise RuntimeError("feed is down")

    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")
        with pytest.raises(RuntimeError, match="feed is down"):
            await pool.lease("x", broken)
        assert pool.stats().queued == 0
        await holder.release()
        assert pool.stats().free == 1


async def test_longest_parked_holder_is_evicted_for_a_newcomer(data_dir: Path, base_index: int) -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=2)
    asked: list[str] = []
    async with SlotPool(settings, base_index=base_index) as pool:
        first = await pool.lease("first")
        second = await pool.lease("second")

        def releaser(lease: SlotLease) -> Callable[[], Awaitable[None]]:
            async def release() -> None:
                asked.append(lease.owner)
                await lease.release()

            return release

        second.park(releaser(second))  # parked longest
        await asyncio.sleep(0.01)
        first.park(releaser(first))
        assert pool.stats() == PoolStats(size=2, busy=0, parked=2, free=0, queued=0)
        waited: list[int] = []

        async def on_wait(ahead: int) -> None:
            waited.append(ahead)

        newcomer = await asyncio.wait_for(pool.lease("newcomer", on_wait), 5)
        assert asked == ["second"]
        assert waited == [0]
        assert newcomer.index == second.index
        assert not second.active
        assert first.active
        assert pool.stats() == PoolStats(size=2, busy=1, parked=1, free=0, queued=0)
        assert first.unpark()
        await first.release()
        await newcomer.release()


async def test_busy_holders_are_never_evicted(settings: Settings, base_index: int) -> None:
    called = asyncio.Event()
    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")
        waiter = asyncio.create_task(pool.lease("waiter"))
        await asyncio.sleep(0.1)
        assert not waiter.done()

        async def release() -> None:
            called.set()
            await holder.release()

        holder.park(release)  # parking while someone waits evicts at once
        lease = await asyncio.wait_for(waiter, 5)
        assert called.is_set()
        await lease.release()


async def test_unpark_fails_once_eviction_started(settings: Settings, base_index: int) -> None:
    gate = asyncio.Event()
    async with SlotPool(settings, base_index=base_index) as pool:
        holder = await pool.lease("holder")

        async def slow_release() -> None:
            await gate.wait()
            await holder.release()

        holder.park(slow_release)
        waiter = asyncio.create_task(pool.lease("waiter"))
        await _settle()
        assert holder.evicting
        assert holder.unpark() is False
        gate.set()
        await (await asyncio.wait_for(waiter, 5)).release()


async def test_eviction_gives_up_after_the_timeout(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index, eviction_timeout=0.2) as pool:
        holder = await pool.lease("holder")

        async def ignore() -> None:
            return None

        holder.park(ignore)
        waiter = asyncio.create_task(pool.lease("waiter"))
        # asked, then given up on: neither being evicted nor to be asked again
        await wait_for_async(lambda: not holder.evicting and not holder.evictable, 30, what="the eviction to give up")
        assert not waiter.done()
        assert not holder.evicting
        assert pool.stats() == PoolStats(size=1, busy=0, parked=1, free=0, queued=1)
        await holder.release()
        await (await asyncio.wait_for(waiter, 5)).release()


async def test_closing_the_pool_fails_waiters(settings: Settings, base_index: int) -> None:
    pool = SlotPool(settings, base_index=base_index)
    await pool.start()
    holder = await pool.lease("holder")
    waiter = asyncio.create_task(pool.lease("waiter"))
    await _settle()
    await pool.aclose()
    with pytest.raises(BrowserUnavailable, match="shutting down"):
        await waiter
    await holder.release()  # harmless after close
    with pytest.raises(BrowserUnavailable):
        await pool.lease("late")


async def test_second_pool_on_the_same_data_dir_is_refused(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index):
        with pytest.raises(ConfigError, match="Another OpenBrowse process"):
            async with SlotPool(settings, base_index=base_index):
                pass
    async with SlotPool(settings, base_index=base_index):  # the lock is free again
        pass
