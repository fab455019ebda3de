"""Host CPU pressure thresholds (spec §10.1 step 8)."""

from __future__ import annotations

import pytest

from openbrowse.sessions.pressure import Pressure, classify_load, classify_psi, read_psi_avg10


@pytest.mark.parametrize(("avg10", "level"), [(0.0, None), (14.9, None), (15.0, "elevated"), (30.0, "saturated")])
def test_psi_levels(avg10: float, level: str | None) -> None:
    assert classify_psi(avg10) == level


@pytest.mark.parametrize(("load", "level"), [(0.5, None), (1.0, "elevated"), (1.24, "elevated"), (1.25, "saturated")])
def test_load_levels(load: float, level: str | None) -> None:
    assert classify_load(load) == level


def test_reads_psi_some_avg10() -> None:
    text = "some avg10=23.50 avg60=10.00 avg300=1.00 total=1\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    assert read_psi_avg10(text) == 23.5
    assert read_psi_avg10("") is None
    assert "elevated" in Pressure("elevated", "CPU stall 23% over 10 s").summary
