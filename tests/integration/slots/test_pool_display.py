"""SlotPool with real browsers: leases start, release tears down, a crashed owner's slot is reclaimed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

import psutil
import pytest

from openbrowse.config import Settings
from openbrowse.errors import ProcessStartError
from openbrowse.slots.layout import slot_layout
from openbrowse.slots.ledger import LEDGER_NAME
from openbrowse.slots.pool import SlotPool
from tests.support.display import needs_display

from .conftest import PYTHON, child, instance_processes

pytestmark = [pytest.mark.display, needs_display]

REPO = Path(__file__).resolve().parents[3]


def _gone(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return True


def _listening(port: int) -> bool:
    return any(
        c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN for c in psutil.net_connections(kind="tcp")
    )


async def test_lease_starts_a_fresh_browser_each_time(settings: Settings, base_index: int) -> None:
    async with SlotPool(settings, base_index=base_index) as pool:
        urls = []
        for _ in range(2):
            async with pool.acquire("run") as lease:
                slot = await lease.start_browser(vnc=True)
                urls.append(slot.cdp_ws_url)
                ledger = json.loads((settings.run_dir / LEDGER_NAME).read_text())
                # no relay or forwarder for CDP or noVNC: the server reaches them itself (issue 31)
                assert {entry["kind"] for entry in ledger["processes"]} == {
                    "sandbox", "egress relay", "Xvfb", "x11vnc", "websockify", "Chromium",
                }  # fmt: skip
                assert ledger["user_data_dirs"] == [str(slot.directory)]
            assert instance_processes(settings) == []
        assert urls[0] != urls[1]
        ledger = json.loads((settings.run_dir / LEDGER_NAME).read_text())
        assert ledger["processes"] == []
        assert ledger["user_data_dirs"] == []


async def test_failed_launch_in_a_lease_frees_the_slot(settings: Settings, base_index: int, tmp_path: Path) -> None:
    fake = tmp_path / "fake-chrome"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    broken = Settings(OPENBROWSE_DATA_DIR=settings.data_dir, CHROME_BINARY=str(fake), MAX_CONCURRENT_SESSIONS=1)
    async with SlotPool(broken, base_index=base_index) as pool:
        with pytest.raises(ProcessStartError):
            async with pool.acquire("doomed") as lease:
                await lease.start_browser()
        assert pool.stats().free == 1
        assert instance_processes(settings) == []


async def test_sigkilled_owner_leaves_nothing_behind_for_the_next_pool(settings: Settings, base_index: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    holder = subprocess.Popen(
        [PYTHON, child("slot_holder.py"), str(settings.data_dir), str(base_index)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=REPO,
    )
    try:
        assert holder.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(holder.stdout.readline), 60)
        info = json.loads(line)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    layout = slot_layout(base_index)
    # Everything dies with its owner: the sandbox by bubblewrap's --die-with-parent, the host-side gates with the
    # process they are part of. Nothing is left for a peer to mistake for a live browser, or to hold the slot's ports.
    for pid in info["pids"]:  # reaped by PID 1, which may take a moment
        with contextlib.suppress(psutil.NoSuchProcess, psutil.TimeoutExpired):
            psutil.Process(pid).wait(10)
    assert all(_gone(pid) for pid in info["pids"])
    assert not _listening(layout.cdp_port)

    async with SlotPool(settings, base_index=base_index) as pool:
        assert pool.last_cleanup is not None  # the dead Xvfb's lock and socket files are what is left to clean
        assert not layout.x_lock_path.exists()
        assert not layout.x_socket_path.exists()
        assert not (settings.run_dir / "slots").exists()
        async with pool.acquire("fresh") as lease:
            slot = await lease.start_browser()
            assert slot.cdp_ws_url != info["cdp_ws_url"]
    assert instance_processes(settings) == []
