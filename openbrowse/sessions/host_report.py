"""What ``/health/details`` reports about the machine side of the service, so the api layer reads it here instead
of reaching into ``slots`` and ``agent`` (issue 24: api imports only the sessions facade).
"""

from __future__ import annotations

from dataclasses import dataclass

from openbrowse.agent.census import live_counts
from openbrowse.slots.memory import MiB, slot_usage
from openbrowse.slots.pool import SlotPool

__all__ = ["SlotMemory", "SlotReport", "live_objects", "slot_report"]


@dataclass(frozen=True, slots=True)
class SlotMemory:
    index: int
    owner: str | None
    state: str
    pss_mib: float


@dataclass(frozen=True, slots=True)
class SlotReport:
    slots: list[SlotMemory]
    spares: list[SlotMemory]
    spares_wanted: int


def live_objects() -> dict[str, int]:
    """How many engines, browser sessions and agents are alive (a leak shows here first)."""
    return live_counts()


async def slot_report(pool: SlotPool) -> SlotReport:
    """Each slot with processes, its owner (a spare has none) and the PSS of its process tree."""
    usage = await slot_usage(pool)
    views = [SlotMemory(use.index, use.owner, use.state, round(use.pss_bytes / MiB, 1)) for use in usage]
    return SlotReport(
        slots=[view for view in views if view.owner is not None],
        spares=[view for view in views if view.owner is None],
        spares_wanted=pool.spares_wanted,
    )
