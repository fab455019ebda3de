"""Pacing of read_pages tab opens (spec §11.2): only under real contention — at least two active sessions AND a
CPU stall fraction of at least 0.05 — each open is spaced by ``min(0.8 × stall, 8 / (waveSize − 1))`` seconds."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

PSI_FILE = Path("/proc/pressure/cpu")
MIN_STALL = 0.05
MIN_SESSIONS = 2
_active_runs = 0
"""Agent turns running now. Every engine runs on the API's event loop, one thread, so a plain counter needs no lock
(issue 24 removed the engine threads that raced on it)."""


@contextlib.contextmanager
def active_run() -> Iterator[None]:
    """Count a running agent turn (all sessions run in this process, on its event loop) while the block runs."""
    global _active_runs
    _active_runs += 1
    try:
        yield
    finally:
        _active_runs -= 1


def active_runs() -> int:
    return _active_runs


def cpu_stall(psi_file: Path = PSI_FILE) -> float:
    """The fraction of time some task waited for a CPU over the last 10 s (PSI ``some avg10``); 0 without PSI."""
    try:
        line = psi_file.read_text().splitlines()[0]
    except (OSError, IndexError):
        return 0.0
    for field in line.split():
        if field.startswith("avg10="):
            try:
                return float(field.removeprefix("avg10=")) / 100
            except ValueError:
                return 0.0
    return 0.0


def spacing_for(wave_size: int, active_sessions: int, stall: float) -> float:
    if active_sessions < MIN_SESSIONS or stall < MIN_STALL or wave_size < 2:
        return 0.0
    return min(0.8 * stall, 8 / (wave_size - 1))


def tab_spacing(wave_size: int, active_sessions: int) -> float:
    """Seconds between tab opens in a wave; a solo run never reads the PSI file nor waits."""
    if active_sessions < MIN_SESSIONS:
        return 0.0
    return spacing_for(wave_size, active_sessions, cpu_stall())
