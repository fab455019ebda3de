"""Numbers from outside are ASCII digits only: every other script's digits are a 400 naming the value."""

from __future__ import annotations

import pytest

from openbrowse.domain.ascii_numbers import ascii_int, is_ascii_digits
from openbrowse.errors import MalformedRequest


@pytest.mark.parametrize("text", ["²", "٣", "１", "", "-1", "+1", " 1", "1.0", "1_000", "9" * 19])
def test_anything_but_ascii_digits_is_refused_with_the_value_named(text: str) -> None:
    with pytest.raises(MalformedRequest, match=r"^The count must be a whole number written with the digits 0-9\.$"):
        ascii_int(text, what="The count")


@pytest.mark.parametrize(("text", "value"), [("0", 0), ("17", 17), ("007", 7), ("9" * 18, 10**18 - 1)])
def test_ascii_digits_are_read(text: str, value: int) -> None:
    assert is_ascii_digits(text) and ascii_int(text, what="x") == value
