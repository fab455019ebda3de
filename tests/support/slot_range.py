"""Choosing display-slot indexes that nothing on this machine is using right now.

Two servers on one slot range would fight over its displays and ports, so every server started by the tests
takes a random range whose displays and ports are idle, and holds an exclusive lock file per slot index while it
has the range. The locks (``flock``, released by the kernel when the holder dies) keep the pytest workers of one
run (``pytest -n``) and concurrent test runs on the same machine from handing out the same range.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import time
from pathlib import Path

import psutil

from openbrowse.slots.layout import MAX_SLOT_INDEX, slot_layout
from openbrowse.slots.x_files import x_display_taken

LOW = 40
WAIT_FOR_RANGE = 90.0  # under the 120 s test timeout, so a run out of ranges says why
RANGE_POLL = 0.5
LOCK_DIR = Path("/tmp/openbrowse-test-slots")


def _listening_ports() -> set[int]:
    return {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN and c.laddr}


def _free(index: int, listening: set[int]) -> bool:
    layout = slot_layout(index)
    if any(port in listening for port in layout.ports):
        return False
    # A socket file nobody answers on is what a SIGKILLed X server left (Xvfb replaces it): the display is free.
    return not x_display_taken(layout)


_handed_out: dict[int, list[int]] = {}
"""Ranges this process holds, by their first index: the open lock-file descriptors of their slot indexes."""


def _lock(index: int) -> int | None:
    LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(LOCK_DIR / f"slot-{index}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _take(indexes: range) -> list[int] | None:
    """Lock every index of the range, or none of them."""
    held: list[int] = []
    for index in indexes:
        fd = _lock(index)
        if fd is None:
            _unlock(held)
            return None
        held.append(fd)
    return held


def _unlock(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)  # closing the descriptor releases its flock


def free_slot_base(count: int = 2) -> int:
    """The first of ``count`` consecutive slot indexes in 40..169 whose displays and ports are unused.

    A range stays reserved (by its lock files) until :func:`release_slot_base`, even while its server has not
    started a browser yet (its ports are not listening). When every range is taken (other workers' servers hold
    them), this waits for one to be given back.
    """
    deadline = time.monotonic() + WAIT_FOR_RANGE
    while (base := _take_free_range(count)) is None:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"no {count} consecutive free display slots in {LOW}..{MAX_SLOT_INDEX} after {WAIT_FOR_RANGE:.0f} s; "
                f"this process holds the ranges starting at {sorted(_handed_out)}"
            )
        time.sleep(RANGE_POLL)
    return base


def _take_free_range(count: int) -> int | None:
    listening = _listening_ports()
    candidates = list(range(LOW, MAX_SLOT_INDEX - count + 2))
    random.shuffle(candidates)
    for base in candidates:
        indexes = range(base, base + count)
        if not all(_free(index, listening) for index in indexes):
            continue
        held = _take(indexes)
        if held is not None:
            _handed_out[base] = held
            return base
    return None


def release_slot_base(base: int) -> None:
    """Give back a range once its server has stopped (its ports and displays are checked again before reuse)."""
    _unlock(_handed_out.pop(base, []))


def claim_slot_base(base: int, count: int = 4) -> None:
    """Hold a range again (a server restarted on the range of one that stopped); a range still held is kept."""
    if base in _handed_out:
        return
    held = _take(range(base, base + count))
    if held is not None:
        _handed_out[base] = held
