"""Numbers in a control call's query or body: other scripts' digits are refused, not read as a number."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import pytest

from openbrowse.control.call import ControlCall
from openbrowse.control.errors import ControlError

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine


def call(**query: str) -> ControlCall:
    return ControlCall(engine=cast("ControlEngine", None), query=query)


@pytest.mark.parametrize("written", ["٣", "²", "１", "3٣"])
def test_a_number_written_with_other_digits_is_refused(written: str) -> None:
    with pytest.raises(ControlError) as caught:
        call(timeoutMs=written).number("timeoutMs")
    assert caught.value.status < 500
    assert "timeoutMs must be a number" in caught.value.message


@pytest.mark.parametrize(("written", "read"), [("3", 3.0), ("2.5", 2.5), ("-1", -1.0)])
def test_a_number_written_with_ascii_digits_is_read(written: str, read: float) -> None:
    assert call(timeoutMs=written).number("timeoutMs") == read


def test_a_json_number_is_read_as_it_is() -> None:
    assert ControlCall(engine=cast("ControlEngine", None), body={"x": 7}).number("x") == 7.0
