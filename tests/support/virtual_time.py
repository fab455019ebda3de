"""An asyncio event loop on virtual time, for the unit tests of timers: a wait for N seconds takes no real time.

The loop's clock (``loop.time()``) starts at 0 and moves only when the loop has nothing to do but wait for its
next timer: it then jumps to that timer. I/O still runs on the real selector, polled without blocking while a
timer is due. Code under test is given ``loop.time`` as its monotonic clock, so a test can say "the browser idled
out exactly 0.2 s after its last client left" without measuring the wall clock (and without flaking under load).

A test marked ``virtual_time`` runs on it (:func:`loop_factories`, pytest-asyncio's loop-factory hook, in the
conftest of its folder).
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable

import pytest

__all__ = ["VirtualTimeLoop", "loop_factories"]


class _JumpingSelector(selectors.DefaultSelector):
    """A selector that, instead of sleeping until the next timer, tells its loop to jump there."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer at all: only I/O can wake the loop
            return super().select(None)
        ready = super().select(0)
        if not ready and timeout > 0:
            self._loop.advance(timeout)
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """See the module docstring."""

    def __init__(self) -> None:
        self._virtual_now = 0.0
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        self._virtual_now += seconds


def loop_factories(item: pytest.Item) -> dict[str, Callable[[], asyncio.AbstractEventLoop]]:
    """``pytest_asyncio_loop_factories`` body: a virtual-time loop for a test marked ``virtual_time``, else the
    default loop (the hook must name one for every async test of the folder)."""
    if item.get_closest_marker("virtual_time") is not None:
        return {"virtual_time": VirtualTimeLoop}
    return {"asyncio": asyncio.new_event_loop}
