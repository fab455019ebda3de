"""When a raw-browser create finds every slot busy (spec §21.2): what counts as free, how long it may wait."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from openbrowse.sessions.browser_capacity import (
    EVICTION_GRACE_S,
    START_GRACE_S,
    CapacityExceeded,
    CapacityRequest,
    capacity_now,
    estimate_eta,
    lease_timeout,
)

NOW = datetime(2026, 8, 18, 9, 0, tzinfo=UTC)


@dataclass
class Stats:
    parked: int = 0
    queued: int = 0


@dataclass
class Pool:
    idle: int = 0
    parked: int = 0
    queued: int = 0
    eviction_timeout: float = 30.0

    def idle_slots(self) -> int:
        return self.idle

    def stats(self) -> Stats:
        return Stats(self.parked, self.queued)

    def queue_position(self, owner: str) -> int | None:
        return None


@pytest.mark.parametrize(
    ("pool", "free"),
    [
        (Pool(idle=1), True),
        (Pool(), False),
        (Pool(parked=1), True),  # a parked keep-alive session is evicted for us
        (Pool(parked=1, queued=1), False),  # ... unless someone queued first claims it
        (Pool(parked=2, queued=1), True),
    ],
)
def test_what_counts_as_a_free_slot(pool: Pool, free: bool) -> None:
    assert capacity_now(pool) is free


def test_how_long_a_create_that_does_not_queue_waits() -> None:
    assert lease_timeout(Pool(), CapacityRequest()) == 0
    assert lease_timeout(Pool(), CapacityRequest(wait_ms=2500)) == 2.5
    assert lease_timeout(Pool(idle=1), CapacityRequest()) == START_GRACE_S
    assert lease_timeout(Pool(parked=1), CapacityRequest(wait_ms=1000)) == 30.0 + EVICTION_GRACE_S


def test_eta_is_the_nth_known_end_or_the_queue_expiry() -> None:
    ends = [NOW + timedelta(seconds=40), NOW + timedelta(seconds=10)]
    expires = NOW + timedelta(seconds=100)
    assert estimate_eta(1, ends, NOW, expires) == 10
    assert estimate_eta(2, ends, NOW, expires) == 40
    assert estimate_eta(3, ends, NOW, expires) == 100
    assert estimate_eta(1, [NOW + timedelta(seconds=500)], NOW, expires) == 100


def test_the_refusal_says_what_to_do() -> None:
    refused = CapacityExceeded(2000)
    assert refused.code == "capacity_exceeded"
    assert refused.message == (
        "Every browser slot is busy after waiting 2 s; retry later, or pass waitForCapacityMs or queueForCapacity."
    )
