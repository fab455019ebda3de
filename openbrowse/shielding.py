"""Teardown that a cancellation cannot cut short.

``asyncio.shield(coro)`` protects the work from the caller's cancellation but then abandons it: the caller
leaves at once and the work runs on with no owner (the thread it runs on may be stopped under it, the slot it
holds handed out, its error never seen). :func:`run_shielded` keeps owning it: the caller waits until the work
finished, however often it is cancelled meanwhile, and only then re-raises the cancellation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable
from typing import Any, TypeVar

logger = logging.getLogger(__name__)

T = TypeVar("T")


async def run_shielded(aw: Awaitable[T]) -> T:
    """Run ``aw`` to completion even if the caller is cancelled, then re-raise the cancellation.

    The inner task is owned here and always awaited, so teardown can never be abandoned half-way.
    """
    task: asyncio.Future[T] = asyncio.ensure_future(aw)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = True
        except BaseException:  # the task finished with an error; task.result() re-raises it below
            pass
    if cancelled:
        if not task.cancelled() and task.exception() is not None:
            logger.error("Shielded teardown failed while cancelled", exc_info=task.exception())
        raise asyncio.CancelledError
    return task.result()


async def discard_task(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (if any) and wait until it ended, whatever it raised: its result is no longer wanted."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task
