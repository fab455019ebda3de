"""OpenClaw's own shipped client drives our browser control API unchanged (spec §20).

The npm package ``openclaw`` (pinned in ``tests/e2e/openclaw/package.json``, a test-only dependency installed
once into a cache outside the clone) is imported by ``tests/e2e/openclaw/drive.mjs`` under the Node 24 it needs;
its client functions and its model-facing ``browser`` tool are pointed at ``/v3/browsers/{id}/browser`` and at
``/v3/sessions/{id}/browser`` of a session a person paused mid-run. They open a fixture form, snapshot it, click and
type through refs, navigate and take a screenshot, and the test asserts what the page shows and what the site
received; after the hand-back, the agent's next step sees the note and the page as the client left it. What the
client sends and reads is written down in ``tests/e2e/openclaw/NOTES.md``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.e2e.agent_support import agent_steps, token
from tests.e2e.browser_support import create_browser, stop_browser
from tests.e2e.servers import SHARED_API_KEY, agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.npm_clients import NODE, NpmClients
from tests.support.server import ServerProcess, wait_until

# A cold install takes ~25 s on a fast link (330 packages, ~830 MB); the cached one is a directory check.
pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(600)]

API_KEY = SHARED_API_KEY
PACKAGE_DIR = Path(__file__).parent / "openclaw"
DRIVER = PACKAGE_DIR / "drive.mjs"
RUNTIME_API = Path("node_modules/openclaw/dist/extensions/browser/runtime-api.js")
INSTALL_TIMEOUT = 900.0
REPLY_TIMEOUT = 120.0
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


OPENCLAW = NpmClients("openclaw", PACKAGE_DIR, (RUNTIME_API,), timeout=INSTALL_TIMEOUT)


@pytest.fixture(scope="session")
def openclaw_dir() -> Path:
    """``node_modules`` with openclaw and Node 24 (a failed install fails the tests; only a missing npm skips)."""
    return OPENCLAW.ensure()


# -- the Node driver -------------------------------------------------------------------------------------------
class OpenClaw:
    """``drive.mjs`` as a subprocess: one JSON request per line in, one JSON reply per line out."""

    def __init__(self, install: Path, state_dir: Path, gateway_token: str) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_")}
        no_proxy = ",".join(filter(None, [env.get("NO_PROXY"), "127.0.0.1", "localhost"]))
        env.update(
            {
                "HOME": str(state_dir),
                "OPENCLAW_STATE_DIR": str(state_dir),
                "OPENCLAW_GATEWAY_TOKEN": gateway_token,  # what the client sends as Bearer, to loopback only
                "NO_PROXY": no_proxy,
                "no_proxy": no_proxy,
            }
        )
        self.stderr_path = state_dir / "driver.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            [str(install / NODE), str(DRIVER), str(install / RUNTIME_API)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=env,
            cwd=state_dir,
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        assert self.process.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True)
        self._reader.start()
        self._ids = 0
        ready = self._next(60.0)
        assert ready.get("ready") is True and str(ready["node"]).startswith("v24."), ready

    def _read(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._lines.put(line)
        self._lines.put(b"")

    def _next(self, timeout: float) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no reply from the OpenClaw driver in {timeout} s: {self._stderr_tail()}") from None
        if not line:
            raise AssertionError(f"the OpenClaw driver exited: {self._stderr_tail()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _stderr_tail(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-3000:]

    def request(self, step: dict[str, Any]) -> dict[str, Any]:
        self._ids += 1
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"id": self._ids, **step}) + "\n").encode())
        self.process.stdin.flush()
        reply = self._next(REPLY_TIMEOUT)
        assert reply.get("id") == self._ids, reply
        return reply

    def call(self, fn: str, base_url: str, *args: Any) -> dict[str, Any]:
        """A client function's reply: ``{"ok": true, "result": ...}`` or ``{"ok": false, "error", "status"}``."""
        return self.request({"fn": fn, "baseUrl": base_url, "args": list(args)})

    def tool(self, base_url: str, **params: Any) -> dict[str, Any]:
        """``createBrowserTool({sandboxBridgeUrl: base_url, allowHostControl: false}).execute(id, params)``."""
        return self.request({"fn": "tool", "baseUrl": base_url, "params": params})

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self._stderr.close()


def result(reply: dict[str, Any]) -> Any:
    assert reply.get("ok") is True, reply
    return reply["result"]


# -- the fixture site: a form whose page shows what was clicked and typed --------------------------------------
FORM = """<!doctype html><html><head><meta charset=utf-8><title>Club sign-up</title></head><body>
<h1>Club sign-up</h1>
<form id="signup">
  <label for="name">Full name</label> <input id="name" name="name" type="text">
  <label for="city">City</label> <input id="city" name="city" type="text">
  <label><input id="news" name="news" type="checkbox"> Newsletter</label>
  <button type="submit">Register</button>
</form>
<p id="news-state">Newsletter is off</p>
<p id="out" role="status"></p>
<script>
const form = document.getElementById('signup');
document.getElementById('news').addEventListener('change', (event) => {
  document.getElementById('news-state').textContent = event.target.checked ? 'Newsletter is on' : 'Newsletter is off';
});
form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const entry = {name: form.name.value, city: form.city.value, news: form.news.checked ? 'yes' : 'no'};
  document.getElementById('out').textContent = `Registered ${entry.name} from ${entry.city}`;
  await fetch('/got', {method: 'POST', headers: {'content-type': 'application/json'}, body: JSON.stringify(entry)});
});
</script></body></html>"""


class FormSite:
    def __init__(self) -> None:
        self.received: list[dict[str, str]] = []

    def app(self) -> Starlette:
        async def form(_: Request) -> HTMLResponse:
            return HTMLResponse(FORM)

        async def got(request: Request) -> Response:
            self.received.append(await request.json())
            return PlainTextResponse("ok")

        async def thanks(_: Request) -> HTMLResponse:
            return HTMLResponse(
                "<!doctype html><html><head><title>Welcome aboard</title></head>"
                "<body><h1>Welcome aboard</h1><p>Your club card is on its way.</p></body></html>"
            )

        return Starlette(routes=[Route("/form", form), Route("/got", got, methods=["POST"]), Route("/thanks", thanks)])


@pytest.fixture(scope="module")
def form_site() -> Iterator[tuple[FormSite, ThreadedServer]]:
    state = FormSite()
    with ThreadedServer(state.app()) as served:
        yield state, served


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


@pytest.fixture
def openclaw(openclaw_dir: Path, tmp_path: Path) -> Iterator[OpenClaw]:
    driver = OpenClaw(openclaw_dir, tmp_path / "openclaw-state", API_KEY)
    yield driver
    driver.close()


def ref_of(refs: dict[str, Any], role: str, name: str) -> str:
    for ref, described in refs.items():
        if described.get("role") == role and described.get("name") == name:
            return str(ref)
    raise AssertionError(f"no {role} {name!r} among {refs}")


def drive_the_form(
    openclaw: OpenClaw, http: httpx.Client, base: str, site: FormSite, served: ThreadedServer, who: str
) -> None:
    """The whole client sequence against one base URL, asserting what the page shows after each change."""
    # OpenClaw gives up on GET /tabs after its own 3 s; the first control call attaches to the browser, which on a
    # loaded machine can take longer. Attach first, so the test waits on the attach and not on OpenClaw's clock.
    assert http.get(f"{base}/tabs", timeout=120).status_code == 200
    tabs = result(openclaw.call("browserTabs", base))
    assert tabs["running"] is True and tabs["tabs"], tabs
    assert all(tab["targetId"] and tab["type"] == "page" for tab in tabs["tabs"]), tabs

    tab = result(openclaw.call("browserOpenTab", base, f"{served.url}/form"))
    target = tab["targetId"]
    assert target and tab["url"] == f"{served.url}/form", tab
    listed = result(openclaw.call("browserTabs", base))["tabs"]
    assert target in {t["targetId"] for t in listed}, listed

    snapshot = result(openclaw.call("browserSnapshot", base, {"format": "ai", "targetId": target}))
    assert snapshot["format"] == "ai" and snapshot["targetId"] == target, snapshot
    assert "Newsletter is off" in snapshot["snapshot"], snapshot["snapshot"]
    refs = snapshot["refs"]
    news = ref_of(refs, "checkbox", "Newsletter")
    assert f"[ref={news}]" in snapshot["snapshot"], snapshot["snapshot"]

    clicked = result(openclaw.call("browserAct", base, {"kind": "click", "ref": news, "targetId": target}))
    assert clicked["ok"] is True and clicked["targetId"] == target, clicked
    shown = result(openclaw.call("browserSnapshot", base, {"format": "ai", "targetId": target}))["snapshot"]
    assert "Newsletter is on" in shown, shown

    actions = [
        {"kind": "type", "ref": ref_of(refs, "textbox", "Full name"), "text": who},
        {"kind": "type", "ref": ref_of(refs, "textbox", "City"), "text": "Lisbon"},
        {"kind": "click", "ref": ref_of(refs, "button", "Register")},
    ]
    batch = result(openclaw.call("browserAct", base, {"kind": "batch", "targetId": target, "actions": actions}))
    assert [r["ok"] for r in batch["results"]] == [True, True, True] and not batch.get("aborted"), batch
    # the page shows the line before it posts it, so once the site has it the page shows it too
    wait_until(lambda: {"name": who, "city": "Lisbon", "news": "yes"} in site.received, 30, what="the submission")
    after = result(openclaw.call("browserSnapshot", base, {"format": "ai", "targetId": target}))
    assert f"Registered {who} from Lisbon" in after["snapshot"], after["snapshot"]

    navigated = result(openclaw.call("browserNavigate", base, {"url": f"{served.url}/thanks", "targetId": target}))
    assert navigated["ok"] is True and navigated["url"] == f"{served.url}/thanks", navigated
    assert navigated["targetId"] == target, navigated
    titles = {t["targetId"]: t for t in result(openclaw.call("browserTabs", base))["tabs"]}
    assert titles[target]["url"] == f"{served.url}/thanks", titles

    shot = result(openclaw.call("browserScreenshotAction", base, {"targetId": target, "type": "png"}))
    assert shot["ok"] is True and shot["mimeType"] == "image/png", shot
    assert Path(shot["path"]).read_bytes().startswith(PNG_MAGIC)  # the tool reads it from disk on this host
    served_file = http.get(shot["url"])
    assert served_file.status_code == 200 and served_file.content.startswith(PNG_MAGIC), served_file.text[:300]

    seen = result(openclaw.tool(base, action="snapshot", targetId=target))
    text = "\n".join(block["text"] for block in seen["content"] if block["type"] == "text")
    assert "Welcome aboard" in text and "club card is on its way" in text, text
    assert seen["details"]["format"] == "ai" and seen["details"]["targetId"] == target, seen["details"]
    assert seen["details"]["url"] == f"{served.url}/thanks", seen["details"]

    # the bare call a model makes first: no targetId, no format
    bare = result(openclaw.tool(base, action="snapshot"))
    assert bare["details"]["format"] == "ai" and bare["content"][0]["type"] == "text", bare


def test_openclaw_client_drives_a_raw_browser(
    openclaw: OpenClaw,
    openclaw_dir: Path,
    tmp_path: Path,
    server: ServerProcess,
    http: httpx.Client,
    form_site: tuple[FormSite, ThreadedServer],
) -> None:
    site, served = form_site
    browser = create_browser(http)
    base = f"{server.base_url}/v3/browsers/{browser['id']}/browser"
    try:
        drive_the_form(openclaw, http, base, site, served, "Ada Lovelace")

        stranger = OpenClaw(openclaw_dir, tmp_path / "stranger-state", "not-the-key")
        try:
            refused = stranger.call("browserTabs", base)
        finally:
            stranger.close()
        assert refused["ok"] is False and refused.get("status") == 401, refused
    finally:
        stop_browser(http, browser["id"])
    gone = openclaw.call("browserTabs", base)
    assert gone["ok"] is False and gone.get("status") == 409, gone


def test_openclaw_client_drives_a_session_paused_mid_run(
    openclaw: OpenClaw,
    server: ServerProcess,
    http: httpx.Client,
    fake: FakeProvider,
    form_site: tuple[FormSite, ThreadedServer],
) -> None:
    """A running turn is held at the model, paused, driven by the client, and handed back with a note."""
    site, served = form_site
    marker = token("OPENCLAW")
    gate = Gate()
    fake.script(
        marker,
        [
            structured(done("never sent: this call is cancelled by the pause"), gate=gate),
            done("Grace Hopper is registered."),
        ],
        when=agent_steps,
    )
    created = http.post("/v3/sessions", json={"task": f"{marker} Register Grace Hopper.", "keepAlive": True})
    assert created.status_code == 200, created.text
    sid = created.json()["id"]
    note = "Registered Grace Hopper through OpenClaw; the welcome page is open."
    try:
        assert gate.wait_entered(120), "the first step never reached the model"
        asked = http.post(f"/v3/sessions/{sid}/pause", json={"reason": "OpenClaw takes over"})
        assert asked.status_code == 200, asked.text
        wait_until(lambda: (session_of(http, sid)["pause"] or {}).get("state") == "paused", 60, what="the pause")
        assert session_of(http, sid)["status"] == "running"

        base = f"{server.base_url}/v3/sessions/{sid}/browser"
        drive_the_form(openclaw, http, base, site, served, "Grace Hopper")

        resumed = http.post(f"/v3/sessions/{sid}/resume", json={"note": note})
        assert resumed.status_code == 200 and resumed.json()["pause"] is None, resumed.text
        wait_until(lambda: session_of(http, sid)["status"] != "running", 120, what="the end of the turn")
        assert session_of(http, sid)["output"] == "Grace Hopper is registered."
    finally:
        gate.open()
        http.post(f"/v3/sessions/{sid}/stop", json={"strategy": "session"})
    steps = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert len(steps) == 2, "the call cancelled by the pause, then the redone step"
    redone = steps[-1]
    assert note in redone.text and "POST /act batch" in redone.text, redone.text[-3000:]
    assert f"{served.url}/thanks" in (redone.browser_state or ""), redone.browser_state
    wait_until(lambda: session_of(http, sid).get("browserLive") is False, 60, what="the stop")


def session_of(http: httpx.Client, session_id: str) -> dict[str, Any]:
    record: dict[str, Any] = http.get(f"/v3/sessions/{session_id}").json()
    return record
