"""Time: one place that says what "now" is, so expiry and timestamps can be tested with an injected clock."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def to_wire(moment: datetime) -> str:
    """ISO-8601 UTC with offset and microseconds, e.g. ``2026-08-18T09:14:02.881234+00:00``."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def from_wire(text: str) -> datetime:
    return datetime.fromisoformat(text)


def iso_from_epoch(seconds: float) -> str:
    """Epoch seconds as :func:`to_wire` writes them."""
    return to_wire(datetime.fromtimestamp(seconds, UTC))
