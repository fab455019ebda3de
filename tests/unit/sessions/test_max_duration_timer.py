"""A session's ``maxDurationMs`` timer (spec §21.1) on a virtual clock: the loop's time jumps to its next timer, so
the end is checked to the moment it is due (``createdAt + maxDurationMs``) without waiting for it. The end-to-end
test checks the same limit on a real server from below only (an upper bound there would race the machine's load)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from openbrowse.sessions.max_duration import DeadlineTimer

pytestmark = pytest.mark.virtual_time

START = datetime(2026, 1, 1, tzinfo=UTC)


def wall_clock() -> datetime:
    """The wall clock, moving with the loop's virtual time."""
    return START + timedelta(seconds=asyncio.get_running_loop().time())


class Reached:
    def __init__(self) -> None:
        self.at: list[float] = []
        self.event = asyncio.Event()

    def __call__(self) -> None:
        self.at.append(asyncio.get_running_loop().time())
        self.event.set()


async def test_it_fires_once_at_the_moment_the_limit_is_reached() -> None:
    reached = Reached()
    timer = DeadlineTimer(reached, clock=wall_clock)
    timer.arm(wall_clock() + timedelta(seconds=10))
    await reached.event.wait()
    assert reached.at == [10.0]
    await asyncio.sleep(100)
    assert reached.at == [10.0]


async def test_a_limit_already_past_fires_at_once() -> None:
    reached = Reached()
    DeadlineTimer(reached, clock=wall_clock).arm(wall_clock() - timedelta(seconds=5))
    await reached.event.wait()
    assert reached.at == [0.0]


async def test_arming_again_replaces_the_deadline_and_cancel_or_none_disarms() -> None:
    reached = Reached()
    timer = DeadlineTimer(reached, clock=wall_clock)
    timer.arm(wall_clock() + timedelta(seconds=10))
    timer.arm(wall_clock() + timedelta(seconds=30))  # the later arm is the one that counts
    await reached.event.wait()
    assert reached.at == [30.0]

    timer.arm(wall_clock() + timedelta(seconds=10))
    timer.cancel()
    timer.arm(None)
    await asyncio.sleep(100)
    assert reached.at == [30.0]
