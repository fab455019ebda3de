"""System V shared memory that a slot's killed processes leave behind.

x11vnc allocates about 60 SysV segments (``shmget``) for its framebuffer polling and Chromium a few for X11
drawing; both mark them for removal only when they exit normally. A SIGKILLed x11vnc (a teardown that had to
escalate, the start-up cleanup after a crash, a sweep of leftovers) leaves its segments behind for good, nobody
attached. The host allows 4096 (``kernel.shmmni``), so after some 60 such kills every new x11vnc fails with
``shmget: No space left on device`` and no live view starts on the machine any more.

After killing or stopping a slot's processes the slot removes the segments those processes created that nobody
is attached to, and no others.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Collection
from pathlib import Path

__all__ = ["remove_orphan_segments"]

logger = logging.getLogger(__name__)

SHM_TABLE = Path("/proc/sysvipc/shm")
IPC_RMID = 0


def _orphans(creators: Collection[int]) -> list[int]:
    try:
        lines = SHM_TABLE.read_text().splitlines()
    except OSError:
        return []
    if not lines:
        return []
    header = lines[0].split()
    try:
        shmid_at, cpid_at, nattch_at = header.index("shmid"), header.index("cpid"), header.index("nattch")
    except ValueError:
        return []
    found = []
    for line in lines[1:]:
        fields = line.split()
        unused = len(fields) > max(shmid_at, cpid_at, nattch_at) and int(fields[nattch_at]) == 0
        if unused and int(fields[cpid_at]) in creators:
            found.append(int(fields[shmid_at]))
    return found


def remove_orphan_segments(creators: Collection[int]) -> int:
    """Remove the SysV shm segments created by a process in ``creators`` that nobody is attached to (blocking).

    Call it once the creators are gone. Returns how many were removed."""
    if not creators:
        return 0
    orphans = _orphans(set(creators))
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
