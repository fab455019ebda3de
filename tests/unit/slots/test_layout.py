from __future__ import annotations

from pathlib import Path

import pytest

from openbrowse.slots.layout import MAX_SLOT_INDEX, SlotLayout, slot_layout


def test_slot_zero_matches_the_spec() -> None:
    layout = slot_layout(0)
    assert layout.display == ":10"
    assert layout.display_number == 10
    assert layout.vnc_port == 5910
    assert layout.novnc_port == 6080
    assert layout.cdp_port == 9222
    assert layout.cdp_url == "http://127.0.0.1:9222"
    assert layout.ports == (5910, 6080, 9222)


def test_slot_three() -> None:
    layout = slot_layout(3)
    assert (layout.display, layout.vnc_port, layout.novnc_port, layout.cdp_port) == (":13", 5913, 6083, 9225)


def test_x_files() -> None:
    layout = slot_layout(2)
    assert layout.x_socket_path == Path("/tmp/.X11-unix/X12")
    assert layout.x_lock_path == Path("/tmp/.X12-lock")


def test_all_ports_of_all_slots_are_distinct() -> None:
    ports = [port for index in range(MAX_SLOT_INDEX + 1) for port in slot_layout(index).ports]
    assert len(ports) == len(set(ports))
    assert max(ports) <= 65535


@pytest.mark.parametrize("index", [-1, MAX_SLOT_INDEX + 1])
def test_out_of_range_index_is_refused(index: int) -> None:
    with pytest.raises(ValueError, match="outside"):
        SlotLayout(index)


def test_layout_is_a_frozen_value() -> None:
    assert slot_layout(1) == slot_layout(1)
    assert len({slot_layout(1), slot_layout(1), slot_layout(2)}) == 2
