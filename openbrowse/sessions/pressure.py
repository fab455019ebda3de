"""Host CPU pressure at launch (spec §10.1 step 8): warn when embed-heavy reads may fail for environmental reasons.

Uses PSI (``/proc/pressure/cpu``, ``some avg10``): ≥15 % elevated, ≥30 % saturated. Without PSI, the 1-minute
load average per core: ≥1.0 elevated, ≥1.25 saturated.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PSI_FILE = Path("/proc/pressure/cpu")
PSI_ELEVATED, PSI_SATURATED = 15.0, 30.0
LOAD_ELEVATED, LOAD_SATURATED = 1.0, 1.25


@dataclass(frozen=True, slots=True)
class Pressure:
    level: str  # "elevated" or "saturated"
    measure: str  # what was measured, for the feed

    @property
    def summary(self) -> str:
        return (
            f"Host CPU pressure is {self.level} ({self.measure}): pages with heavy embeds may load slowly or fail "
            "to read for reasons outside the task"
        )


def classify_psi(avg10: float) -> str | None:
    if avg10 >= PSI_SATURATED:
        return "saturated"
    return "elevated" if avg10 >= PSI_ELEVATED else None


def classify_load(load_per_core: float) -> str | None:
    if load_per_core >= LOAD_SATURATED:
        return "saturated"
    return "elevated" if load_per_core >= LOAD_ELEVATED else None


def read_psi_avg10(text: str) -> float | None:
    for line in text.splitlines():
        if line.startswith("some "):
            for field in line.split()[1:]:
                key, _, value = field.partition("=")
                if key == "avg10":
                    return float(value)
    return None


def host_pressure() -> Pressure | None:
    """The current CPU pressure if it is elevated or saturated (blocking: reads /proc)."""
    try:
        avg10 = read_psi_avg10(PSI_FILE.read_text())
    except OSError:
        avg10 = None
    if avg10 is not None:
        level = classify_psi(avg10)
        return Pressure(level, f"CPU stall {avg10:.0f}% over 10 s") if level else None
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    level = classify_load(per_core)
    return Pressure(level, f"load {per_core:.2f} per core") if level else None
