"""What a raw-browser create does when no display slot is free (spec §21.2).

**Free** means the slot pool would hand out a slot without anyone leaving by their own choice: a free or pre-started
slot, a slot whose holder already left and whose teardown is under way, or one held by a parked keep-alive session
that no earlier waiter has claimed yet (the pool evicts it, as for an agent run). **Busy** is everything else: a
running agent session, another raw browser (live raw browsers are never evicted; an abandoned one ends by its idle
timeout), or a queue that already has callers waiting (a newcomer never overtakes them).

By default a create with every slot busy is refused at once (429 ``capacity_exceeded``); ``waitForCapacityMs``
waits that long in the pool's FIFO queue first; ``queueForCapacity`` answers at once with a queued browser that
starts when a slot frees up, or ends with ``capacity_timeout`` at its ``expiresAt``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from openbrowse.errors import OverLimit

__all__ = [
    "EVICTION_GRACE_S",
    "START_GRACE_S",
    "CapacityExceeded",
    "CapacityRequest",
    "SlotGauge",
    "capacity_now",
    "estimate_eta",
]

START_GRACE_S = 5.0
"""How long a create that found a slot free waits for it after all (another caller may take it first, or its
teardown is still running: Chromium gets 5 s to exit after SIGTERM)."""
EVICTION_GRACE_S = 5.0
"""Added to the pool's eviction timeout for a create that waits for a parked session to be evicted."""


class CapacityExceeded(OverLimit):
    """Every display slot is busy and the caller did not ask to wait or queue (HTTP 429)."""

    code = "capacity_exceeded"

    def __init__(self, waited_ms: int = 0) -> None:
        waited = f" after waiting {waited_ms / 1000:g} s" if waited_ms else ""
        super().__init__(
            f"Every browser slot is busy{waited}; retry later, or pass waitForCapacityMs or queueForCapacity."
        )


@dataclass(frozen=True, slots=True)
class CapacityRequest:
    """How a create copes with a full pool: wait up to ``wait_ms``, or queue for up to ``queue_seconds``."""

    wait_ms: int = 0
    queue_seconds: int | None = None

    @property
    def queues(self) -> bool:
        return self.queue_seconds is not None


class PoolStatsView(Protocol):
    @property
    def parked(self) -> int: ...

    @property
    def queued(self) -> int: ...


class SlotGauge(Protocol):
    """What the capacity check reads of the slot pool (:class:`openbrowse.slots.pool.SlotPool`)."""

    eviction_timeout: float

    def idle_slots(self) -> int: ...

    def stats(self) -> PoolStatsView: ...

    def queue_position(self, owner: str) -> int | None: ...


def capacity_now(pool: SlotGauge) -> bool:
    """Whether a caller arriving now gets a slot without waiting for anyone to leave of their own accord."""
    if pool.idle_slots() > 0:
        return True
    stats = pool.stats()
    return stats.parked > stats.queued  # a parked session nobody queued before us has claimed


def lease_timeout(pool: SlotGauge, request: CapacityRequest) -> float:
    """How long a create that does not queue waits in the pool's queue before it is refused."""
    wait = request.wait_ms / 1000
    if pool.idle_slots() > 0:
        return max(wait, START_GRACE_S)
    if capacity_now(pool):
        return max(wait, pool.eviction_timeout + EVICTION_GRACE_S)
    return wait


def estimate_eta(position: int, ends: Sequence[datetime], now: datetime, expires_at: datetime) -> int:
    """Seconds until the ``position``-th known end among the slots' holders (raw browsers' idle or age limits);
    when fewer ends are known (agent sessions hold the rest), the time left until the queue entry expires."""
    ordered = sorted(ends)
    moment = ordered[position - 1] if 0 < position <= len(ordered) else expires_at
    return max(0, round((min(moment, expires_at) - now).total_seconds()))
