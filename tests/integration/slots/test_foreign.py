"""Programs that are not ours on a slot's ports or display: never killed, never deleted, the slot is skipped.

A developer's own Chrome on 9222 (played here by a Python listener whose process name is ``chrome-dev``), an
X lock file of another program, and a start-up that runs as a non-root user next to processes it may not touch.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.errors import BrowserUnavailable
from openbrowse.slots.foreign import SlotBlocked
from openbrowse.slots.layout import slot_layout
from openbrowse.slots.ledger import LEDGER_NAME, cleanup_leftovers
from openbrowse.slots.pool import SlotPool
from openbrowse.slots.slot import Slot
from tests.support.ci_gate import required

from .conftest import PYTHON, instance_processes

_LISTENER = (
    "import socket, sys, time\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "print('listening', flush=True); time.sleep(120)\n"
)


def _spawn_named(tmp_path: Path, name: str, code: str, *args: str) -> subprocess.Popen[bytes]:
    """A Python process whose process name is ``name`` (a symlink to the interpreter), started and ready."""
    exe = tmp_path / name
    exe.symlink_to(PYTHON)
    popen = subprocess.Popen(
        [str(exe), "-c", code, *args], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True
    )
    assert popen.stdout is not None
    if not popen.stdout.readline().strip():  # not ready: reap it before failing
        _stop(popen)
        pytest.fail(f"{name} did not start (exit code {popen.returncode})")
    return popen


def _stop(popen: subprocess.Popen[bytes]) -> None:
    popen.kill()
    popen.wait()
    if popen.stdout is not None:
        popen.stdout.close()


@pytest.fixture
def foreign_chrome(tmp_path: Path, base_index: int) -> Iterator[subprocess.Popen[bytes]]:
    """Someone else's "Chrome" listening on slot ``base_index``'s CDP port."""
    popen = _spawn_named(tmp_path, "chrome-dev", _LISTENER, str(slot_layout(base_index).cdp_port))
    yield popen
    _stop(popen)


async def test_a_foreign_chrome_on_a_cdp_port_is_not_killed_and_its_slot_is_skipped(
    data_dir: Path, base_index: int, foreign_chrome: subprocess.Popen[bytes]
) -> None:
    settings = Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=2)
    cdp_port = slot_layout(base_index).cdp_port
    async with SlotPool(settings, base_index=base_index) as pool:
        assert foreign_chrome.poll() is None
        assert list(pool.blocked) == [base_index]
        assert f"port {cdp_port} is in use by chrome-dev (pid {foreign_chrome.pid})" in pool.blocked[base_index]
        lease = await pool.lease("run")
        assert lease.slot.index == base_index + 1  # the lowest *usable* slot
        await lease.release()
    assert foreign_chrome.poll() is None


async def test_a_pool_whose_only_slot_is_taken_says_why_and_recovers_when_it_is_free(
    settings: Settings, base_index: int, foreign_chrome: subprocess.Popen[bytes]
) -> None:
    async with SlotPool(settings, base_index=base_index) as pool:
        with pytest.raises(
            BrowserUnavailable, match=f"port {slot_layout(base_index).cdp_port} is in use by chrome-dev"
        ):
            await pool.lease("run")
        assert foreign_chrome.poll() is None
        _stop(foreign_chrome)
        lease = await pool.lease("run")  # checked again on the next request
        assert lease.slot.index == base_index
        assert pool.blocked == {}
        await lease.release()


async def test_a_slot_never_starts_next_to_a_foreign_listener(
    settings: Settings, base_index: int, foreign_chrome: subprocess.Popen[bytes]
) -> None:
    slot = Slot(settings, base_index)
    with pytest.raises(SlotBlocked, match="chrome-dev"):
        await slot.start()
    assert instance_processes(settings) == []
    assert foreign_chrome.poll() is None


async def test_a_foreign_x_lock_is_left_alone_and_blocks_the_display(
    settings: Settings, base_index: int, tmp_path: Path
) -> None:
    layout = slot_layout(base_index)
    holder = _spawn_named(tmp_path, "other-x", "import time; print('up', flush=True); time.sleep(120)")
    layout.x_lock_path.write_text(f"{holder.pid:>10}\n")
    try:
        async with SlotPool(settings, base_index=base_index) as pool:
            assert layout.x_lock_path.read_text().strip() == str(holder.pid)
            assert f"display {layout.display} is in use by other-x" in pool.blocked[base_index]
        assert holder.poll() is None
    finally:
        layout.x_lock_path.unlink(missing_ok=True)
        _stop(holder)


def _nobody_can_run_python() -> bool:
    probe = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PYTHON, "-c", "import openbrowse.slots"],
        capture_output=True,
        check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    return probe.returncode == 0


@required(None if os.geteuid() == 0 else "needs root to start a process as another user")
def test_permission_errors_never_stop_a_non_root_start_up(base_index: int) -> None:
    """Run the start-up cleanup as ``nobody`` next to a root process and a root-owned X lock it recorded."""
    if not _nobody_can_run_python():
        pytest.skip("the interpreter is not usable by the nobody user here")
    layout = slot_layout(base_index)
    root_sleeper = subprocess.Popen([PYTHON, "-c", "import time; time.sleep(120)"], start_new_session=True)
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_dir = Path(tempfile.mkdtemp(prefix="openbrowse-nobody-"))
    try:
        info = psutil.Process(root_sleeper.pid)
        entries = [
            {"pid": info.pid, "create_time": info.create_time(), "name": info.name(), "argv0": PYTHON,
             "kind": "Chromium", "slot": base_index},
            {"pid": dead.pid, "create_time": 1.0, "name": "Xvfb", "argv0": "Xvfb", "kind": "Xvfb", "slot": base_index},
        ]  # fmt: skip
        (run_dir / LEDGER_NAME).write_text(json.dumps({"owner": {}, "processes": entries, "user_data_dirs": []}))
        os.chmod(run_dir, 0o777)
        layout.x_lock_path.write_text(f"{dead.pid:>10}\n")  # root's file in sticky /tmp: nobody may not delete it
        code = (
            "import sys; from pathlib import Path; from openbrowse.slots.ledger import cleanup_leftovers;"
            "run = Path(sys.argv[1]); print(cleanup_leftovers(run / sys.argv[2], run, run / 'slots'))"
        )
        result = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                PYTHON,
                "-c",
                code,
                str(run_dir),
                LEDGER_NAME,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=Path(__file__).resolve().parents[3],
        )
        assert result.returncode == 0, result.stderr
        assert "Could not remove" in result.stderr
        assert root_sleeper.poll() is None  # not ours to kill as nobody; no crash either
        assert layout.x_lock_path.exists()
        # the same ledger as root: the recorded lock is ours and goes
        report = cleanup_leftovers(run_dir / LEDGER_NAME, run_dir, run_dir / "slots")
        assert str(layout.x_lock_path) in report.removed_files
        assert root_sleeper.wait(5) == -9
    finally:
        layout.x_lock_path.unlink(missing_ok=True)
        root_sleeper.kill()
        root_sleeper.wait()
        subprocess.run(["rm", "-rf", str(run_dir)], check=False)
