"""Fixtures for slot tests: isolated settings, a slot index range nobody else uses, leak accounting."""

from __future__ import annotations

import os
import random
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.slots.layout import MAX_SLOT_INDEX, slot_layout
from openbrowse.slots.ledger import instance_id, tagged_processes

CHILDREN = Path(__file__).resolve().parents[2] / "fakes" / "children"
PYTHON = sys.executable

_DISPLAY_BINARIES = ("Xvfb", "x11vnc", "websockify")
_CHROMIUM = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser", "google-chrome")
MISSING = [name for name in _DISPLAY_BINARIES if shutil.which(name) is None]
if not any(shutil.which(name) for name in _CHROMIUM):
    MISSING.append("chromium")

needs_display = pytest.mark.skipif(bool(MISSING), reason=f"missing binaries: {', '.join(MISSING)}")


def child(name: str) -> str:
    return str(CHILDREN / name)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening_ports() -> set[int]:
    return {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN and c.laddr}


def _index_is_free(index: int, listening: set[int]) -> bool:
    layout = slot_layout(index)
    if any(port in listening for port in layout.ports):
        return False
    return not layout.x_lock_path.exists() and not layout.x_socket_path.exists()


def find_free_base_index(count: int) -> int:
    """A run of ``count`` slot indexes in 40..MAX whose displays and ports are unused (random start)."""
    listening = _listening_ports()
    candidates = list(range(40, MAX_SLOT_INDEX - count + 2))
    random.shuffle(candidates)
    for base in candidates:
        if all(_index_is_free(base + i, listening) for i in range(count)):
            return base
    raise RuntimeError("no free slot index range for the test")


@pytest.fixture
def base_index() -> int:
    return find_free_base_index(3)


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


def live_children() -> list[psutil.Process]:
    out = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
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


@pytest.fixture(autouse=True)
def _no_leftovers(settings: Settings) -> Iterator[None]:
    """Every test must reap what it started: no live or zombie children, no tagged processes."""
    yield
    assert instance_processes(settings) == []
    assert zombie_children() == []
    assert live_children() == []
