"""The live view through the server's own port (spec §4.10), watched the way a person would: a real browser.

A live view needs a browser on a display; agent runs need an LLM, so the stream is exercised through a raw
browser (``POST /v3/browsers``) showing a local page, plus the "nothing to watch" page of a session shell.
"""

from __future__ import annotations

import asyncio
import base64
import io
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import psutil
import pytest
import websockets
from PIL import Image, ImageChops
from playwright.async_api import Page, async_playwright
from websockets.typing import Subprotocol

from openbrowse.slots.layout import slot_layout
from tests.e2e.browser_support import (
    ARTIFACTS,
    cdp_navigate,
    create_browser,
    forwarded_for,
    needs_display,
    stack_processes,
    stack_processes_named,
    stop_browser,
)
from tests.e2e.servers import api_client, raw_browser, server_fixture
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.local_user import ask_as_nobody
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "live-view-key"
PASSWORD = "live-view-dashboard-pw"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()}
CHROMIUM = "/usr/bin/chromium"


def view_token(browser: dict[str, Any]) -> str:
    """The token in the browser's ``liveUrl`` (spec §21.4: random, renewed while the browser is read)."""
    live_url: str = browser["liveUrl"]
    return parse_qs(urlsplit(live_url).query)["token"][0]


server = server_fixture({"API_KEY": API_KEY, "DASHBOARD_PASSWORD": PASSWORD}, slots=2)


@pytest.fixture(scope="module")
def live_browser(server: ServerProcess, pages: ThreadedServer) -> Iterator[dict[str, Any]]:
    """A raw browser on the first slot, showing the fixture's magenta page."""
    with api_client(server) as http, raw_browser(http) as created:
        cdp_navigate(created["cdpUrl"], f"{pages.url}/colour")
        yield created


def ws_url(server: ServerProcess, path: str) -> str:
    return f"ws://127.0.0.1:{server.port}{path}"


async def close_code(url: str, **kwargs: Any) -> int:
    """Connect, expect the server to close at once, return its close code."""
    async with websockets.connect(url, open_timeout=10, **kwargs) as ws:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None
    return closed.value.rcvd.code


def magenta_share(png: bytes, box: tuple[int, int, int, int]) -> float:
    red, green, blue = Image.open(io.BytesIO(png)).convert("RGB").crop(box).split()
    high = [channel.point(lambda v: 255 if v > 200 else 0) for channel in (red, blue)]
    low_green = green.point(lambda v: 255 if v < 70 else 0)
    mask = ImageChops.multiply(ImageChops.multiply(high[0], high[1]), low_green)
    return mask.histogram()[255] / (mask.width * mask.height)


async def wait_state(page: Page, state: str, timeout: float = 20.0) -> None:
    # a locator, not wait_for_function: the viewer's CSP refuses the eval that a string predicate needs
    await page.locator(f"body[data-state={state}]").wait_for(state="attached", timeout=timeout * 1000)


# -- the stream ------------------------------------------------------------------------------------------------
async def test_rfb_greeting_through_the_proxied_socket(server: ServerProcess, live_browser: dict[str, Any]) -> None:
    browser_id = live_browser["id"]
    url = ws_url(server, f"/vnc/{browser_id}/websockify?token={view_token(live_browser)}")
    async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
        assert ws.subprotocol == "binary"
        assert await asyncio.wait_for(ws.recv(), 10) == b"RFB 003.008\n"
    # the slot's noVNC and CDP ports exist, on loopback only (x11vnc has no TCP port, websockify wants the slot's
    # secret): only the authenticated bridge is public
    layout = slot_layout(server.slot_base)
    assert server.process is not None  # a sandboxed slot's ports are the server's own gates
    pids = {proc.pid for proc in stack_processes(server)} | {server.process.pid}
    slot_ports = {layout.novnc_port, layout.cdp_port, layout.vnc_port}
    listening = [
        c.laddr
        for c in psutil.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN and c.pid in pids and c.laddr and c.laddr.port in slot_ports
    ]
    assert {layout.novnc_port, layout.cdp_port} <= {a.port for a in listening}
    assert layout.vnc_port not in {a.port for a in listening}
    assert {a.ip for a in listening} == {"127.0.0.1"}
    direct = f"ws://127.0.0.1:{layout.novnc_port}/websockify"
    with pytest.raises((websockets.InvalidHandshake, websockets.ConnectionClosed, OSError)):
        async with websockets.connect(direct, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
            await asyncio.wait_for(ws.recv(), 10)
    # another local user gets nothing at all from the slot's ports (issue 31): they are the server's, for the server
    for port, request in ((layout.cdp_port, "GET /json/version"), (layout.novnc_port, "GET /vnc.html")):
        stranger = await asyncio.to_thread(ask_as_nobody, port, request)
        assert "HTTP/1.1" not in stranger, (port, stranger)


async def test_headless_chromium_shows_the_remote_page_in_a_cross_origin_iframe(
    server: ServerProcess, live_browser: dict[str, Any], pages: ThreadedServer
) -> None:
    live_url = f"http://localhost:{server.port}{live_browser['liveUrl']}"  # another site than the embedder
    async with async_playwright() as playwright:
        viewer = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await viewer.new_page(viewport={"width": 1000, "height": 600})
            await page.goto(f"{pages.url}/embed?src={quote(live_url, safe='')}")
            frame = page.frame_locator("#live")
            await frame.locator("body[data-state=connected]").wait_for(timeout=20_000)
            assert await frame.locator("#overlay").is_hidden()
            deadline = time.monotonic() + 15
            while (share := magenta_share(png := await page.screenshot(), (0, 0, 960, 540))) < 0.3:
                assert time.monotonic() < deadline, f"only {share:.0%} of the live view is the remote page's colour"
                await asyncio.sleep(0.2)
        finally:
            await viewer.close()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "live-view-iframe.png").write_bytes(png)


async def test_viewer_says_when_the_stream_ends(server: ServerProcess, http: httpx.Client) -> None:
    created = create_browser(http)
    live_url = f"{server.base_url}{created['liveUrl']}"
    assert "Connecting…" in http.get(created["liveUrl"], headers={}).text
    async with async_playwright() as playwright:
        viewer = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await viewer.new_page()
            await page.goto(live_url)
            await wait_state(page, "connected")
            stop_browser(http, created["id"])
            await wait_state(page, "ended")
            assert await page.text_content("#overlay") == "Stream ended"
        finally:
            await viewer.close()
    stopped = http.get(created["liveUrl"], headers={})
    assert stopped.status_code == 200
    assert "is stopped" in stopped.text and "nothing to watch" in stopped.text
    assert "http-equiv" not in stopped.text  # a stopped raw browser never comes back: no refresh


async def test_the_viewer_works_under_its_content_security_policy(
    server: ServerProcess, live_browser: dict[str, Any]
) -> None:
    live_url = f"{server.base_url}{live_browser['liveUrl']}"
    policy = loopback.get(live_url).headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self' 'sha256-" in policy and "unsafe" not in policy
    violations: list[str] = []
    async with async_playwright() as playwright:
        viewer = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = await viewer.new_page()
            page.on(
                "console",
                lambda message: violations.append(message.text) if "Content Security" in message.text else None,
            )
            await page.goto(live_url)
            await wait_state(page, "connected")
        finally:
            await viewer.close()
    assert violations == []


# -- credentials -----------------------------------------------------------------------------------------------
async def test_credentials_are_checked_on_page_assets_and_socket(
    server: ServerProcess, live_browser: dict[str, Any]
) -> None:
    browser_id = live_browser["id"]
    token = view_token(live_browser)
    cdp_token = live_browser["cdpUrl"].split("token=")[1]
    base = f"{server.base_url}/vnc/{browser_id}"
    for refused in (
        "/view",
        "/view?token=wrong",
        f"/view?token={cdp_token}",  # the CDP token opens CDP only
        f"/view?token={secrets.token_urlsafe(24)}",  # a token nobody issued
        "/core/rfb.js?token=wrong",
        "/_t/wrong/core/rfb.js",
    ):
        assert loopback.get(base + refused, headers=forwarded_for()).status_code == 401, refused
    with pytest.raises(websockets.InvalidStatus) as handshake:  # refused before the handshake is accepted
        await close_code(
            ws_url(server, f"/vnc/{browser_id}/websockify?token=wrong"), additional_headers=forwarded_for()
        )
    assert handshake.value.response.status_code == 401 and b"Invalid API key" in handshake.value.response.body

    for allowed, headers in (
        (f"/view?token={token}", {}),
        ("/view", AUTH),
        ("/view", BASIC),
        (f"/_t/{token}/core/rfb.js", {}),
        (f"/_t/{token}/core/util/logging.js", {}),  # what rfb.js imports relatively
        (f"/_t/{token}/vendor/pako/lib/zlib/inflate.js", {}),
        (f"/core/rfb.js?token={token}", {}),
    ):
        answer = loopback.get(base + allowed, headers=headers)
        assert answer.status_code == 200, allowed
    script = loopback.get(f"{base}/_t/{token}/core/rfb.js")
    assert "javascript" in script.headers["content-type"] and "export default class RFB" in script.text
    escape = loopback.get(f"{base}/_t/{token}/core/%2e%2e/%2e%2e/%2e%2e/etc/passwd")
    assert escape.status_code == 404


def _in_sandbox(server: ServerProcess) -> list[str]:
    """The display lives in the slot's sandbox: enter the namespaces of the server's sandboxed x11vnc."""
    x11vnc = stack_processes_named(server, "x11vnc")[0]
    return ["nsenter", "-t", str(x11vnc.pid), "--mount", "--net", "--ipc", "--pid", "--uts", "--"]


async def test_control_toggles_view_only(server: ServerProcess, live_browser: dict[str, Any]) -> None:
    browser_id = live_browser["id"]
    control = f"{server.base_url}/vnc/{browser_id}/control"
    assert loopback.get(f"{server.base_url}/vnc/{browser_id}/_t/{view_token(live_browser)}/vnc.html").status_code == 200
    by_token = loopback.post(
        f"{control}?token={view_token(live_browser)}", json={"enabled": True}, headers=forwarded_for()
    )
    assert by_token.status_code == 401  # watching does not grant control
    assert loopback.post(control, json={"enabled": "yes"}, headers=AUTH).status_code == 422
    enabled = loopback.post(control, json={"enabled": True}, headers=AUTH)
    assert enabled.status_code == 200 and enabled.json() == {"viewOnly": False}
    display = slot_layout(server.slot_base).display
    query = subprocess.run(
        [*_in_sandbox(server), "x11vnc", "-display", display, "-query", "viewonly"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert "ans=viewonly:0" in query.stdout + query.stderr
    disabled = loopback.post(control, json={"enabled": False}, headers=BASIC)
    assert disabled.status_code == 200 and disabled.json() == {"viewOnly": True}


# -- nothing to watch ------------------------------------------------------------------------------------------
async def test_a_session_without_a_browser_gets_a_page_that_says_so(server: ServerProcess, http: httpx.Client) -> None:
    shell = http.post("/v3/sessions", json={}).json()
    session_id = shell["id"]
    assert shell["liveUrl"] is None, "no browser, so no view token to hand out (spec §21.4)"
    page = loopback.get(f"{server.base_url}/vnc/{session_id}/view", headers=AUTH)
    assert page.status_code == 200
    assert "is created" in page.text and "nothing to watch" in page.text and 'http-equiv="refresh"' in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'; style-src 'sha256-")
    asset = loopback.get(f"{server.base_url}/vnc/{session_id}/core/rfb.js", headers=AUTH)
    assert asset.status_code == 404 and asset.json() == {"detail": "Session has no live browser"}
    assert await close_code(ws_url(server, f"/vnc/{session_id}/websockify"), additional_headers=AUTH) == 1011
    unknown = http.get(f"/vnc/{uuid.uuid4()}/view")
    assert unknown.status_code == 404 and unknown.json() == {"detail": "Session not found"}
