"""What the slots' processes cost in memory, as PSS (shared pages split between their users), per slot.

Every child of a slot carries the slot's tag in its environment (see :mod:`openbrowse.slots.ledger`), Chromium's
renderers, zygotes and crashpad handlers included, so one ``/proc`` scan finds all of them, whichever process
group they ended up in. RSS would count the Chromium binary's shared pages once per process and overstate a
slot by a factor of 2-3; PSS adds up to what the machine really spends.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil

from openbrowse.slots.ledger import TAG_ENV, instance_id

if TYPE_CHECKING:
    from openbrowse.slots.pool import SlotPool

__all__ = ["MiB", "SlotUse", "pss_by_tag", "slot_usage"]

MiB = 1024 * 1024


def pss_by_tag(prefix: str) -> dict[str, int]:
    """PSS in bytes of the live processes tagged ``prefix/…``, summed per tag (blocking: a ``/proc`` scan)."""
    me = os.getpid()
    totals: dict[str, int] = {}
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            tag = proc.environ().get(TAG_ENV)
            if tag is None or not tag.startswith(prefix + "/"):
                continue
            pss = int(proc.memory_full_info().pss)
        except psutil.Error:
            continue
        totals[tag] = totals.get(tag, 0) + pss
    return totals


@dataclass(frozen=True, slots=True)
class SlotUse:
    """One slot that has processes: leased to ``owner`` (a session or raw browser id) or a spare (owner None)."""

    index: int
    owner: str | None
    state: str
    pss_bytes: int

    @property
    def spare(self) -> bool:
        return self.owner is None


async def slot_usage(pool: SlotPool) -> list[SlotUse]:
    """The leased slots and the spares of ``pool`` with their processes' PSS (the scan runs in a thread)."""
    entries: list[tuple[int, str, str | None, str]] = []
    for lease in pool.leases:
        state = "parked" if lease.parked else "busy"
        entries.append((lease.slot.index, lease.slot.tag, lease.owner, state))
    for spare in pool.spares:
        entries.append((spare.slot.index, spare.slot.tag, None, str(spare.state)))
    totals = await asyncio.to_thread(pss_by_tag, instance_id(pool.settings.run_dir))
    return [SlotUse(index, owner, state, totals.get(tag, 0)) for index, tag, owner, state in sorted(entries)]
