"""Shared pieces of the raw-browser and live-view end-to-end tests.

* ``fixture_site``: a tiny local site (a page with a big distinctive colour, a text page, an iframe host);
* ``cdp_navigate`` / ``cdp_evaluate``: drive a browser through its proxied ``cdpUrl`` with plain CDP;
* ``forwarded_for``: a unique client address per deliberate auth failure, so the per-IP failure throttle
  (5 free failures, then lockouts) never locks out the tests' own address. The server believes it because
  the servers of ``servers.py`` trust 127.0.0.1 as a proxy (``FORWARDED_ALLOW_IPS``); without that it would be ignored.
"""

from __future__ import annotations

import html
import itertools
import json
import time
from typing import Any

import httpx
import psutil
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route
from websockets.sync.client import connect as ws_connect

from tests.support.asgi_thread import ThreadedServer
from tests.support.display import (
    MISSING as MISSING,  # re-exported for older imports
    needs_display as needs_display,  # re-exported for older imports
)
from tests.support.server import BROWSER_STACK, REPO, ServerProcess

ARTIFACTS = REPO / "test-artifacts"
MAGENTA = (255, 0, 255)
_addresses = itertools.count(1)


def stack_processes(server: ServerProcess) -> list[psutil.Process]:
    """The server's live Xvfb / x11vnc / websockify / Chromium processes."""
    found = []
    for proc in server.children():
        try:
            text = f"{proc.name()} {' '.join(proc.cmdline())}"
        except psutil.NoSuchProcess:
            continue
        if any(name in text for name in BROWSER_STACK):
            found.append(proc)
    return found


def stack_process_names(server: ServerProcess) -> set[str]:
    """The names of :func:`stack_processes` (ones that exit meanwhile are left out)."""
    names = set()
    for proc in stack_processes(server):
        try:
            names.add(proc.name())
        except psutil.NoSuchProcess:
            continue
    return names


def stack_processes_named(server: ServerProcess, part: str) -> list[psutil.Process]:
    """The processes of :func:`stack_processes` whose name contains ``part`` (ones that exit meanwhile are left out:
    socat forks one relay per connection, and they come and go)."""
    found = []
    for proc in stack_processes(server):
        try:
            if part in proc.name():
                found.append(proc)
        except psutil.NoSuchProcess:
            continue
    return found


def forwarded_for() -> dict[str, str]:
    n = next(_addresses)
    return {"X-Forwarded-For": f"198.18.{n // 250}.{n % 250 + 1}"}


# -- fixture site ----------------------------------------------------------------------------------------------
async def _colour(_: Request) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html><head><title>Live colour</title></head>"
        '<body style="margin:0;height:100vh;background:#ff00ff">'
        '<h1 style="margin:0;font:bold 160px sans-serif;color:#000">LIVE VIEW</h1></body></html>'
    )


async def _hello(_: Request) -> HTMLResponse:
    return HTMLResponse(
        "<!doctype html><html><head><title>Hello fixture</title></head>"
        "<body><h1>Hello from the fixture site</h1></body></html>"
    )


async def _embed(request: Request) -> HTMLResponse:
    src = html.escape(request.query_params.get("src", ""), quote=True)
    return HTMLResponse(
        "<!doctype html><html><head><title>Embedding page</title></head>"
        '<body style="margin:0;background:#fff">'
        f'<iframe id="live" src="{src}" style="border:0;width:960px;height:540px"></iframe></body></html>'
    )


def fixture_site() -> ThreadedServer:
    app = Starlette(routes=[Route("/colour", _colour), Route("/hello", _hello), Route("/embed", _embed)])
    return ThreadedServer(app)


# -- raw browsers ----------------------------------------------------------------------------------------------
def create_browser(http: httpx.Client, **body: Any) -> dict[str, Any]:
    response = http.post("/v3/browsers", json=body)
    assert response.status_code == 201, response.text
    data: dict[str, Any] = response.json()
    return data


def stop_browser(http: httpx.Client, browser_id: str) -> dict[str, Any]:
    response = http.patch(f"/v3/browsers/{browser_id}", json={"action": "stop"})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


class CdpClient:
    """A minimal flat-mode CDP client over a synchronous websocket."""

    def __init__(self, url: str) -> None:
        self._ws = ws_connect(url, max_size=None, open_timeout=10)
        self._ids = itertools.count(1)

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv(timeout=30))
            if reply.get("id") == call_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def page_session(self) -> str:
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        return str(self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"])

    def close(self) -> None:
        self._ws.close()


def cdp_evaluate(cdp_url: str, expression: str) -> Any:
    cdp = CdpClient(cdp_url)
    try:
        result = cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, cdp.page_session())
        return result["result"].get("value")
    finally:
        cdp.close()


def cdp_navigate(cdp_url: str, url: str, timeout: float = 20.0) -> None:
    """Open ``url`` in the browser's tab and wait until it has loaded."""
    cdp = CdpClient(cdp_url)
    try:
        session = cdp.page_session()
        cdp.call("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + timeout
        check = "location.href + ' ' + document.readyState"
        while time.monotonic() < deadline:
            state = cdp.call("Runtime.evaluate", {"expression": check, "returnByValue": True}, session)
            if state["result"].get("value") == f"{url} complete":
                return
            time.sleep(0.05)
        raise TimeoutError(f"{url} did not load")
    finally:
        cdp.close()
