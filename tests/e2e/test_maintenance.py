"""A SIGTERM drains the server for maintenance (spec §21.6), against a real server, real Chromium and the fake provider.

One server holds a session mid-step, a parked keep-alive session and a raw browser watched in a live viewer. After
the SIGTERM: the SSE stream and the viewer get ``maintenance_warning {endsAt}``, the parked session goes cold first,
the step in progress finishes, and at ``endsAt`` the session and the browser end with ``endReason: maintenance``;
the process exits with nothing left behind. A restart finds it all recorded, and the parked session resumable.
"""

from __future__ import annotations

import json
import queue
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from playwright.sync_api import expect, sync_playwright

from tests.conftest import StartServer
from tests.e2e.agent_support import create, get, token, wait_until_status
from tests.e2e.browser_support import create_browser
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(300)]

GRACE_S = 6
CHROMIUM = "/usr/bin/chromium"
WARNING = "This browser restarts for maintenance at"
ADVICE = "Finish what you are doing, then start a new session."


def follow_events(server: ServerProcess, session_id: str) -> tuple[queue.Queue[tuple[str, Any]], threading.Thread]:
    """The session's SSE events as ``(event, data)`` in a queue, read on a thread until the stream ends."""
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    opened = threading.Event()

    def read() -> None:
        url = f"{server.v3}/sessions/{session_id}/events"
        try:
            with httpx.Client(timeout=120) as client, connect_sse(client, "GET", url) as source:
                opened.set()
                for event in source.iter_sse():
                    if event.data:
                        events.put((event.event, json.loads(event.data)))
        except httpx.HTTPError as exc:
            events.put(("error", str(exc)))
        finally:
            opened.set()
            events.put(("end", None))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert opened.wait(30)
    return events, reader


def next_event(events: queue.Queue[tuple[str, Any]], wanted: Any, timeout: float) -> tuple[str, Any]:
    """The first event ``wanted(name, data)`` accepts; fails on the stream's end or the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        name, data = events.get(timeout=max(0.1, deadline - time.monotonic()))
        if wanted(name, data):
            return name, data
        assert name != "end", "the stream ended first"


@pytest.fixture
def gates() -> Iterator[list[Gate]]:
    opened: list[Gate] = []
    yield opened
    for gate in opened:
        gate.open()  # the fake provider's handler threads never stay parked


def test_sigterm_drains_then_ends_everything_for_maintenance(
    start_server: StartServer, fake: FakeProvider, site: FixtureSites, gates: list[Gate]
) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=3, SHUTDOWN_GRACE_S=GRACE_S)
    http = httpx.Client(base_url=server.base_url, timeout=60)

    parked_marker = token("MAINTPARK")
    fake.script(parked_marker, [done("answer kept for later")], when=lambda r: r.is_agent_step)
    parked = create(server, task=f"{parked_marker} answer", keepAlive=True)
    idle = wait_until_status(server, parked["id"], {"idle", "stopped", "error"}, timeout=180)
    assert idle["status"] == "idle" and idle["browserLive"] is True, idle

    running_marker = token("MAINTRUN")
    first_step, second_step = Gate(), Gate()
    gates.extend([first_step, second_step])
    fake.script(
        running_marker,
        [
            structured(navigate(f"{site.url}/"), gate=first_step),
            structured(navigate(f"{site.url}/form"), gate=second_step),
            done("never reached"),
        ],
        when=lambda r: r.is_agent_step,
    )
    running = create(server, task=f"{running_marker} look at {site.url}/")
    assert first_step.wait_entered(180)
    events, reader = follow_events(server, running["id"])

    browser = create_browser(http)
    with sync_playwright() as playwright:
        viewer = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = viewer.new_page()
            page.goto(server.base_url + browser["liveUrl"])
            expect(page.locator("body")).to_have_attribute("data-state", "connected", timeout=30_000)

            signalled = time.time()
            server.send_sigterm()

            _, warning = next_event(events, lambda name, _: name == "maintenance_warning", 30)
            ends_at = warning["endsAt"]
            assert signalled * 1000 + (GRACE_S - 1) * 1000 <= ends_at <= time.time() * 1000 + GRACE_S * 1000

            banner = page.locator("#maintenance")
            expect(banner).to_be_visible(timeout=15_000)
            expect(banner).to_contain_text(WARNING)
            expect(banner).to_contain_text(ADVICE)
            expect(page.locator("body")).to_have_attribute("data-maintenance", str(ends_at))

            # the parked session ends first: cold idle, resumable; the running one is still on its step
            wait_until(lambda: get(server, parked["id"])["browserLive"] is False, 30, what="parked session cold")
            cold = get(server, parked["id"])
            assert cold["status"] == "idle" and cold["endReason"] is None, cold
            assert get(server, running["id"])["status"] == "running"
            assert http.post("/v3/sessions", json={"task": "too late"}).status_code == 503

            # the step in progress finishes (the next one starts), and the run ends only at endsAt
            first_step.open()
            assert second_step.wait_entered(30)
            assert time.time() * 1000 < ends_at, "the grace ran out before the step finished: raise GRACE_S"
            _, final = next_event(events, lambda name, data: name == "status" and data["status"] != "running", 60)
            assert time.time() * 1000 >= ends_at - 500
            assert final["status"] == "stopped" and final["endReason"] == "maintenance", final

            expect(page.locator("body")).to_have_attribute("data-state", "ended", timeout=30_000)
        finally:
            viewer.close()

    assert server.wait_exited(60) in {0, -signal.SIGTERM}
    reader.join(30)
    assert not server.leftovers(), server.leftovers()

    restarted = start_server(home=server.home, **fake.env(), MAX_CONCURRENT_SESSIONS=3)
    ended = get(restarted, running["id"])
    assert ended["status"] == "stopped" and ended["endReason"] == "maintenance", ended
    assert "maintenance" in ended["lastStepSummary"]
    raw = loopback.get(f"{restarted.v3}/browsers/{browser['id']}", timeout=30).json()
    assert raw["status"] == "stopped" and raw["endReason"] == "maintenance" and raw["state"] == "ended", raw
    resumable = get(restarted, parked["id"])
    assert resumable["status"] == "idle" and resumable["output"] == "answer kept for later", resumable


def test_the_dashboard_warns_and_a_second_signal_stops_at_once(
    start_server: StartServer, fake: FakeProvider, gates: list[Gate]
) -> None:
    server = start_server(**fake.env(), SHUTDOWN_GRACE_S=300)
    marker = token("MAINTDASH")
    step = Gate()
    gates.append(step)
    fake.script(marker, [structured(done("never delivered"), gate=step)], when=lambda r: r.is_agent_step)
    running = create(server, task=f"{marker} wait")
    assert step.wait_entered(180)

    with sync_playwright() as playwright:
        viewer = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = viewer.new_page()
            page.goto(f"{server.base_url}/sessions/{running['id']}")
            expect(page.locator("body")).to_have_attribute("data-feed-mode", "sse", timeout=30_000)
            server.send_sigterm()
            banner = page.locator("#maintenance-banner")
            expect(banner).to_be_visible(timeout=15_000)
            expect(banner).to_contain_text(WARNING)
            expect(banner).to_contain_text(ADVICE)
        finally:
            viewer.close()

    assert server.process is not None
    server.process.send_signal(signal.SIGINT)
    server.wait_exited(120)  # at once: waiting out the 300 s grace would fail this wait
    assert not server.leftovers(), server.leftovers()

    restarted = start_server(home=server.home, **fake.env())
    ended = get(restarted, running["id"])
    assert ended["status"] == "stopped" and ended["endReason"] == "maintenance", ended
