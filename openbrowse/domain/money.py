"""Money on the wire: decimal strings, plain notation, at most 8 decimals, trailing zeros trimmed."""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal

_EIGHT_PLACES = Decimal("0.00000001")
_CENT = Decimal("0.01")


def to_decimal(value: Decimal | float | int | str | None) -> Decimal:
    if value is None:
        return Decimal(0)
    if isinstance(value, Decimal):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("money must be finite")
        return Decimal(repr(value))
    return Decimal(value)


def format_usd(value: Decimal | float | int | str | None) -> str:
    """``"0"`` for zero, else plain notation with at most 8 decimals and no trailing zeros."""
    amount = to_decimal(value).quantize(_EIGHT_PLACES, rounding=ROUND_HALF_EVEN)
    if amount == 0:
        return "0"
    text = format(amount, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def ceil_cents(value: Decimal | float | int | str) -> Decimal:
    """Round up to the next cent: ``ceil(value × 100) / 100``."""
    return to_decimal(value).quantize(_CENT, rounding=ROUND_CEILING)
