"""System V shared memory that a slot's killed processes leave behind.

x11vnc allocates about 60 SysV segments (``shmget``) for its framebuffer polling and Chromium a few for X11
drawing; both mark them for removal only when they exit normally. A SIGKILLed x11vnc (a teardown that had to
escalate, the start-up cleanup after a crash, a sweep of leftovers) leaves its segments behind for good, nobody
attached. The host allows 4096 (``kernel.shmmni``), so after some 60 such kills every new x11vnc fails with
``shmget: No space left on device`` and no live view starts on the machine any more.

After killing or stopping a slot's processes the slot removes the segments those processes created that nobody
is attached to, and no others. Pids wrap around (32768 here): a segment counts as a creator's only if it was made
after that process started, so an older orphan of another program whose pid the creator reused is left alone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Mapping
from pathlib import Path

__all__ = ["KilledCreators", "remove_orphan_segments"]

logger = logging.getLogger(__name__)

SHM_TABLE = Path("/proc/sysvipc/shm")
IPC_RMID = 0
CLOCK_SLACK = 2
"""Seconds: a segment's ctime has whole seconds, and psutil's start times can be off by up to one."""


def _orphans(creators: Mapping[int, float]) -> list[int]:
    try:
        lines = SHM_TABLE.read_text().splitlines()
    except OSError:
        return []
    if not lines:
        return []
    header = lines[0].split()
    try:
        columns = [header.index(name) for name in ("shmid", "cpid", "nattch", "ctime")]
    except ValueError:
        return []
    shmid_at, cpid_at, nattch_at, ctime_at = columns
    found = []
    for line in lines[1:]:
        fields = line.split()
        if len(fields) <= max(columns) or int(fields[nattch_at]) != 0:
            continue
        started = creators.get(int(fields[cpid_at]))
        if started is not None and int(fields[ctime_at]) + CLOCK_SLACK >= started:
            found.append(int(fields[shmid_at]))
    return found


def remove_orphan_segments(creators: Mapping[int, float]) -> int:
    """Remove the SysV shm segments that nobody is attached to and that a process in ``creators`` (pid to the
    wall-clock time it started) made while it ran (blocking).

    Call it once the creators are gone. Returns how many were removed."""
    if not creators:
        return 0
    orphans = _orphans(creators)
    if not orphans:
        return 0
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    removed = 0
    for shmid in orphans:
        if libc.shmctl(ctypes.c_int(shmid), ctypes.c_int(IPC_RMID), None) == 0:
            removed += 1
    if removed:
        logger.info("Removed %d shared memory segment(s) left by killed slot processes", removed)
    return removed


class KilledCreators:
    """The killed children of one slot, kept until the slot's Xvfb is gone.

    x11vnc hands its segments to the X server (MIT-SHM), so Xvfb may still hold them for a moment after a killed
    x11vnc is reaped; a sweep at that moment skips them (attached). They are swept again on every later kill and
    once more after Xvfb has stopped, when nothing can hold them any more.
    """

    def __init__(self) -> None:
        self._started: dict[int, float] = {}

    def killed(self, pid: int, started_at: float) -> None:
        """Record a killed child and sweep every recorded one (blocking, one read of ``/proc``)."""
        self._started[pid] = started_at
        remove_orphan_segments(self._started)

    def take(self) -> dict[int, float]:
        """Every recorded child, forgotten here: sweep them with :func:`remove_orphan_segments` once Xvfb is gone."""
        taken, self._started = self._started, {}
        return taken
