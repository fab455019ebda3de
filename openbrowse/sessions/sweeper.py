"""Expiry of ``created`` shells that never got a task (spec §6 transition 4): at start-up and every 60 s."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from types import TracebackType

from openbrowse.domain.sessions import SessionRecord, SessionStatus

logger = logging.getLogger(__name__)

SHELL_LIFETIME = timedelta(minutes=15)
SWEEP_INTERVAL_SECONDS = 60.0
EXPIRED_SUMMARY = "Expired: created without a task"


def is_stale_shell(record: SessionRecord, now: datetime) -> bool:
    return (
        record.status is SessionStatus.CREATED
        and record.pending_task is None
        and now - record.created_at >= SHELL_LIFETIME
    )


class Sweeper:
    """Owns the periodic task that calls ``sweep`` every ``interval`` seconds."""

    def __init__(self, sweep: Callable[[], Awaitable[object]], interval: float = SWEEP_INTERVAL_SECONDS) -> None:
        self._sweep = sweep
        self._interval = interval
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sweeper:
        self._task = asyncio.create_task(self._loop(), name="openbrowse-expiry-sweeper")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self._sweep()
            except Exception:
                logger.exception("Expiry sweep failed")
