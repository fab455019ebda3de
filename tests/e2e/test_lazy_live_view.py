"""Through the server: a browser nobody watches has no x11vnc/websockify; they come with the first viewer of
``/vnc/{id}/websockify`` and go after the last one leaves (spec §4.10 lazy start; issue 11)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import psutil
import pytest
import websockets
from websockets.typing import Subprotocol

from tests.e2e.browser_support import stack_processes
from tests.e2e.servers import running_server
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(240)]


def _live_view(server: ServerProcess) -> set[str]:
    names = set()
    for process in stack_processes(server):
        with contextlib.suppress(psutil.NoSuchProcess):  # it may exit while we look: that is the point
            names.add(process.name())
    return names & {"x11vnc", "websockify"}


async def test_the_live_view_runs_only_while_someone_watches(tmp_path: Path) -> None:
    with running_server(tmp_path / "home") as server:
        browser = loopback.post(f"{server.v3}/browsers", json={}, timeout=60).json()
        session_id = browser["id"]
        assert _live_view(server) == set()
        url = f"ws://127.0.0.1:{server.port}/vnc/{session_id}/websockify"
        async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=30) as ws:
            assert await asyncio.wait_for(ws.recv(), 30) == b"RFB 003.008\n"
            assert _live_view(server) == {"x11vnc", "websockify"}
        wait_until(lambda: not _live_view(server), 90, what="the live view to stop after its viewer left")
        assert loopback.get(f"{server.v3}/browsers/{session_id}", timeout=10).json()["status"] == "active"
        loopback.patch(f"{server.v3}/browsers/{session_id}", json={"action": "stop"}, timeout=60)
