"""Fixtures for slot tests: isolated settings, a slot index range nobody else uses, leak accounting."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.slots.ledger import instance_id, tagged_processes
from openbrowse.slots.seam import seam_dir
from openbrowse.slots.slot_files import scratch_root
from tests.support.display import MISSING, needs_display
from tests.support.ports import free_port
from tests.support.server import started_by_a_module
from tests.support.slot_range import free_slot_base, release_slot_base

CHILDREN = Path(__file__).resolve().parents[2] / "fakes" / "children"
PYTHON = sys.executable

__all__ = ["MISSING", "free_port", "needs_display"]  # re-exported from tests.support for the older imports


def child(name: str) -> str:
    return str(CHILDREN / name)


@pytest.fixture
def base_index() -> Iterator[int]:
    """Three slot indexes whose displays and ports are unused, reserved (lock files) for the test."""
    base = free_slot_base(3)
    yield base
    release_slot_base(base)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def settings(data_dir: Path) -> Settings:
    return Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=1)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def instance_processes(settings: Settings) -> list[psutil.Process]:
    """Live processes started for this settings' run dir (they all carry its tag)."""
    return tagged_processes(instance_id(settings.run_dir))


def instance_command_lines(settings: Settings) -> list[list[str]]:
    """The command lines of this run's processes that are still running (one that exits meanwhile has none left)."""
    lines = []
    for proc in instance_processes(settings):
        with contextlib.suppress(psutil.NoSuchProcess):  # ZombieProcess is one too
            lines.append(proc.cmdline())
    return lines


def live_children() -> list[psutil.Process]:
    """This process's live descendants, but for the servers it keeps across modules (and what runs under them)."""
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and started_by_a_module(proc):
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def zombie_children() -> list[psutil.Process]:
    out = []
    for proc in psutil.Process().children():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def instance_dirs_left(settings: Settings) -> list[str]:
    """Remove this instance's parents in ``/run/openbrowse`` (its seam and scratch dirs'), which a pool removes when it
    closes but a lone :class:`Slot` does not (another slot of the instance may be starting in them); what is left in
    them, which every slot must have removed itself."""
    left: list[str] = []
    for parent in (seam_dir(settings.run_dir, 0).parent, scratch_root(settings.run_dir)):
        try:
            os.rmdir(parent)
        except FileNotFoundError:
            continue
        except OSError:
            left += [str(path) for path in sorted(parent.rglob("*"))] or [str(parent)]
    return left


@pytest.fixture(autouse=True)
def _no_leftovers(settings: Settings) -> Iterator[None]:
    """Every test must reap what it started: no live or zombie children, no tagged processes, nothing of its
    instance in ``/run/openbrowse``."""
    yield
    assert instance_processes(settings) == []
    assert zombie_children() == []
    assert live_children() == []
    assert instance_dirs_left(settings) == []
    assert not seam_dir(settings.run_dir, 0).parent.exists() and not scratch_root(settings.run_dir).exists()


def program_of(pid: int) -> psutil.Process:
    """The program a slot child runs: a sandboxed child's pid is the ``nsenter`` that forked it into the sandbox."""
    process = psutil.Process(pid)
    while process.name() in {"nsenter", "sh"}:
        children = process.children()
        if not children:
            break
        process = children[0]
    return process
