"""Numbers written in a URL, a header or a token: ASCII digits only.

``int()`` and ``str.isdigit()`` accept every Unicode digit: ``"²".isdigit()`` is true yet ``int("²")`` raises,
and ``int("٣")`` is 3. A number that arrives from outside is therefore checked here, once, and anything but
``0``-``9`` is a :class:`MalformedRequest` (a 400 that says which value was wrong), never a 500 and never a number
the client did not write in the digits everyone else reads.
"""

from __future__ import annotations

from openbrowse.errors import MalformedRequest

__all__ = ["ascii_int", "is_ascii_digits"]

MAX_DIGITS = 18
"""Longer is no count, offset or time this service uses (and stays inside SQLite's int64)."""


def is_ascii_digits(text: str) -> bool:
    """``text`` is one or more of ``0``-``9`` and nothing else (no sign, no space, no other script's digits)."""
    return text.isascii() and text.isdigit()


def ascii_int(text: str, *, what: str) -> int:
    """``text`` as a non-negative integer; :class:`MalformedRequest` naming ``what`` for anything else."""
    if not is_ascii_digits(text) or len(text) > MAX_DIGITS:
        raise MalformedRequest(f"{what} must be a whole number written with the digits 0-9.")
    return int(text)
