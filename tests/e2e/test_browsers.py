"""Raw browsers (spec §19.1) against a real server: the official SDK, Playwright and browser-use as clients.

One server for the module (API_KEY set, one display slot), so every test also proves the slot comes back.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets
from browser_use_sdk.v3 import AsyncBrowserUse
from playwright.async_api import async_playwright

from tests.e2e.browser_support import (
    CdpClient,
    create_browser,
    forwarded_for,
    needs_display,
    stack_process_names,
    stack_processes,
    stop_browser,
)
from tests.e2e.servers import api_client, server_fixture, start_isolated_server
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "raw-browser-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}


server = server_fixture({"API_KEY": API_KEY})


# -- the SDK ---------------------------------------------------------------------------------------------------
async def test_sdk_creates_gets_lists_and_stops_a_browser(
    server: ServerProcess, sdk: Callable[..., AsyncBrowserUse]
) -> None:
    client = sdk(server, api_key=API_KEY)
    created = await client.browsers.create(timeout=5, metadata={"suite": "e2e"})
    browser_id = str(created.id)
    assert created.status.value == "active" and created.finished_at is None
    assert created.timeout_at - created.started_at == timedelta(minutes=5)
    assert created.cdp_url is not None and created.cdp_url.startswith(
        f"ws://127.0.0.1:{server.port}/v3/browsers/{browser_id}/cdp?token="
    )
    assert created.live_url is not None and created.live_url.startswith(
        f"/vnc/{browser_id}/view?path=vnc/{browser_id}/websockify&token="
    )
    assert created.metadata == {"suite": "e2e"} and created.browser_cost == "0"

    fetched = await client.browsers.get(created.id)
    assert fetched.id == created.id and fetched.status.value == "active"
    listed = await client.browsers.list(page_size=100)
    assert created.id in {item.id for item in listed.items} and listed.total_items >= 1
    active = await client.browsers.list(filter_by="active")
    assert [item.id for item in active.items] == [created.id]

    stopped = await client.browsers.stop(created.id)
    assert stopped.status.value == "stopped"
    assert stopped.finished_at is not None and stopped.finished_at >= stopped.started_at
    assert stopped.cdp_url is None and stopped.live_url is None
    again = await client.browsers.stop(created.id)  # idempotent
    assert again.finished_at == stopped.finished_at
    still_listed = await client.browsers.list(filter_by="stopped", page_size=100)
    assert created.id in {item.id for item in still_listed.items}


def test_bad_requests_are_refused_clearly(http: httpx.Client, server: ServerProcess) -> None:
    bad_bodies: tuple[object, ...] = (
        {"timeout": 241},
        {"timeout": 0},
        {"timeout": True},
        {"timeout": "soon"},
        {"browserScreenWidth": 100},
        {"metadata": {str(n): "x" for n in range(11)}},
        [],
    )
    for body in bad_bodies:
        refused = http.post("/v3/browsers", json=body)
        assert refused.status_code == 422, (body, refused.text)
        assert isinstance(refused.json()["detail"], list)
    missing_profile = http.post("/v3/browsers", json={"profileId": str(uuid.uuid4())})
    assert missing_profile.status_code == 422 and missing_profile.json() == {"detail": "Profile not found"}
    assert http.post("/v3/browsers", content=b"{nope").status_code == 400  # unparseable JSON, as on /v3/sessions
    for path in (f"/v3/browsers/{uuid.uuid4()}", "/v3/browsers/not-a-uuid"):
        assert http.get(path).json() == {"detail": "Browser not found"} and http.get(path).status_code == 404
        assert http.patch(path, json={"action": "stop"}).status_code == 404
    assert http.get("/v3/browsers", params={"pageSize": 0}).status_code == 422
    assert http.get("/v3/browsers", params={"filterBy": "paused"}).status_code == 422
    no_key = loopback.get(f"{server.v3}/browsers", headers=forwarded_for())
    assert no_key.status_code == 401 and no_key.json() == {"detail": "Invalid API key"}


def test_patch_only_knows_stop(http: httpx.Client, browser: dict[str, Any]) -> None:
    path = f"/v3/browsers/{browser['id']}"
    assert http.patch(path, json={"action": "pause"}).status_code == 422
    assert http.patch(path).status_code == 422
    assert http.get(path).json()["status"] == "active"


# -- CDP through port 8420 -------------------------------------------------------------------------------------
async def test_playwright_drives_the_browser_through_the_proxied_cdp_url(
    http: httpx.Client, pages: ThreadedServer
) -> None:
    created = create_browser(http, browserScreenWidth=1280, browserScreenHeight=800)
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
        page = remote.contexts[0].pages[0]
        await page.goto(f"{pages.url}/hello")
        assert await page.text_content("h1") == "Hello from the fixture site"
        assert await page.evaluate("window.outerWidth") == 1280
        await remote.close()  # disconnects only
    assert http.get(f"/v3/browsers/{created['id']}").json()["status"] == "active"  # a client leaving stops nothing
    stop_browser(http, created["id"])


async def test_cdp_refuses_wrong_tokens_and_the_view_token(server: ServerProcess, browser: dict[str, Any]) -> None:
    cdp_url: str = browser["cdpUrl"]
    base = cdp_url.split("?")[0]
    view_token = browser["liveUrl"].split("token=")[1]
    for url in (base, f"{base}?token=wrong", f"{base}?token={view_token}"):
        with pytest.raises(websockets.InvalidStatus) as refused:  # refused before the handshake is accepted
            async with websockets.connect(url, additional_headers=forwarded_for()):
                pass
        assert refused.value.response.status_code == 401
    token = cdp_url.split("token=")[1]
    async with websockets.connect(base, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        await ws.send('{"id": 1, "method": "Browser.getVersion"}')
        assert '"protocolVersion"' in await ws.recv()


def test_cdp_messages_of_many_megabytes_pass_both_ways(browser: dict[str, Any]) -> None:
    cdp = CdpClient(browser["cdpUrl"])
    try:
        session = cdp.page_session()
        down = cdp.call("Runtime.evaluate", {"expression": "'x'.repeat(4 << 20)", "returnByValue": True}, session)
        assert len(down["result"]["value"]) == 4 << 20
        up_size = 17 << 20  # above uvicorn's default 16 MiB message limit
        up = cdp.call("Runtime.evaluate", {"expression": f"'{'y' * up_size}'.length", "returnByValue": True}, session)
        assert up["result"]["value"] == up_size
    finally:
        cdp.close()


def test_http_form_answers_json_version(http: httpx.Client, browser: dict[str, Any]) -> None:
    token = browser["cdpUrl"].split("token=")[1]
    version_path = f"/v3/browsers/{browser['id']}/cdp/json/version"
    for path, headers in (
        (f"{version_path}?token={token}", {}),
        (f"{version_path}/", {"Authorization": f"Bearer {token}"}),
        (version_path, AUTH),
    ):
        answer = loopback.get(f"{http.base_url}{path}", headers=headers)
        assert answer.status_code == 200, answer.text
        ws_url = answer.json()["webSocketDebuggerUrl"]
        if headers is AUTH:  # the API key is never put in a URL: a fresh browser token is
            assert ws_url.startswith(browser["cdpUrl"].split("=")[0] + "=") and token not in ws_url
        elif headers:  # a Bearer token stays in the header the client sends again (spec §23.4)
            assert ws_url == browser["cdpUrl"].split("?")[0]
        else:
            assert ws_url == browser["cdpUrl"]
        assert answer.json()["Browser"].startswith("Chrome/")
    assert loopback.get(f"{http.base_url}{version_path}", headers=forwarded_for()).status_code == 401


async def test_browser_use_connects_through_the_proxy(
    http: httpx.Client,
    browser: dict[str, Any],
    pages: ThreadedServer,
    tmp_path: Path,
) -> None:
    from browser_use import BrowserSession

    token = browser["cdpUrl"].split("token=")[1]
    http_form = f"{http.base_url}/v3/browsers/{browser['id']}/cdp?token={token}"
    for cdp_url in (browser["cdpUrl"], http_form):
        session = BrowserSession(
            cdp_url=cdp_url, headless=False, user_data_dir=tmp_path / "profile", downloads_path=tmp_path / "downloads"
        )
        await session.start()
        try:
            await session.navigate_to(f"{pages.url}/hello")
            assert await session.get_current_page_url() == f"{pages.url}/hello"
        finally:
            await session.stop()
    assert http.get(f"/v3/browsers/{browser['id']}").json()["status"] == "active"


# -- the slot: shared queue, release, timeout, restart --------------------------------------------------------
async def test_stopping_releases_the_slot_to_a_queued_browser(http: httpx.Client, server: ServerProcess) -> None:
    first = create_browser(http)
    log_start = len(server.log())
    async with httpx.AsyncClient(base_url=server.base_url, headers=AUTH, timeout=60) as client:
        second = asyncio.ensure_future(client.post("/v3/browsers", json={"waitForCapacityMs": 30_000}))
        deadline = time.monotonic() + 20
        while "waits for a display slot" not in server.log()[log_start:]:
            assert time.monotonic() < deadline, "the second browser never queued"
            assert not second.done(), second.result().text if second.done() else ""
            await asyncio.sleep(0.05)
        assert stop_browser(http, first["id"])["status"] == "stopped"
        answer = await second
    assert answer.status_code == 201, answer.text
    queued = answer.json()
    assert (queued["status"], queued["state"], queued["endReason"]) == ("active", "live", None)
    ended = stop_browser(http, queued["id"])
    assert (ended["status"], ended["state"], ended["endReason"]) == ("stopped", "ended", "closed")
    deadline = time.monotonic() + 10
    while stack_processes(server):
        assert time.monotonic() < deadline, stack_process_names(server)
        await asyncio.sleep(0.05)


async def test_a_request_abandoned_while_queued_takes_no_slot(http: httpx.Client, server: ServerProcess) -> None:
    first = create_browser(http)
    log_start = len(server.log())
    total_before = http.get("/v3/browsers").json()["totalItems"]
    with pytest.raises(httpx.ReadTimeout):  # the client gives up while its browser waits for the slot
        loopback.post(
            f"{server.v3}/browsers",
            json={"waitForCapacityMs": 30_000},
            headers=AUTH,
            timeout=httpx.Timeout(60, read=2),
        )
    assert "waits for a display slot" in server.log()[log_start:]
    deadline = time.monotonic() + 10
    while "abandoned by its client" not in server.log()[log_start:]:
        assert time.monotonic() < deadline, "the server never noticed the client leaving"
        await asyncio.sleep(0.05)
    stop_browser(http, first["id"])
    replacement = create_browser(http)  # the slot went to nobody in between
    assert http.get("/v3/browsers").json()["totalItems"] == total_before + 1
    stop_browser(http, replacement["id"])


def test_closing_the_browser_over_cdp_stops_it(http: httpx.Client) -> None:
    created = create_browser(http)
    cdp = CdpClient(created["cdpUrl"])
    try:
        with contextlib.suppress(websockets.ConnectionClosed):
            cdp.call("Browser.close")
    finally:
        cdp.close()
    deadline = time.monotonic() + 20
    while (current := http.get(f"/v3/browsers/{created['id']}").json())["status"] == "active":
        assert time.monotonic() < deadline, "the browser stayed active after Chromium exited"
        time.sleep(0.1)
    assert current["finishedAt"] is not None and current["cdpUrl"] is None
    replacement = create_browser(http)
    stop_browser(http, replacement["id"])


async def test_a_browser_stops_at_its_timeout(http: httpx.Client) -> None:
    created = create_browser(http, timeout=0.05)  # fractional minutes: 3 s
    assert datetime.fromisoformat(created["timeoutAt"]) - datetime.fromisoformat(created["startedAt"]) == timedelta(
        seconds=3
    )
    deadline = time.monotonic() + 30
    while (current := http.get(f"/v3/browsers/{created['id']}").json())["status"] == "active":
        assert time.monotonic() < deadline, "the browser outlived its timeout"
        await asyncio.sleep(0.1)
    assert current["cdpUrl"] is None and current["liveUrl"] is None
    assert (current["state"], current["endReason"]) == ("ended", "max_duration")
    assert datetime.fromisoformat(current["finishedAt"]) >= datetime.fromisoformat(created["timeoutAt"])
    replacement = create_browser(http)  # the slot came back
    stop_browser(http, replacement["id"])


def test_restart_marks_browsers_of_the_previous_process_stopped(tmp_path: Path) -> None:
    first = start_isolated_server(tmp_path / "home", {"API_KEY": API_KEY})
    try:
        with api_client(first) as http:
            created = create_browser(http)
    finally:
        first.kill_hard()
    second = ServerProcess(home=tmp_path / "home", env={"API_KEY": API_KEY}, slot_base=first.slot_base).start()
    try:
        with api_client(second) as http:
            after = http.get(f"/v3/browsers/{created['id']}").json()
    finally:
        second.stop()
    assert after["status"] == "stopped" and after["finishedAt"] is not None and after["cdpUrl"] is None
    assert (after["state"], after["endReason"]) == ("lost", "runner_lost")
    assert not first.leftovers() and not second.leftovers()
