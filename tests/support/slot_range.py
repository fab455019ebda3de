"""Choosing display-slot indexes that nothing on this machine is using right now.

A server's start-up clean-up kills whatever listens on its slots' ports (spec §17), so two test runs that
share a slot range (for example two pytest processes both starting at ``next_slot_base()``'s first value)
would kill each other's browsers. Servers started here take a random range whose displays and ports are idle.
"""

from __future__ import annotations

import random

import psutil

from openbrowse.slots.layout import MAX_SLOT_INDEX, slot_layout

LOW = 40


def _listening_ports() -> set[int]:
    return {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN and c.laddr}


def _free(index: int, listening: set[int]) -> bool:
    layout = slot_layout(index)
    if any(port in listening for port in layout.ports):
        return False
    return not layout.x_lock_path.exists() and not layout.x_socket_path.exists()


_handed_out: set[int] = set()


def free_slot_base(count: int = 2) -> int:
    """The first of ``count`` consecutive slot indexes in 40..169 whose displays and ports are unused.

    Ranges already handed out by this process are never handed out again, even if their servers have not
    started a browser yet (their ports are not listening).
    """
    listening = _listening_ports()
    candidates = list(range(LOW, MAX_SLOT_INDEX - count + 2))
    random.shuffle(candidates)
    for base in candidates:
        indexes = set(range(base, base + count))
        if indexes & _handed_out:
            continue
        if all(_free(index, listening) for index in indexes):
            _handed_out.update(indexes)
            return base
    raise RuntimeError("no free display-slot range on this machine")
