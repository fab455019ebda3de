"""Human takeover of a raw browser (spec §21.5), end to end against a real server and a real Chromium on a display.

Input is sent as a VNC client would send it (RFB pointer and key events over the proxied socket), and the remote
page records what reaches it. Which connection's input arrives is the point: the takeover link's, while the
browser is paused; never a plain ``liveUrl`` viewer's, a wrong or old token's, or anyone's after the resume.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import websockets
from browser_use_sdk.generated.v3.models import BrowserSessionView
from playwright.async_api import async_playwright
from websockets.asyncio.client import ClientConnection
from websockets.typing import Subprotocol

from tests.e2e.browser_support import cdp_evaluate, cdp_navigate, create_browser, stop_browser
from tests.e2e.servers import SHARED_API_KEY, raw_browser, server_fixture
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.server import ServerProcess
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY
CHROMIUM = "/usr/bin/chromium"
RECORDER = """
window.__seen = [];
addEventListener("keydown", (e) => window.__seen.push("key:" + e.key), true);
addEventListener("mousedown", () => window.__seen.push("click"), true);
"""


# one server for the raw-browser modules that need no fresh one, in this test process (tests/e2e/servers.py)
server = server_fixture({"API_KEY": API_KEY}, shared=True)


@pytest.fixture
def browser(http: httpx.Client, pages: ThreadedServer) -> Iterator[dict[str, Any]]:
    """A raw browser showing the text page, with a recorder of the key presses and clicks the page receives."""
    with raw_browser(http) as created:
        cdp_navigate(created["cdpUrl"], f"{pages.url}/hello")
        cdp_evaluate(created["cdpUrl"], RECORDER)
        yield created


def seen(browser: dict[str, Any]) -> list[str]:
    return list(cdp_evaluate(browser["cdpUrl"], "window.__seen") or [])


def wait_seen(browser: dict[str, Any], expected: list[str], timeout: float = 10.0) -> None:
    wait_for(lambda: seen(browser) == expected, timeout, interval=0.1, what=f"the page seeing {expected}")


def socket_url(server: ServerProcess, page_url: str) -> str:
    """The viewer's socket for a ``liveUrl`` or ``takeoverUrl`` path, with the same query as the page passes on."""
    query = parse_qs(urlsplit(page_url).query)
    params = "&".join(f"{name}={query[name][0]}" for name in ("token", "takeover") if name in query)
    return f"ws://127.0.0.1:{server.port}/{query['path'][0]}?{params}"


class RfbClient:
    """Just enough of an RFB 3.8 client to send input: handshake, then pointer and key events."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._buffer = b""

    async def _read(self, count: int) -> bytes:
        while len(self._buffer) < count:
            frame = await asyncio.wait_for(self.ws.recv(), 10)
            assert isinstance(frame, bytes)
            self._buffer += frame
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    async def handshake(self) -> None:
        assert await self._read(12) == b"RFB 003.008\n"
        await self.ws.send(b"RFB 003.008\n")
        (count,) = await self._read(1)
        assert 1 in await self._read(count)
        await self.ws.send(b"\x01")
        assert await self._read(4) == b"\x00\x00\x00\x00"
        await self.ws.send(b"\x01")  # shared
        await self._read(20)  # width, height, pixel format
        (name_length,) = struct.unpack(">I", await self._read(4))
        await self._read(name_length)

    async def click(self, x: int = 400, y: int = 300) -> None:
        for mask in (0, 1, 0):  # move, press, release: one frame, three messages
            await self.ws.send(b"\x05" + bytes([mask]) + struct.pack(">HH", x, y))

    async def key(self, keysym: int) -> None:
        press = b"\x04\x01\x00\x00" + struct.pack(">I", keysym)
        await self.ws.send(press + b"\x04\x00\x00\x00" + struct.pack(">I", keysym))  # down and up in one frame


@asynccontextmanager
async def rfb(url: str) -> AsyncIterator[RfbClient]:
    async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
        client = RfbClient(ws)
        await client.handshake()
        yield client


async def drain(ws: ClientConnection) -> None:
    while True:
        await asyncio.wait_for(ws.recv(), 10)


def pause(http: httpx.Client, browser_id: str, **body: Any) -> dict[str, Any]:
    answer = http.post(f"/v3/browsers/{browser_id}/pause", json=body)
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


# -- the API ---------------------------------------------------------------------------------------------------
def test_pause_and_resume_a_raw_browser(server: ServerProcess, http: httpx.Client, browser: dict[str, Any]) -> None:
    browser_id = browser["id"]
    paused = pause(http, browser_id, reason="log in")
    BrowserSessionView.model_validate(paused)
    assert paused["state"] == "paused" and paused["status"] == "active"
    assert paused["pause"]["state"] == "paused" and paused["pause"]["reason"] == "log in"
    assert paused["pause"]["by"] == "user" and paused["pause"]["pausedAt"] == paused["pause"]["requestedAt"]
    takeover_url = paused["takeoverUrl"]
    assert takeover_url.startswith(paused["liveUrl"] + "&takeover=")
    again = pause(http, browser_id)  # idempotent: same pause, same link
    assert again["takeoverUrl"] == takeover_url and again["pause"]["reason"] == "log in"
    assert http.get(f"/v3/browsers/{browser_id}").json()["takeoverUrl"] == takeover_url

    page = loopback.get(f"{server.base_url}{takeover_url}")
    assert page.status_code == 200 and "Hand back to agent" in page.text
    assert f'"resumePath": "/v3/browsers/{browser_id}/resume"' in page.text
    assert '"resumePath": null' in loopback.get(f"{server.base_url}{paused['liveUrl']}").text
    assert "unsafe" not in page.headers["content-security-policy"]

    resume_path = f"{server.base_url}/v3/browsers/{browser_id}/resume"
    wrong = loopback.post(resume_path, json={}, headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 401
    token = parse_qs(urlsplit(takeover_url).query)["takeover"][0]
    resumed = loopback.post(resume_path, json={"note": "done"}, headers={"Authorization": f"Bearer {token}"})
    assert resumed.status_code == 200, resumed.text
    BrowserSessionView.model_validate(resumed.json())
    assert resumed.json()["state"] == "live" and resumed.json()["pause"] is None
    assert resumed.json()["takeoverUrl"] is None
    not_paused = http.post(f"/v3/browsers/{browser_id}/resume", json={})
    assert not_paused.status_code == 422 and not_paused.json()["code"] == "session_not_paused"
    # the closed token authorises nothing any more, not even the resume it was for
    assert loopback.post(resume_path, json={}, headers={"Authorization": f"Bearer {token}"}).status_code == 401
    assert http.post(f"/v3/browsers/{browser_id}/pause", json={"reason": 5}).status_code == 422


def test_a_stopped_browser_cannot_be_paused(http: httpx.Client) -> None:
    created = create_browser(http)
    stop_browser(http, created["id"])
    refused = http.post(f"/v3/browsers/{created['id']}/pause", json={})
    assert refused.status_code == 422 and refused.json()["code"] == "session_not_pausable"
    assert refused.json()["detail"] == "Browser is stopped"
    assert http.post("/v3/browsers/no-such-browser/pause", json={}).status_code == 404


# -- input through the bridge ----------------------------------------------------------------------------------
async def test_only_the_takeover_link_sends_input_and_only_while_paused(
    server: ServerProcess, http: httpx.Client, browser: dict[str, Any]
) -> None:
    # Input that must be dropped is followed by input that must pass, on the same display: the page seeing exactly
    # the second proves the first was dropped (it was sent before, so it would have arrived before), without waiting.
    first = pause(http, browser["id"])
    async with rfb(socket_url(server, first["takeoverUrl"])) as takeover:
        # The takeover connection lifted x11vnc's own view-only mode: from here only the bridge keeps input out.
        async with rfb(socket_url(server, browser["liveUrl"])) as viewer:
            await viewer.click()
            await viewer.key(ord("v"))
        await takeover.click()
        await asyncio.to_thread(wait_seen, browser, ["click"])
        await takeover.key(ord("t"))
        await asyncio.to_thread(wait_seen, browser, ["click", "key:t"])

        assert http.post(f"/v3/browsers/{browser['id']}/resume", json={}).status_code == 200
        await takeover.click()  # the same, still open connection: view-only at once
        await takeover.key(ord("r"))

    second = pause(http, browser["id"])
    assert second["takeoverUrl"] != first["takeoverUrl"]
    wrong = second["takeoverUrl"].split("&takeover=")[0] + "&takeover=wrong-token"
    for stale_or_wrong in (first["takeoverUrl"], wrong):
        async with rfb(socket_url(server, stale_or_wrong)) as connection:
            await connection.click()
            await connection.key(ord("w"))
    async with rfb(socket_url(server, second["takeoverUrl"])) as current:
        await current.key(ord("z"))
        await asyncio.to_thread(wait_seen, browser, ["click", "key:t", "key:z"])


async def test_an_unknown_client_message_closes_the_connection(server: ServerProcess, browser: dict[str, Any]) -> None:
    async with rfb(socket_url(server, browser["liveUrl"])) as client:
        await client.ws.send(b"\x09\x00\x00\x00")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await drain(client.ws)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


# -- the viewer page -------------------------------------------------------------------------------------------
async def test_the_viewer_page_takes_over_and_hands_back(
    server: ServerProcess, http: httpx.Client, browser: dict[str, Any]
) -> None:
    paused = pause(http, browser["id"], reason="2FA")
    violations: list[str] = []
    async with async_playwright() as playwright:
        viewer = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await viewer.new_page(viewport={"width": 960, "height": 540})
            page.on("console", lambda m: violations.append(m.text) if "Content Security" in m.text else None)
            await page.goto(f"{server.base_url}{paused['takeoverUrl']}")
            await page.locator("body[data-state=connected][data-takeover=active]").wait_for(timeout=20_000)
            await page.mouse.click(300, 300)  # noVNC sends it: the remote page sees a click
            await asyncio.to_thread(wait_seen, browser, ["click"])
            await page.get_by_role("button", name="Hand back to agent").click()
            await page.locator("body[data-takeover=handed-back]").wait_for(timeout=10_000)
        finally:
            await viewer.close()
    assert violations == []
    assert http.get(f"/v3/browsers/{browser['id']}").json()["state"] == "live"
