"""Slot isolation: the VNC stream only through websockify with the slot's secret; no local files in the browser."""

from __future__ import annotations

import asyncio
import json
import socket
import stat
from pathlib import Path
from typing import Any

import psutil
import pytest
import websockets
from websockets.typing import Subprotocol

from openbrowse.config import Settings
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.slot import Slot
from tests.support.display import needs_display

from .conftest import instance_command_lines, program_of

pytestmark = [pytest.mark.display, needs_display]


async def _greeting(url: str) -> bytes | None:
    """The first frame websockify relays from x11vnc, or None when the connection is refused."""
    try:
        async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
            first = await asyncio.wait_for(ws.recv(), 10)
    except (websockets.InvalidHandshake, websockets.ConnectionClosed, OSError):
        return None
    return first if isinstance(first, bytes) else first.encode()


async def test_the_vnc_stream_needs_the_slots_secret_and_has_no_tcp_port(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        plain = f"ws://127.0.0.1:{slot.novnc_port}/websockify"
        assert await _greeting(plain) is None
        assert await _greeting(plain + "?token=guess") is None
        assert await _greeting(slot.novnc_ws_url) == b"RFB 003.008\n"

        x11vnc = program_of(next(p for p in slot.processes() if p.name == "x11vnc").pid)
        tcp = [c for c in x11vnc.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN]
        assert tcp == []
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", slot.vnc_port)) != 0

        # x11vnc's socket is in the slot's private socket folder (inside the sandbox's own network namespace)
        folder = slot.confinement.socket_dir
        assert (folder / f"{slot.index}.sock").is_socket()
        assert "-unixsock" in x11vnc.cmdline()
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        # the token file is the server's, in the slot's read-only seam dir, readable by the slot's group only
        seam = slot.confinement.seam.path
        uid = slot.confinement.uid
        assert (seam.stat().st_uid, seam.stat().st_gid, stat.S_IMODE(seam.stat().st_mode)) == (0, uid, 0o750)
        tokens = [p for p in seam.iterdir() if p.suffix == ".tokens"]
        assert tokens
        assert all(
            (p.stat().st_uid, p.stat().st_gid, stat.S_IMODE(p.stat().st_mode)) == (0, uid, 0o640) for p in tokens
        )
        secret = slot.novnc_ws_url.rsplit("token=", 1)[1]
        assert all(secret not in arg for line in instance_command_lines(settings) for arg in line)
    assert not any(folder.glob("*.sock"))


async def _cdp(ws: Any, counter: list[int], method: str, params: dict[str, Any], session: str | None = None) -> Any:
    counter[0] += 1
    message: dict[str, Any] = {"id": counter[0], "method": method, "params": params}
    if session is not None:
        message["sessionId"] = session
    await ws.send(json.dumps(message))
    while True:
        reply = json.loads(await asyncio.wait_for(ws.recv(), 20))
        if reply.get("id") == counter[0]:
            assert "error" not in reply, reply
            return reply["result"]


async def _read_through_browser(ws_url: str, url: str, *, new_context: bool) -> str:
    """Open ``url`` in a new tab (optionally in a fresh browser context, as Playwright's new_context does) and
    return what the page shows: its location and text."""
    counter = [0]
    async with websockets.connect(ws_url, max_size=None) as ws:
        params: dict[str, Any] = {"url": "about:blank"}
        if new_context:
            params["browserContextId"] = (await _cdp(ws, counter, "Target.createBrowserContext", {}))[
                "browserContextId"
            ]
        target = (await _cdp(ws, counter, "Target.createTarget", params))["targetId"]
        session = (await _cdp(ws, counter, "Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        await _cdp(ws, counter, "Page.enable", {}, session)
        navigation = await _cdp(ws, counter, "Page.navigate", {"url": url}, session)
        assert navigation.get("errorText") == "net::ERR_BLOCKED_BY_ADMINISTRATOR", (url, navigation)
        shown = ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while loop.time() < deadline:  # until the navigation has committed (the blocked page or the file)
            result = await _cdp(
                ws,
                counter,
                "Runtime.evaluate",
                {
                    "expression": "location.href + '\\n' + (document.body ? document.body.innerText : '')",
                    "returnByValue": True,
                },
                session,
            )
            shown = str(result["result"].get("value", ""))
            if not shown.startswith("about:blank"):
                break
            await asyncio.sleep(0.1)
        await _cdp(ws, counter, "Target.closeTarget", {"targetId": target})
        return shown


@pytest.mark.parametrize("new_context", [False, True])
async def test_the_browser_cannot_read_local_files(settings: Settings, base_index: int, new_context: bool) -> None:
    secret_file = settings.data_dir / ".env"
    secret_file.parent.mkdir(parents=True, exist_ok=True)
    secret_file.write_text("API_KEY=do-not-leak-7f3a\n")
    hostname = Path("/etc/hostname").read_text().strip()
    async with Slot(settings, base_index) as slot:
        for url in (secret_file.as_uri(), "file:///etc/hostname", f"view-source:{secret_file.as_uri()}", "file:///"):
            shown = await _read_through_browser(slot.cdp_ws_url, url, new_context=new_context)
            assert shown.startswith("chrome-error://"), (url, shown)
            assert "do-not-leak-7f3a" not in shown
            assert not hostname or hostname not in shown.split("\n", 1)[1]
        status, _ = await loopback_http_json(slot.cdp_port, "/json/version")
        assert status == 200  # the browser itself is fine


async def test_a_web_page_cannot_open_the_cdp_socket(settings: Settings, base_index: int) -> None:
    """What keeps pages (not local processes) off the unauthenticated CDP port: Chromium refuses a DevTools
    WebSocket that carries an Origin, which every page's WebSocket does."""
    async with Slot(settings, base_index) as slot:
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with websockets.connect(slot.cdp_ws_url, origin=websockets.Origin("http://evil.example")):
                pass
        assert refused.value.response.status_code == 403
        async with websockets.connect(slot.cdp_ws_url) as ws:  # a local client without an Origin (browser-use)
            await ws.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
            assert json.loads(await asyncio.wait_for(ws.recv(), 20))["id"] == 1
