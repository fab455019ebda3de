"""Raw browsers' lifetimes, capacity and tokens (spec §21.1, §21.2, §21.4) against a real one-slot server.

Every end reason is produced for real: an unused browser idles out, an old one reaches its maximum age, a killed
Chromium is ``runner_lost``, a stop is ``closed``, a queue entry nobody served is ``capacity_timeout``. CDP tokens
live 5 s here (``BROWSER_TOKEN_TTL_S``) so their expiry can be watched.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import psutil
import pytest
import websockets
from browser_use_sdk.generated.v3.models import BrowserSessionItemView, BrowserSessionView
from playwright.async_api import async_playwright
from websockets.sync.client import connect as ws_connect
from websockets.typing import Subprotocol

from tests.e2e.browser_support import (
    CdpClient,
    create_browser,
    forwarded_for,
    needs_display,
    stack_processes_named,
    stop_browser,
)
from tests.e2e.servers import server_fixture
from tests.support import loopback, waiting
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(240)]

API_KEY = "lifecycle-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
TOKEN_TTL_S = 5
IDLE_MS = 10_000
HANG_S = 60.0  # how long past its due time an end is waited for: a bound on a hang, not a measure of punctuality


server = server_fixture(lambda fake: {**fake.env(), "API_KEY": API_KEY, "BROWSER_TOKEN_TTL_S": str(TOKEN_TTL_S)})


def browser(http: httpx.Client, browser_id: str) -> dict[str, Any]:
    data: dict[str, Any] = http.get(f"/v3/browsers/{browser_id}").json()
    return data


def wait_for(http: httpx.Client, browser_id: str, done: Callable[[dict[str, Any]], bool], timeout: float) -> Any:
    """Poll the browser until ``done(view)``; return the view and when it was first seen."""
    current = waiting.wait_for(
        lambda: view if done(view := browser(http, browser_id)) else None,
        timeout,
        interval=0.1,
        what=f"browser {browser_id} to change",
    )
    return current, time.monotonic()


def ended(view: dict[str, Any]) -> bool:
    return bool(view["status"] == "stopped")


def lasted(view: dict[str, Any]) -> float:
    return (datetime.fromisoformat(view["finishedAt"]) - datetime.fromisoformat(view["startedAt"])).total_seconds()


def wait_for_log(server: ServerProcess, text: str, since: int, timeout: float = 20) -> None:
    waiting.wait_for(lambda: text in server.log()[since:], timeout, what=f"the log line {text!r}")


def token_refused(url: str, headers: dict[str, str] | None = None, subprotocols: list[str] | None = None) -> bool:
    """Whether a new CDP connection is refused (401); each try from a fresh address, clear of the auth throttle."""
    offered = [Subprotocol(name) for name in subprotocols] if subprotocols else None
    try:
        with ws_connect(url, additional_headers={**forwarded_for(), **(headers or {})}, subprotocols=offered):
            return False
    except websockets.InvalidStatus as refused:
        status: int = refused.response.status_code
    return status == 401


# -- §21.1 lifetimes -------------------------------------------------------------------------------------------
def test_an_unused_browser_ends_at_its_idle_timeout(http: httpx.Client) -> None:
    created = create_browser(http, idleTimeoutMs=IDLE_MS)
    assert (created["idleTimeoutMs"], created["maxDurationMs"]) == (IDLE_MS, 3_600_000)
    BrowserSessionItemView.model_validate(created)
    view, _ = wait_for(http, created["id"], ended, IDLE_MS / 1000 + HANG_S)
    assert (view["state"], view["endReason"], view["cdpUrl"]) == ("ended", "idle_timeout", None)
    # not before its idle timeout (how punctually it ends is the unit test's, on a virtual clock)
    assert lasted(view) >= IDLE_MS / 1000
    BrowserSessionView.model_validate(view)


def test_a_connected_cdp_client_keeps_the_browser_alive(http: httpx.Client) -> None:
    created = create_browser(http, idleTimeoutMs=IDLE_MS)
    cdp = CdpClient(created["cdpUrl"])
    try:
        held_until = time.monotonic() + IDLE_MS / 1000 + 3
        while time.monotonic() < held_until:  # past its idle timeout, with a client connected the whole time
            assert browser(http, created["id"])["state"] == "live"
            time.sleep(0.5)
        assert cdp.call("Browser.getVersion")["product"].startswith("Chrome/")
    finally:
        cdp.close()
    left_at = time.monotonic()
    view, seen_at = wait_for(http, created["id"], ended, IDLE_MS / 1000 + HANG_S)
    assert view["endReason"] == "idle_timeout"
    assert seen_at - left_at >= IDLE_MS / 1000 - 1  # the idle clock started when the client left


def test_a_browser_in_use_ends_at_its_maximum_age(http: httpx.Client) -> None:
    created = create_browser(http, maxDurationMs=10_000, idleTimeoutMs=60_000)
    assert created["maxDurationMs"] == 10_000
    assert lasted({**created, "finishedAt": created["timeoutAt"]}) == 10
    view, _ = wait_for(http, created["id"], ended, 10 + HANG_S)
    assert (view["state"], view["endReason"]) == ("ended", "max_duration")
    assert lasted(view) >= 10


def test_a_killed_chromium_is_runner_lost(http: httpx.Client, server: ServerProcess) -> None:
    created = create_browser(http)
    try:
        chromes = stack_processes_named(server, "chrom")
        pids = {p.pid for p in chromes}
        # the browser process itself: crashpad's handler is reparented too, and may exit by itself meanwhile
        main = [p for p in chromes if p.ppid() not in pids and "crashpad" not in p.name()]
        assert main, [p.pid for p in chromes]
        for process in main:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal.SIGKILL)
        view, _ = wait_for(http, created["id"], ended, 20)
    except BaseException:
        stop_browser(http, created["id"])  # the next tests need the one slot
        raise
    assert (view["status"], view["state"], view["endReason"]) == ("stopped", "lost", "runner_lost")
    BrowserSessionView.model_validate(view)


def test_a_stop_is_closed(http: httpx.Client) -> None:
    created = create_browser(http)
    view = stop_browser(http, created["id"])
    assert (view["state"], view["endReason"], view["token"]) == ("ended", "closed", None)


def test_lifetime_options_are_checked(http: httpx.Client) -> None:
    body: dict[str, Any]
    for body in (
        {"idleTimeoutMs": 9_999},
        {"maxDurationMs": 86_400_001},
        {"idleTimeoutMs": True},
        {"waitForCapacityMs": 30_001},
        {"waitForCapacityMs": -1},
        {"queueForCapacity": {"maxWaitSeconds": 0}},
        {"queueForCapacity": {"maxWaitSeconds": 901}},
        {"queueForCapacity": {}},
    ):
        refused = http.post("/v3/browsers", json=body)
        assert refused.status_code == 422 and isinstance(refused.json()["detail"], list), (body, refused.text)
    both = http.post("/v3/browsers", json={"waitForCapacityMs": 1, "queueForCapacity": {"maxWaitSeconds": 5}})
    assert both.status_code == 422 and both.json() == {
        "detail": "Pass either waitForCapacityMs or queueForCapacity, not both."
    }
    twice = http.post("/v3/browsers", json={"timeout": 5, "maxDurationMs": 60_000})
    assert twice.status_code == 422 and "not both" in twice.json()["detail"]


# -- §21.2 capacity --------------------------------------------------------------------------------------------
def test_a_full_host_refuses_at_once_or_after_the_wait(http: httpx.Client) -> None:
    busy = create_browser(http)
    try:
        refused = http.post("/v3/browsers", json={})
        assert refused.status_code == 429, refused.text
        assert refused.json()["code"] == "capacity_exceeded" and refused.json()["detail"].endswith(".")
        started = time.monotonic()
        waited = http.post("/v3/browsers", json={"waitForCapacityMs": 2000})
        assert waited.status_code == 429 and waited.json()["code"] == "capacity_exceeded"
        assert time.monotonic() - started >= 2  # it waited the 2 s it asked for
    finally:
        stop_browser(http, busy["id"])
    assert http.get("/v3/browsers", params={"filterBy": "active"}).json()["items"] == []


async def test_a_create_that_waits_gets_the_slot_freed_meanwhile(http: httpx.Client, server: ServerProcess) -> None:
    busy = create_browser(http)
    since = len(server.log())
    async with httpx.AsyncClient(base_url=server.base_url, headers=AUTH, timeout=60) as client:
        waiting = asyncio.ensure_future(client.post("/v3/browsers", json={"waitForCapacityMs": 30_000}))
        await asyncio.to_thread(wait_for_log, server, "waits for a display slot", since)
        assert not waiting.done()
        stop_browser(http, busy["id"])
        answer = await waiting
    assert answer.status_code == 201, answer.text
    assert answer.json()["state"] == "live" and answer.json()["token"]
    stop_browser(http, answer.json()["id"])


def test_a_queued_browser_starts_when_a_slot_frees(http: httpx.Client) -> None:
    busy = create_browser(http, idleTimeoutMs=IDLE_MS)
    queued = create_browser(http, queueForCapacity={"maxWaitSeconds": 120})
    BrowserSessionItemView.model_validate(queued)
    assert (queued["status"], queued["state"], queued["cdpUrl"], queued["liveUrl"]) == (
        "active",
        "starting",
        None,
        None,
    )
    queue = queued["queue"]
    assert queue["position"] == 1 and queue["reason"] == "vpc_full"
    assert 0 < queue["etaSeconds"] <= IDLE_MS / 1000  # the busy browser's idle timeout is the next known end
    expires = datetime.fromisoformat(queue["expiresAt"]) - datetime.fromisoformat(queue["queuedAt"])
    assert expires.total_seconds() == 120
    assert browser(http, queued["id"])["queue"]["position"] == 1
    stop_browser(http, busy["id"])
    live, _ = wait_for(http, queued["id"], lambda view: view["state"] == "live", 30)
    assert live["queue"] is None and live["cdpUrl"] is not None and "token=" not in live["cdpUrl"]
    fresh = http.post(f"/v3/browsers/{queued['id']}/token").json()
    cdp = CdpClient(fresh["cdpUrl"])
    try:
        assert cdp.call("Browser.getVersion")["product"].startswith("Chrome/")
    finally:
        cdp.close()
    assert stop_browser(http, queued["id"])["endReason"] == "closed"


def test_a_queued_browser_nobody_serves_ends_with_capacity_timeout(http: httpx.Client) -> None:
    busy = create_browser(http)
    try:
        queued = create_browser(http, queueForCapacity={"maxWaitSeconds": 2})
        assert queued["state"] == "starting"
        view, _ = wait_for(http, queued["id"], ended, 15)
        assert (view["state"], view["endReason"], view["queue"]) == ("ended", "capacity_timeout", None)
        BrowserSessionView.model_validate(view)
        assert browser(http, busy["id"])["state"] == "live"
    finally:
        stop_browser(http, busy["id"])


def test_a_stopped_queued_browser_leaves_the_queue(http: httpx.Client) -> None:
    busy = create_browser(http)
    queued = create_browser(http, queueForCapacity={"maxWaitSeconds": 120})
    assert stop_browser(http, queued["id"])["endReason"] == "closed"
    stop_browser(http, busy["id"])
    stop_browser(http, create_browser(http)["id"])  # nobody took the slot in between


def test_abandoned_browsers_idle_out_and_a_session_still_gets_its_slot(
    http: httpx.Client, server: ServerProcess
) -> None:
    first = create_browser(http, idleTimeoutMs=IDLE_MS)
    others = [create_browser(http, idleTimeoutMs=IDLE_MS, queueForCapacity={"maxWaitSeconds": 300}) for _ in range(2)]
    assert [other["queue"]["position"] for other in others] == [1, 2]
    session = http.post("/v3/sessions", json={"task": "a session after three abandoned browsers"})
    assert session.status_code == 200, session.text
    for abandoned in (first, *others):
        view, _ = wait_for(http, abandoned["id"], ended, 3 * IDLE_MS / 1000 + HANG_S)
        assert view["endReason"] == "idle_timeout"
        assert lasted(view) >= IDLE_MS / 1000
    deadline = time.monotonic() + 90
    while (current := http.get(f"/v3/sessions/{session.json()['id']}").json())["status"] not in {"stopped", "idle"}:
        assert time.monotonic() < deadline, current
        time.sleep(0.2)
    assert current["isTaskSuccessful"] is True


# -- §21.4 tokens ----------------------------------------------------------------------------------------------
async def test_tokens_expire_refresh_and_an_open_connection_outlives_its_token(
    http: httpx.Client, server: ServerProcess
) -> None:
    created = create_browser(http)
    token, cdp_url = created["token"], created["cdpUrl"]
    assert cdp_url.endswith(f"?token={token}") and len(token) >= 40
    expires_in = datetime.fromisoformat(created["tokenExpiresAt"]) - datetime.fromisoformat(created["startedAt"])
    assert TOKEN_TTL_S - 1 <= expires_in.total_seconds() <= TOKEN_TTL_S + 1
    base = cdp_url.split("?")[0]
    version = f"{server.base_url}/v3/browsers/{created['id']}/cdp/json/version"
    async with async_playwright() as playwright:
        remote = await playwright.chromium.connect_over_cdp(cdp_url)
        page = remote.contexts[0].pages[0]
        deadline = time.monotonic() + TOKEN_TTL_S + 5
        while not token_refused(base, {"Authorization": f"Bearer {token}"}):
            assert time.monotonic() < deadline, "the token never expired"
            await asyncio.sleep(0.2)
        assert token_refused(cdp_url)
        assert loopback.get(f"{version}?token={token}", headers=forwarded_for()).status_code == 401
        assert await page.evaluate("1 + 1") == 2  # the connection opened with the token is still up
        await remote.close()

    fresh = http.post(f"/v3/browsers/{created['id']}/token")
    assert fresh.status_code == 200, fresh.text
    renewed = fresh.json()
    assert renewed["token"] != token and renewed["cdpUrl"] == f"{base}?token={renewed['token']}"
    async with websockets.connect(base, additional_headers={"Authorization": f"Bearer {renewed['token']}"}) as ws:
        await ws.send('{"id": 1, "method": "Browser.getVersion"}')
        assert '"protocolVersion"' in await ws.recv()
    subprotocols = ["openbrowse", f"openbrowse.bearer.{renewed['token']}"]
    async with websockets.connect(base, subprotocols=[Subprotocol(name) for name in subprotocols]) as ws:
        assert ws.subprotocol == "openbrowse"
        await ws.send('{"id": 1, "method": "Browser.getVersion"}')
        assert '"protocolVersion"' in await ws.recv()
    assert token_refused(base, subprotocols=["openbrowse", "openbrowse.bearer.wrong"])
    answer = loopback.get(version, headers={"Authorization": f"Bearer {renewed['token']}"})
    assert answer.status_code == 200 and answer.json()["webSocketDebuggerUrl"] == base  # the header is sent again

    spare = http.post(f"/v3/browsers/{created['id']}/token").json()["token"]
    stop_browser(http, created["id"])
    assert token_refused(f"{base}?token={spare}")  # revoked with the browser, long before it would expire
    refused = http.post(f"/v3/browsers/{created['id']}/token")
    assert refused.status_code == 422 and refused.json() == {"detail": "Browser has ended; start a new one."}
    assert http.post("/v3/browsers/00000000-0000-4000-8000-000000000000/token").status_code == 404
    assert loopback.post(f"{server.v3}/browsers/{created['id']}/token", headers=forwarded_for()).status_code == 401


def test_tokens_never_reach_the_log(server: ServerProcess, http: httpx.Client) -> None:
    created = create_browser(http)
    CdpClient(created["cdpUrl"]).close()
    stop_browser(http, created["id"])
    assert created["token"] not in server.log()
    assert not [p for p in psutil.process_iter(["cmdline"]) if created["token"] in " ".join(p.info["cmdline"] or [])]
