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


_handed_out: dict[int, range] = {}
"""Ranges this process handed out and has not released, by their first index."""


def free_slot_base(count: int = 2) -> int:
    """The first of ``count`` consecutive slot indexes in 40..169 whose displays and ports are unused.

    Ranges handed out by this process and not yet released are never handed out again, even if their servers
    have not started a browser yet (their ports are not listening).
    """
    listening = _listening_ports()
    taken = {index for indexes in _handed_out.values() for index in indexes}
    candidates = list(range(LOW, MAX_SLOT_INDEX - count + 2))
    random.shuffle(candidates)
    for base in candidates:
        indexes = range(base, base + count)
        if taken.intersection(indexes):
            continue
        if all(_free(index, listening) for index in indexes):
            _handed_out[base] = indexes
            return base
    raise RuntimeError("no free display-slot range on this machine")


def release_slot_base(base: int) -> None:
    """Give back a range once its server has stopped (its ports and displays are checked again before reuse)."""
    _handed_out.pop(base, None)


def claim_slot_base(base: int, count: int = 4) -> None:
    """Mark a range as handed out again (a server restarted on the range of one that stopped)."""
    _handed_out.setdefault(base, range(base, base + count))
