"""Waiting for something to become true by looking again, the one way the tests wait (never a sleep-and-assert).

``wait_for`` polls a probe until it returns something truthy and returns that; ``wait_for_async`` does the same on
the event loop (the probe may be a coroutine function). Both raise ``TimeoutError`` naming ``what`` when the time
runs out: the timeout is a bound on a hang, never a measure of speed, so give it room for a loaded machine.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

__all__ = ["wait_for", "wait_for_async", "wait_until"]

T = TypeVar("T")


def wait_for(probe: Callable[[], T | None], timeout: float, *, interval: float = 0.05, what: str = "condition") -> T:
    """Call ``probe()`` until its result is truthy; return that result."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not reached within {timeout} s (last seen: {value!r})")
        time.sleep(interval)


def wait_until(probe: Callable[[], object], timeout: float, interval: float = 0.05, what: str = "condition") -> None:
    """:func:`wait_for`, for callers that need no value (the older name, kept for the tests that use it)."""
    wait_for(probe, timeout, interval=interval, what=what)


async def wait_for_async(
    probe: Callable[[], Awaitable[T | None]] | Callable[[], T | None],
    timeout: float,
    *,
    interval: float = 0.05,
    what: str = "condition",
) -> T:
    """:func:`wait_for` on the event loop: ``probe`` may return an awaitable, which is awaited each time."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what} not reached within {timeout} s (last seen: {value!r})")
        await asyncio.sleep(interval)
