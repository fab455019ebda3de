"""Engine threads run at a higher nice value than the thread that started them; nobody else is touched."""

from __future__ import annotations

import os
import threading

from openbrowse.sessions.loop_thread import LoopThread
from openbrowse.sessions.priority import MAX_NICE, nicer_by


def _nice_of(tid: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, tid)


def test_nicer_by_raises_within_the_range_and_never_lowers() -> None:
    assert nicer_by(0, 10) == 10
    assert nicer_by(5, 10) == 15
    assert nicer_by(15, 10) == MAX_NICE
    assert nicer_by(3, 0) == 3
    assert nicer_by(3, -5) == 3
    assert nicer_by(-5, 10) == 5


async def test_a_loop_thread_runs_nicer_than_its_creator_and_leaves_the_creator_alone() -> None:
    mine = _nice_of(threading.get_native_id())
    async with LoopThread("test-nice", nice=4) as worker:

        async def own_nice() -> int:
            return _nice_of(threading.get_native_id())

        assert await worker.run(own_nice) == nicer_by(mine, 4)
    assert _nice_of(threading.get_native_id()) == mine


async def test_without_nice_a_loop_thread_keeps_its_creators_priority() -> None:
    mine = _nice_of(threading.get_native_id())
    async with LoopThread("test-plain") as worker:

        async def own_nice() -> int:
            return _nice_of(threading.get_native_id())

        assert await worker.run(own_nice) == mine
