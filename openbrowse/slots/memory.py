"""What the slots' processes cost in memory, as PSS (shared pages split between their users), per slot.

The processes a slot spawns carry the slot's tag in their environment (see :mod:`openbrowse.slots.ledger`), and
so do Chromium's crashpad handlers, whichever process group they end up in; Chromium's zygotes and everything
they fork (renderers, GPU and utility processes) do not, and are found as descendants of a tagged process.
RSS would count the Chromium binary's shared pages once per process and overstate a slot by a factor of 2-3;
PSS adds up to what the machine really spends.
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
    """PSS in bytes of the processes of each slot tagged ``prefix/…``, summed per tag (blocking: a ``/proc`` scan).

    A slot's processes are those carrying its tag and all their descendants: Chromium starts its zygotes with a
    clean environment, so its renderers, GPU and utility processes carry no tag of their own.
    """
    me = os.getpid()
    children: dict[int, list[int]] = {}
    tags: dict[int, str] = {}
    for proc in psutil.process_iter(["ppid"]):
        if proc.pid == me:
            continue
        children.setdefault(proc.info["ppid"] or 0, []).append(proc.pid)
        try:
            tag = proc.environ().get(TAG_ENV)
        except psutil.Error:
            continue
        if tag is not None and tag.startswith(prefix + "/"):
            tags[proc.pid] = tag
    owner = dict(tags)
    pending = list(tags)
    while pending:
        pid = pending.pop()
        for child in children.get(pid, []):
            if child not in owner:
                owner[child] = owner[pid]
                pending.append(child)
    totals: dict[str, int] = {}
    for pid, tag in owner.items():
        try:
            pss = int(psutil.Process(pid).memory_full_info().pss)
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
