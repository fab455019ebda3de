"""Start-up cleanup: only our leftovers are killed (pid + start time + name, or our environment tag)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.slots.layout import slot_layout
from openbrowse.slots.ledger import (
    LEDGER_NAME,
    TAG_ENV,
    LedgerEntry,
    cleanup_leftovers,
    instance_id,
    remove_recorded_x_files,
)
from openbrowse.slots.pool import SlotPool

from .conftest import PYTHON


def _sleeper(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PYTHON, "-c", "import time; time.sleep(60)"], env=env, start_new_session=True, stdin=subprocess.DEVNULL
    )


def _write_ledger(settings: Settings, proc: psutil.Process, *, create_time: float, name: str) -> Path:
    settings.run_dir.mkdir(parents=True, exist_ok=True)
    path = settings.run_dir / LEDGER_NAME
    entry = {"pid": proc.pid, "create_time": create_time, "name": name, "argv0": PYTHON, "kind": "Xvfb", "slot": 0}
    path.write_text(json.dumps({"owner": {"pid": 1, "create_time": 0}, "processes": [entry], "user_data_dirs": []}))
    return path


def _reap(popen: subprocess.Popen[bytes], within: float = 5.0) -> int | None:
    try:
        return popen.wait(within)
    except subprocess.TimeoutExpired:
        popen.kill()
        popen.wait()
        return None


@pytest.mark.parametrize(
    ("time_shift", "name_ok", "killed"), [(0.0, True, True), (-100.0, True, False), (0.0, False, False)]
)
def test_ledger_entries_are_verified_before_killing(
    settings: Settings, base_index: int, time_shift: float, name_ok: bool, killed: bool
) -> None:
    popen = _sleeper()
    try:
        proc = psutil.Process(popen.pid)
        name = proc.name() if name_ok else "Xvfb"
        ledger = _write_ledger(settings, proc, create_time=proc.create_time() + time_shift, name=name)
        report = cleanup_leftovers(ledger, settings.run_dir, settings.run_dir / "slots")
        if killed:
            assert _reap(popen) == -9
            assert report.killed
        else:
            time.sleep(0.1)
            assert popen.poll() is None  # a reused pid is never killed
            assert report.killed == []
    finally:
        popen.kill()
        popen.wait()


def test_processes_with_our_tag_are_killed_and_others_are_not(settings: Settings, base_index: int) -> None:
    ours = _sleeper({**os.environ, TAG_ENV: f"{instance_id(settings.run_dir)}/{base_index}"})
    theirs = _sleeper({**os.environ, TAG_ENV: f"{instance_id(settings.run_dir / 'other')}/{base_index}"})
    try:
        time.sleep(0.2)  # let the environment settle after exec
        report = cleanup_leftovers(settings.run_dir / LEDGER_NAME, settings.run_dir, settings.run_dir / "slots")
        assert _reap(ours) == -9
        assert theirs.poll() is None
        assert len(report.killed) == 1
    finally:
        for popen in (ours, theirs):
            popen.kill()
            popen.wait()


@pytest.mark.parametrize("recorded", [True, False])
def test_only_an_x_lock_our_recorded_xvfb_wrote_is_removed(settings: Settings, base_index: int, recorded: bool) -> None:
    layout = slot_layout(base_index)
    dead = subprocess.Popen(["true"])
    dead.wait()
    layout.x_socket_path.parent.mkdir(mode=0o1777, exist_ok=True)
    layout.x_lock_path.write_text(f"{dead.pid:>10}\n")
    layout.x_socket_path.touch()
    entries = [LedgerEntry(dead.pid, 1.0, "Xvfb", "Xvfb", "Xvfb", base_index)] if recorded else []
    try:
        removed = remove_recorded_x_files(entries)
        if recorded:
            assert sorted(removed) == sorted([str(layout.x_lock_path), str(layout.x_socket_path)])
            assert not layout.x_lock_path.exists()
            assert not layout.x_socket_path.exists()
        else:  # not ours: left alone (Xvfb itself replaces a lock whose writer is dead)
            assert removed == []
            assert layout.x_lock_path.exists()
    finally:
        layout.x_lock_path.unlink(missing_ok=True)
        layout.x_socket_path.unlink(missing_ok=True)


@pytest.mark.parametrize("answering", [False, True])
def test_the_dead_socket_of_a_recorded_xvfb_without_a_lock_file_is_removed(base_index: int, answering: bool) -> None:
    """Xvfb started with -displayfd writes no lock file: its socket alone is what a SIGKILL leaves behind."""
    layout = slot_layout(base_index)
    dead = subprocess.Popen(["true"])
    dead.wait()
    layout.x_socket_path.parent.mkdir(mode=0o1777, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(layout.x_socket_path))  # bound, then closed unless answering: a dead socket file stays
    if answering:  # another X server took the display since: never touched
        listener.listen()
    else:
        listener.close()
    try:
        removed = remove_recorded_x_files([LedgerEntry(dead.pid, 1.0, "Xvfb", "Xvfb", "Xvfb", base_index)])
        assert removed == ([] if answering else [str(layout.x_socket_path)])
        assert layout.x_socket_path.exists() is answering
    finally:
        listener.close()
        layout.x_socket_path.unlink(missing_ok=True)


async def test_pool_start_wipes_stale_user_data_dirs(settings: Settings, base_index: int) -> None:
    stale = settings.run_dir / "slots" / f"slot-{base_index}" / "user-data"
    stale.mkdir(parents=True)
    (stale / "Cookies").write_text("old")
    async with SlotPool(settings, base_index=base_index) as pool:
        assert not stale.exists()
        assert pool.last_cleanup is not None
        assert str(settings.run_dir / "slots") in pool.last_cleanup.wiped_dirs
        ledger = json.loads((settings.run_dir / LEDGER_NAME).read_text())
        assert ledger["processes"] == []
        assert ledger["owner"]["pid"] == os.getpid()


def test_group_of_a_dead_ledger_leader_is_swept(settings: Settings, base_index: int, tmp_path: Path) -> None:
    """Chromium helpers overwrite their environment with their process title, so the tag misses them; they are
    found as members of the dead leader's process group."""
    leader_exe = tmp_path / "chromium-leader"
    helper_exe = tmp_path / "chromium-helper"
    leader_exe.symlink_to(PYTHON)
    helper_exe.symlink_to(PYTHON)
    code = (
        "import subprocess, sys, time;"
        f"h = subprocess.Popen([{str(helper_exe)!r}, '-c', 'import time; time.sleep(60)']);"
        "print(h.pid, flush=True); time.sleep(60)"
    )
    leader = subprocess.Popen(
        [str(leader_exe), "-c", code], stdout=subprocess.PIPE, start_new_session=True, stdin=subprocess.DEVNULL
    )
    assert leader.stdout is not None
    helper_pid = int(leader.stdout.readline())
    helper = psutil.Process(helper_pid)
    try:
        info = psutil.Process(leader.pid)
        ledger = _write_ledger(settings, info, create_time=info.create_time(), name=info.name())
        leader.kill()  # the leader only: its helper stays behind in the group
        leader.wait()
        leader.stdout.close()
        assert helper.is_running()
        report = cleanup_leftovers(ledger, settings.run_dir, settings.run_dir / "slots")
        assert len(report.killed) == 1
        helper.wait(5)  # reaped by init; gone
    finally:
        with contextlib.suppress(psutil.Error):
            helper.kill()
