"""The browser control API on a real server (spec §20): a raw browser and a parked session driven over HTTP.

Each test drives the fixture shop's contact form (``/form``) and asserts what the site received or what the page
shows, and each refusal of §20.3–§20.4 is produced for real. The OpenClaw client's own test is
``test_openclaw_client.py``; the engine's finer behaviour is covered in ``tests/integration/control/``.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.e2e.agent_support import agent_steps, data_of, settled_with, token
from tests.e2e.browser_support import create_browser, stop_browser
from tests.e2e.control_routes_site import ok, ref_of, refused
from tests.e2e.servers import SHARED_API_KEY, agent_env, server_fixture
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


def feed(http: httpx.Client, session_id: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = http.get(f"/v3/sessions/{session_id}/messages", params={"limit": 1000}).json()[
        "messages"
    ]
    return listed


def test_a_raw_browser_fills_and_sends_a_form_through_tabs_snapshot_and_a_batch(
    http: httpx.Client, browser: dict[str, Any], site: FixtureSites
) -> None:
    base = f"/v3/browsers/{browser['id']}/browser"
    assert ok(http.get(f"{base}/tabs"))["running"] is True

    tab = ok(http.post(f"{base}/tabs/open", json={"url": f"{site.url}/form", "label": "contact"}))
    assert tab["targetId"] and tab["url"] == f"{site.url}/form"
    listed = ok(http.get(f"{base}/tabs"))["tabs"]
    assert tab["targetId"] in {t["targetId"] for t in listed}

    snapshot = ok(http.get(f"{base}/snapshot", params={"targetId": tab["targetId"]}))
    assert snapshot["targetId"] == tab["targetId"] and "Send message" in snapshot["snapshot"]
    send_button = ref_of(snapshot, "button", "Send message")
    actions: list[dict[str, Any]] = [
        {"kind": "type", "ref": ref_of(snapshot, "textbox", "Your name"), "text": "Ada Lovelace"},
        {"kind": "select", "ref": ref_of(snapshot, "combobox", "Topic"), "values": ["Billing"]},
        {"kind": "type", "ref": ref_of(snapshot, "textbox", "Message"), "text": "Please call me."},
        {"kind": "click", "ref": send_button},
        {"kind": "press", "key": "Tab"},
    ]
    batch = ok(http.post(f"{base}/act", json={"kind": "batch", "targetId": tab["targetId"], "actions": actions}))
    assert [r["ok"] for r in batch["results"]] == [True, True, True, True]
    assert batch["aborted"]["reason"] == "navigation" and batch["aborted"]["skipped"] == 1
    expected = {"name": "Ada Lovelace", "topic": "Billing", "message": "Please call me."}
    assert expected in site.state.submissions

    after = ok(http.get(f"{base}/snapshot", params={"targetId": tab["targetId"]}))
    assert "Thanks Ada Lovelace" in after["snapshot"]
    stale = refused(http.post(f"{base}/act", json={"kind": "click", "ref": send_button}), 409, "REF_STALE")
    assert "snapshot" in stale["error"]


def test_navigate_and_screenshot_write_into_the_browsers_own_files(
    http: httpx.Client, browser: dict[str, Any], site: FixtureSites
) -> None:
    base = f"/v3/browsers/{browser['id']}/browser"
    navigated = ok(http.post(f"{base}/navigate", json={"url": f"{site.url}/colour"}))
    assert navigated["url"] == f"{site.url}/colour"
    shot = ok(http.post(f"{base}/screenshot", json={"type": "png"}))
    assert shot["mimeType"] == "image/png" and shot["path"].endswith(".png")
    served = http.get(shot["url"])
    assert served.status_code == 200 and served.content.startswith(b"\x89PNG")
    # the browser's own CDP token is a credential for its control routes too; nothing else is
    token_only = loopback.get(f"{http.base_url}{base}/tabs", params={"token": browser["cdpUrl"].split("token=")[1]})
    assert token_only.status_code == 200, token_only.text
    assert loopback.get(f"{http.base_url}{base}/tabs").status_code == 401


def test_each_refusal_has_its_status_and_code(
    server: ServerProcess, http: httpx.Client, browser: dict[str, Any], site: FixtureSites
) -> None:
    base = f"/v3/browsers/{browser['id']}/browser"
    ok(http.post(f"{base}/navigate", json={"url": f"{site.url}/form"}))
    snapshot = ok(http.get(f"{base}/snapshot"))
    name = ref_of(snapshot, "textbox", "Your name")

    refused(http.post(f"{base}/act", json={}), 400, "ACT_KIND_REQUIRED")
    refused(http.post(f"{base}/act", json={"kind": "fly"}), 400, "ACT_KIND_REQUIRED")
    refused(http.post(f"{base}/act", json={"kind": "type", "ref": name}), 400, "ACT_INVALID_REQUEST")
    refused(http.post(f"{base}/act", json={"kind": "click", "selector": "#x"}), 400, "ACT_SELECTOR_UNSUPPORTED")
    refused(http.post(f"{base}/act", json={"kind": "click", "ref": "e9999"}), 409, "REF_STALE")
    refused(http.post(f"{base}/act", content=b"{not json"), 400, "ACT_INVALID_REQUEST")
    mismatch = {"kind": "batch", "targetId": "t1", "actions": [{"kind": "press", "key": "a", "targetId": "t9"}]}
    refused(http.post(f"{base}/act", json=mismatch), 403, "ACT_TARGET_ID_MISMATCH")
    refused(http.post(f"{base}/tabs/focus", json={"targetId": "no-such-tab"}), 404, "TAB_NOT_FOUND")
    own_api = f"http://127.0.0.1:{server.port}/v3/sessions"
    refused(http.post(f"{base}/navigate", json={"url": own_api}), 403, "NAVIGATION_BLOCKED")
    refused(http.post(f"{base}/navigate", json={"url": "file:///etc/passwd"}), 400, "ACT_INVALID_REQUEST")
    assert http.post(f"{base}/tabs/open", json={}).json()["error"] == "url is required"
    # nothing above typed into the form
    value = ok(http.post(f"{base}/act", json={"kind": "evaluate", "fn": "() => document.forms[0].name.value"}))
    assert value["result"] == ""

    assert http.get("/v3/browsers/00000000-0000-4000-8000-000000000000/browser/tabs").status_code == 404
    ended = create_browser(http)
    stop_browser(http, ended["id"])
    refused(http.get(f"/v3/browsers/{ended['id']}/browser/tabs"), 409, "browser_not_live")


def test_a_running_session_is_read_only_and_a_parked_one_is_driven_then_told(
    fake: FakeProvider, site: FixtureSites, http: httpx.Client
) -> None:
    marker = token("CONTROL")
    gate = Gate()
    fake.script(
        marker,
        [
            navigate(f"{site.url}/form"),
            structured(done("The contact form is open."), gate=gate),
            done("I see the colour page you opened."),
        ],
        when=agent_steps,
    )
    session = http.post("/v3/sessions", json={"task": f"{marker} Open {site.url}/form", "keepAlive": True}).json()
    sid = session["id"]
    base = f"/v3/sessions/{sid}/browser"
    assert gate.wait_entered(90), "the second step never reached the model"

    read = ok(http.get(f"{base}/snapshot"))
    assert "Send message" in read["snapshot"]
    refused(http.post(f"{base}/navigate", json={"url": f"{site.url}/colour"}), 409, "session_busy")
    gate.open()
    assert settled_with(http, sid)["status"] == "idle"

    snapshot = ok(http.get(f"{base}/snapshot"))
    name = ref_of(snapshot, "textbox", "Your name")
    ok(http.post(f"{base}/act", json={"kind": "type", "ref": name, "text": "typed-by-hand-secret"}))
    ok(http.post(f"{base}/navigate", json={"url": f"{site.url}/colour"}))
    controls = [m for m in feed(http, sid) if m["type"] == "event" and data_of(m)["category"] == "control"]
    assert len(controls) == 2 and all("typed-by-hand-secret" not in str(m) for m in controls)

    follow = http.post("/v3/sessions", json={"sessionId": sid, "task": "What page is open now?"})
    assert follow.status_code == 200 and follow.json()["status"] == "running", follow.text
    assert settled_with(http, sid)["output"] == "I see the colour page you opened."
    step = [r for r in fake.requests_matching(marker) if r.is_agent_step][-1]
    assert "drove this browser by hand" in step.text and "/navigate" in step.text
    assert "typed-by-hand-secret" not in step.text
    assert "/colour" in (step.browser_state or "")
    http.post(f"/v3/sessions/{sid}/stop", json={"strategy": "session"})
    wait_until(lambda: http.get(f"/v3/sessions/{sid}").json()["browserLive"] is False, 30, what="the stop")
    refused(http.get(f"{base}/tabs"), 409, "browser_not_live")
