"""Watching a sandboxed slot against its caps (spec §24.5).

* Memory: the kernel enforces ``SLOT_MEMORY_MB`` itself (the cgroup's OOM killer ends the biggest process inside,
  typically a runaway script host or renderer). The watcher reads the group's OOM-kill counter: the first kill is a
  warning the session records as a ``system`` event; the second ends the slot with
  :class:`ResourceLimitExceeded` (``memory``), which the session records as ``failureKind: resource_limit``.
* Disk: the kernel enforces ``SLOT_DISK_MB`` where the slot's area is a filesystem of its own (:mod:`.slot_disk`):
  a write past it fails with ``ENOSPC``. The watcher reads that filesystem's usage (one ``statvfs``) at every check;
  once it is full the slot ends with :class:`ResourceLimitExceeded` (``disk``). Where the mount failed
  it walks the area every few checks, counting each file at the larger of its apparent and allocated size (a sparse
  file counts in full), with the same end past the cap. What was written stays.

One task per running slot, owned by the slot (started with it, cancelled at its stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from openbrowse.errors import ResourceLimitExceeded
from openbrowse.slots.cgroups import SlotCgroup
from openbrowse.slots.slot_disk import disk_usage

__all__ = ["LimitWatcher", "directory_bytes"]

logger = logging.getLogger(__name__)

MEMORY_CHECK_INTERVAL = 0.5
DISK_CHECK_EVERY = 10  # memory checks per disk walk where the area is no filesystem of its own (a walk is not free)
MEMORY_STRIKES = 2


FULL_MARGIN = 64 * 1024
"""A mounted area with less free space than this is full (tmpfs hands out whole pages)."""


def directory_bytes(path: Path) -> int:
    """Bytes the files below ``path`` take or claim, whichever is more (blocking; links are not followed)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                found = os.lstat(os.path.join(root, name))
                total += max(found.st_size, found.st_blocks * 512)
    return total


def _area_usage(path: Path, limit: int) -> tuple[int, bool]:
    """``(bytes used, over the cap)`` of the slot's area (blocking)."""
    if os.path.ismount(path):
        used, size = disk_usage(path)
        return used, used >= size - FULL_MARGIN
    used = directory_bytes(path)
    return used, used > limit


class LimitWatcher:
    """Calls ``on_warning(text)`` at the first memory-cap kill and ``on_exceeded(error)`` when a cap ends the slot."""

    def __init__(
        self,
        name: str,
        cgroup: SlotCgroup,
        disk_area: Path,
        disk_limit_mb: int,
        *,
        on_warning: Callable[[str], None],
        on_exceeded: Callable[[ResourceLimitExceeded], None],
    ) -> None:
        self.name = name
        self._cgroup = cgroup
        self._disk_area = disk_area
        self._disk_limit = disk_limit_mb * 1024 * 1024
        self._on_warning = on_warning
        self._on_exceeded = on_exceeded
        self._baseline = 0
        self._mounted = False
        self.strikes = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._baseline = self._cgroup.oom_kills()
        self._mounted = os.path.ismount(self._disk_area)
        self._task = asyncio.get_running_loop().create_task(self._watch(), name=f"{self.name} limits")

    async def _watch(self) -> None:
        checks = 0
        while True:
            await asyncio.sleep(MEMORY_CHECK_INTERVAL)
            if self._memory_exceeded():
                return
            checks += 1
            if (self._mounted or checks % DISK_CHECK_EVERY == 0) and await self._disk_exceeded():
                return

    def check_now(self) -> None:
        """Read the OOM-kill counter at once: a process inside just died, and what ends the session must be known
        before its caller (the agent, reading a script's crash) moves on, not half a poll later."""
        if self._task is None or self._task.done():
            return
        if self._memory_exceeded():
            self._task.cancel()

    def _memory_exceeded(self) -> bool:
        kills = self._cgroup.oom_kills() - self._baseline
        if kills <= self.strikes:
            return False
        self.strikes = kills
        limit = self._cgroup.limits.memory_mb
        if self.strikes < MEMORY_STRIKES:
            text = f"The browser sandbox went over its memory cap of {limit} MiB; a process inside was ended."
            logger.warning("%s: %s", self.name, text)
            self._on_warning(text)
            return False
        self._on_exceeded(ResourceLimitExceeded("memory", f"{limit} MiB", "the session went over it a second time"))
        return True

    async def _disk_exceeded(self) -> bool:
        used, over = await asyncio.to_thread(_area_usage, self._disk_area, self._disk_limit)
        if not over:
            return False
        limit = f"{self._disk_limit // (1024 * 1024)} MiB"
        self._on_exceeded(ResourceLimitExceeded("disk", limit, f"its files take {used // (1024 * 1024)} MiB"))
        return True

    async def aclose(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
