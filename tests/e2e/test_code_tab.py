"""Code streaming through a real run (spec §11.3): the code tab the live view shows while the model writes a script.

The fake provider streams a ``run_code_file`` reply slowly; a separate headless Chromium watches the session's
live view (noVNC) and the test reads the session's own Chromium over CDP, so what is asserted is what a person
watching sees: the code tab's colour on the live view, the code prefix with ``Writing``, then ``Running``; after
the script, no tab and the agent's page in front. The SSE ``code`` events and the feed rows are checked too.
"""

from __future__ import annotations

import asyncio
import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import connect_sse
from PIL import Image, ImageChops
from playwright.async_api import Page, async_playwright

from openbrowse.api.codeview_page import CODE_BACKGROUND
from openbrowse.slots.layout import slot_layout
from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, data_of, messages, stop, token, wait_until_status
from tests.e2e.browser_support import ARTIFACTS, CdpClient
from tests.fakes.llm_script import done, navigate, run_code, streamed
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(300)]

CHROMIUM = "/usr/bin/chromium"
PADDING = "".join(f"# step {n:02d}: wait for the test to release the script, then report.\n" for n in range(24))
SCRIPT = (
    PADDING
    + "import asyncio\n"
    + "for _ in range(3000):\n"
    + "    try:\n"
    + "        open('release.txt').read()\n"
    + "        break\n"
    + "    except FileNotFoundError:\n"
    + "        await asyncio.sleep(0.05)\n"
    + "print('released \u2713')\n"
)


# -- the session's own Chromium, read over CDP ----------------------------------------------------------------
def page_targets(server: ServerProcess) -> list[dict[str, Any]]:
    """Every page of every slot browser of this server (one session runs at a time here)."""
    found: list[dict[str, Any]] = []
    for index in range(server.slot_base, server.slot_base + 3):
        try:
            listed = loopback.get(f"http://127.0.0.1:{slot_layout(index).cdp_port}/json/list", timeout=5).json()
        except httpx.HTTPError:
            continue
        found += [{**t, "port": slot_layout(index).cdp_port} for t in listed if t.get("type") == "page"]
    return found


def evaluate(target: dict[str, Any], expression: str) -> Any:
    cdp = CdpClient(target["webSocketDebuggerUrl"])
    try:
        reply = cdp.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return reply["result"].get("value")
    finally:
        cdp.close()


def code_tab_state(server: ServerProcess) -> dict[str, Any] | None:
    """The code tab's status and text, or None while there is no code tab."""
    for target in page_targets(server):
        if target["url"].endswith("/codeview"):
            try:
                state = evaluate(
                    target,
                    "({status: document.body.dataset.status, code: window.__codeText ?? null,"
                    " visible: document.visibilityState})",
                )
            except (RuntimeError, OSError):
                return None
            return state if isinstance(state, dict) else None
    return None


def poll(probe: Any, timeout: float, what: str, interval: float = 0.05) -> Any:
    return wait_for(probe, timeout, interval=interval, what=what)


# -- the live view, watched by a separate headless Chromium ---------------------------------------------------
def colour_share(png: bytes, colour: tuple[int, int, int], tolerance: int = 14) -> float:
    """The share of pixels within ``tolerance`` of ``colour`` in every channel."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    masks = [
        channel.point(lambda v, c=c: 255 if abs(v - c) <= tolerance else 0)
        for channel, c in zip(image.split(), colour, strict=True)
    ]
    mask = ImageChops.multiply(ImageChops.multiply(masks[0], masks[1]), masks[2])
    return mask.histogram()[255] / (image.width * image.height)


async def watch_live_view(page: Page, server: ServerProcess, live_url: str) -> None:
    await page.goto(f"{server.base_url}{live_url}")
    try:
        # a locator, not wait_for_function: the viewer's CSP refuses the eval that a string predicate needs
        await page.locator("body[data-state=connected]").wait_for(state="attached", timeout=30_000)
    except Exception:
        state = await page.evaluate("document.body.dataset.state + ' ' + document.body.innerText")
        raise AssertionError(f"{live_url}: {state}\n{server.log()[-3000:]}") from None


class CodeEvents:
    """Collects the SSE ``code`` events of a session in a thread, from before the run starts."""

    def __init__(self, server: ServerProcess, session_id: str) -> None:
        self.events: list[dict[str, Any]] = []
        self._url = f"{server.v3}/sessions/{session_id}/events"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        with httpx.Client(timeout=httpx.Timeout(10, read=60)) as client, connect_sse(client, "GET", self._url) as src:
            for event in src.iter_sse():
                if event.event == "code":
                    self.events.append(json.loads(event.data))
                if self._stop.is_set():
                    return

    def close(self) -> None:
        self._stop.set()
        self._thread.join(70)


@pytest.fixture
def release_dir(agent_server: ServerProcess) -> Path:
    return agent_server.home / "data" / "sessions"


async def test_the_live_view_shows_the_code_tab_while_the_script_is_written_and_run(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites, release_dir: Path
) -> None:
    marker = token("CODETAB")
    step = run_code("wait_release", SCRIPT)
    fake.script(
        marker,
        [streamed(step, chunk_delay=0.2, chunk_chars=24), done("released")],
        when=agent_steps,
    )
    session = create(
        agent_server,
        task=f"{marker} Open {site.url}/colour and run the release script.",
        model="claude-sonnet-5",
        reasoningEffort="none",
        keepAlive=True,
    )
    sid = session["id"]
    sse = CodeEvents(agent_server, sid)
    try:
        running = await asyncio.to_thread(wait_until_status, agent_server, sid, {"running"}, 120)
        live_url = await asyncio.to_thread(
            poll, lambda: loopback.get(f"{agent_server.v3}/sessions/{sid}", timeout=10).json()["liveUrl"], 60, "liveUrl"
        )
        assert running["status"] == "running"
        async with async_playwright() as playwright:
            viewer = await playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            try:
                page = await viewer.new_page(viewport={"width": 960, "height": 540})
                await watch_live_view(page, agent_server, live_url)
                writing = await asyncio.to_thread(
                    poll,
                    lambda: (
                        (s := code_tab_state(agent_server)) and s.get("status") == "Writing" and s.get("code") and s
                    ),
                    90,
                    "the code tab with status Writing",
                )
                assert SCRIPT.startswith(writing["code"]) and len(writing["code"]) < len(SCRIPT)
                assert writing["visible"] == "visible"
                # the live view shows the tab while the code is still being written
                deadline = time.monotonic() + 30
                while (share := colour_share(png := await page.screenshot(), CODE_BACKGROUND)) < 0.4:
                    assert time.monotonic() < deadline, f"only {share:.0%} of the live view is the code tab's colour"
                    await asyncio.sleep(0.2)
                still = code_tab_state(agent_server)
                assert still is not None and still["status"] == "Writing", still
                assert SCRIPT.startswith(still["code"]) and len(still["code"]) < len(SCRIPT)
                ARTIFACTS.mkdir(exist_ok=True)
                (ARTIFACTS / "code-tab-live-view.png").write_bytes(png)

                running_tab = await asyncio.to_thread(
                    poll,
                    lambda: (s := code_tab_state(agent_server)) and s.get("status") == "Running" and s,
                    90,
                    "the code tab with status Running",
                )
                assert running_tab["code"] == SCRIPT
                assert colour_share(await page.screenshot(), CODE_BACKGROUND) > 0.4
            finally:
                await viewer.close()
        (release_dir / sid / "release.txt").write_text("go")
        finished = await asyncio.to_thread(wait_until_status, agent_server, sid, {"idle", "error", "stopped"}, 120)
        assert finished["status"] == "idle" and finished["isTaskSuccessful"] is True, finished
        pages = page_targets(agent_server)
        assert [t for t in pages if t["url"].endswith("/codeview")] == []
        agent_page = next(t for t in pages if t["url"].startswith(site.url))
        assert evaluate(agent_page, "document.visibilityState") == "visible"
    finally:
        stop(agent_server, sid)
        sse.close()

    feed = messages(agent_server, sid)
    code_rows = [
        (data_of(m)["action"], m["summary"]) for m in feed if m["type"] == "event" and data_of(m)["category"] == "code"
    ]
    assert code_rows == [("write", "Writing wait_release.py"), ("run", "Running wait_release.py")]
    statuses = [event["status"] for event in sse.events]
    assert statuses[0] == "Writing" and "Running" in statuses and statuses[-1] == "Done", statuses
    writing_events = [e for e in sse.events if e["status"] == "Writing"]
    assert all(SCRIPT.startswith(e["code"]) for e in writing_events)
    assert {e["name"] for e in writing_events if e["code"]} == {"wait_release"}
    assert any(len(e["code"]) < len(SCRIPT) for e in writing_events)
    ran = next(r for r in fake.requests_matching(marker) if r.is_agent_step and "released" in r.text)
    assert ran.stream
    assert "Ran scripts/wait_release.py.\nOutput:\nreleased \u2713" in ran.text
    assert "/codeview" not in ran.text  # the next step's browser state never lists the code tab


async def test_a_streamed_reply_without_a_script_opens_no_tab_and_does_not_stall(
    agent_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("NOCODE")
    fake.script(
        marker,
        [
            streamed(navigate(f"{site.url}/colour"), chunk_delay=0.05, chunk_chars=16),
            streamed(done("plain"), chunk_delay=0.02),
        ],
        when=agent_steps,
    )
    session = create(agent_server, task=f"{marker} Open the colour page.", model="gpt-5.6-terra", keepAlive=True)
    sid = session["id"]
    try:
        seen_tab = False

        def idle_or_tab() -> bool:
            nonlocal seen_tab
            seen_tab = seen_tab or code_tab_state(agent_server) is not None
            return get_status(agent_server, sid) in {"idle", "error", "stopped"}

        await asyncio.to_thread(poll, idle_or_tab, 120, "the run to end", 0.1)
        finished = loopback.get(f"{agent_server.v3}/sessions/{sid}", timeout=10).json()
        assert finished["status"] == "idle" and finished["isTaskSuccessful"] is True, finished
        assert not seen_tab
        pages = page_targets(agent_server)
        assert [t for t in pages if t["url"].endswith("/codeview")] == []
        agent_page = next(t for t in pages if t["url"].startswith(site.url))
        assert evaluate(agent_page, "document.visibilityState") == "visible"
    finally:
        stop(agent_server, sid)
    requests = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert requests and all(r.stream for r in requests)
    feed = messages(agent_server, sid)
    assert not [m for m in feed if m["type"] == "event" and data_of(m)["category"] == "code"]


def get_status(server: ServerProcess, session_id: str) -> str:
    status: str = loopback.get(f"{server.v3}/sessions/{session_id}", timeout=10).json()["status"]
    return status


def test_public_only_does_not_block_the_code_tab(start_server: StartServer, fake: FakeProvider) -> None:
    """The policy refuses loopback to the agent, but the service's own code tab still loads (spec §19.2).

    This server speaks Chat Completions to the fake, so the third wire format streams a script end to end too."""
    server = start_server(
        **fake.env(), NETWORK_POLICY="public-only", MAX_CONCURRENT_SESSIONS="1", OPENAI_API_STYLE="chat"
    )
    marker = token("POLICYCODE")
    code = PADDING + "print('policy ok')\n"
    fake.script(
        marker,
        [streamed(run_code("policy", code), chunk_delay=0.1, chunk_chars=24), done("ran")],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Run the policy script.", model="gpt-5.6-terra")
    writing = poll(
        lambda: (s := code_tab_state(server)) and s.get("status") == "Writing" and s.get("code") and s,
        120,
        "the code tab with status Writing under public-only",
    )
    assert code.startswith(writing["code"])
    finished = wait_until_status(server, session["id"], {"stopped", "error"})
    assert finished["status"] == "stopped" and finished["isTaskSuccessful"] is True, finished
    ran = next(r for r in fake.requests_matching(marker) if r.is_agent_step and "policy ok" in r.text)
    assert ran.api == "chat" and ran.stream
    assert "Ran scripts/policy.py.\nOutput:\npolicy ok" in ran.text
