"""``MAX_QUEUED``: how many agent runs and raw browsers may wait for a display slot at once (spec §25.1).

Both kinds wait in the same FIFO queue of the slot pool, so they share one bound. A run counts as waiting from
the moment it is dispatched (its worker may not have reached the pool yet: a burst of creates is counted before
any of them queues) until it holds a slot; a slot that is free now absorbs one of them. A request that would
make the queue longer than the bound is refused with a 429 before anything is written.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol

from openbrowse.errors import OverLimit

__all__ = ["QUEUE_FULL", "QueueAdmission", "SlotCapacity", "queue_eta"]

QUEUE_FULL = "The queue for a display slot is full ({limit} waiting, MAX_QUEUED); try again when a slot frees up."


class SlotCapacity(Protocol):
    def idle_slots(self) -> int:
        """Slots a caller would get at once (free and usable, or pre-started spares)."""
        ...


class QueueAdmission:
    """Counts the callers waiting for a slot across every source and refuses one more past ``limit``."""

    def __init__(self, limit: int, capacity: SlotCapacity) -> None:
        self.limit = limit
        self._capacity = capacity
        self._sources: list[Callable[[], int]] = []
        self._placed = 0

    def add_source(self, waiting: Callable[[], int]) -> None:
        """Register a count of callers that wait (or are about to wait) for a slot."""
        self._sources.append(waiting)

    def waiting(self, newcomers: int = 0) -> int:
        """Callers in the slot queue now, or about to be (plus ``newcomers``): those idle slots cannot take."""
        pending = sum(source() for source in self._sources) + newcomers
        return max(0, pending - self._capacity.idle_slots())

    def admit(self) -> None:
        """Raise :class:`OverLimit` when one more caller would make the queue longer than ``limit``."""
        if self.waiting(newcomers=1 + self._placed) > self.limit:
            raise OverLimit(QUEUE_FULL.format(limit=self.limit))

    @contextmanager
    def place(self) -> Iterator[None]:
        """:meth:`admit`, then count the caller as waiting until the block ends, by when a source counts it.

        Without this, a burst of requests would all pass the check while their rows are being written.
        """
        self.admit()
        self._placed += 1
        try:
            yield
        finally:
            self._placed -= 1


def queue_eta(position: int, recent_turn_seconds: Sequence[float], slots: int) -> int | None:
    """Seconds until the caller at ``position`` (1 = next) gets a slot: one median turn per round of ``slots``
    (spec §21.2); None before any turn finished."""
    if not recent_turn_seconds:
        return None
    return round(math.ceil(position / max(1, slots)) * statistics.median(recent_turn_seconds))
