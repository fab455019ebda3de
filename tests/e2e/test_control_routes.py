"""Every route of the browser control API (spec §20.2) through a real server and its sandboxed slot, part 1: tabs,
navigation, snapshots, every ``/act`` kind, batches, screenshots, PDFs, extraction, the page's logs, dialogs, and
each error code of §20.4. Part 2 (``test_control_routes_state.py``) covers files in and out, cookies, storage,
the ``/set/*`` overrides, permissions, highlight and traces.

One server and one raw browser serve the whole module; each test asserts what a user would see: the page's content,
what the fixture site (``control_routes_site.py``) received, and the files the API wrote, fetched over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.agent_support import token
from tests.e2e.browser_support import create_browser, stop_browser
from tests.e2e.control_routes_site import Browser, ControlSite, ok, ref_of, refused
from tests.e2e.servers import SHARED_API_KEY, agent_env, api_client, running_server, server_fixture
from tests.fakes.llm_script import text
from tests.fakes.llm_server import FakeProvider
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY


@pytest.fixture(scope="module")
def site() -> Iterator[ControlSite]:
    with ControlSite() as served:
        yield served


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


@pytest.fixture(scope="module")
def http(server: ServerProcess) -> Iterator[httpx.Client]:
    with api_client(server) as client:
        yield client


@pytest.fixture(scope="module")
def b(http: httpx.Client) -> Iterator[Browser]:
    created = create_browser(http)
    yield Browser(http, created["id"])
    stop_browser(http, created["id"])


def test_status_doctor_and_tabs_show_what_is_open_and_follow_focus_labels_and_closing(
    b: Browser, site: ControlSite
) -> None:
    status = ok(b.get(""))
    assert status["running"] is True and status["engine"] == "playwright" and status["controllable"] is True
    doctor = ok(b.get("/doctor", deep="true"))
    probe = next(check for check in doctor["checks"] if check["id"] == "live-snapshot")
    assert doctor["ok"] is True and probe["status"] in {"pass", "warn"}, doctor

    spare = ok(b.post("/tabs/open", {"url": f"{site.url}/blank", "label": "spare"}))
    assert spare["label"] == spare["suggestedTargetId"] == "spare" and spare["title"] == "Blank"
    assert ok(b.get(""))["activeTargetId"] == spare["targetId"]
    contact = ok(b.post("/tabs/action", {"action": "new", "url": f"{site.url}/form"}))["tab"]
    assert contact["url"] == f"{site.url}/form" and contact["tabId"].startswith("t")
    ok(b.post("/tabs/action", {"action": "label", "targetId": contact["targetId"], "label": "contact"}))
    listed = ok(b.post("/tabs/action", {"action": "list"}))["tabs"]
    assert {"spare", "contact"} <= {tab.get("label") for tab in listed}
    assert {tab["targetId"] for tab in listed} == {tab["targetId"] for tab in ok(b.get("/tabs"))["tabs"]}

    assert ok(b.post("/tabs/focus", {"targetId": "spare"}))["targetId"] == spare["targetId"]
    assert ok(b.get(""))["activeTargetId"] == spare["targetId"]
    index = [tab["targetId"] for tab in listed].index(contact["targetId"])
    ok(b.post("/tabs/action", {"action": "select", "index": index}))
    assert ok(b.get(""))["activeTargetId"] == contact["targetId"]

    ok(b.post("/tabs/action", {"action": "close", "targetId": "contact"}))
    assert ok(b.http.delete(f"{b.base}/tabs/{spare['targetId']}")) == {"ok": True, "targetId": spare["targetId"]}
    left = {tab["targetId"] for tab in ok(b.get("/tabs"))["tabs"]}
    assert left and not left & {spare["targetId"], contact["targetId"]}
    refused(b.post("/tabs/focus", {"targetId": "spare"}), 404, "TAB_NOT_FOUND")


def test_snapshots_in_ai_aria_and_role_formats_mark_new_elements_and_reach_into_the_cross_origin_iframe(
    b: Browser, site: ControlSite
) -> None:
    assert b.goto(f"{site.url}/form")["url"] == f"{site.url}/form"
    ai = b.snapshot()
    assert ai["format"] == "ai" and 'button "Send message"' in ai["snapshot"] and ai["stats"]["refs"] > 5

    role = b.snapshot(interactive="true")
    assert "[new]" not in role["snapshot"] and all(ref.startswith("e") for ref in role["refs"])
    b.act(kind="click", ref=ref_of(role, "button", "Add a button"))
    again = b.snapshot(interactive="true")
    fresh = next(line for line in again["snapshot"].splitlines() if "Fresh button" in line)
    assert fresh.endswith("[new]") and again["newElements"] == 1, again["snapshot"]
    assert [line for line in again["snapshot"].splitlines() if line.endswith("[new]")] == [fresh]

    aria = b.snapshot(format="aria")
    add = next(node for node in aria["nodes"] if node.get("name") == "Add a button")
    assert add["ref"].startswith("ax") and add["role"] == "button"
    b.act(kind="click", ref=add["ref"])
    assert (
        b.evaluate("[...document.querySelectorAll('button')].filter(x => x.textContent === 'Fresh button').length") == 2
    )

    b.goto(f"{site.url}/frame")
    inner = b.snapshot(frame="#panel", interactive="true")
    assert "Inner button" in inner["snapshot"] and "Outer page" not in inner["snapshot"]
    b.act(kind="click", ref=ref_of(inner, "button", "Inner button"))
    assert "Inner pressed" in b.snapshot(frame="#panel")["snapshot"]


def test_every_act_kind_does_to_the_page_what_it_says_and_the_form_reaches_the_site(
    b: Browser, site: ControlSite
) -> None:
    b.goto(f"{site.url}/form")
    snap = b.snapshot(interactive="true")

    def ref(role: str, name: str) -> str:
        return ref_of(snap, role, name)

    b.act(kind="type", ref=ref("textbox", "Your name"), text="Ada")
    b.act(kind="fill", fields=[{"ref": ref("textbox", "Email"), "type": "textbox", "value": "ada@example.com"}])
    b.act(kind="fill", fields=[{"ref": ref("checkbox", "Subscribe"), "type": "checkbox", "value": True}])
    b.act(kind="select", ref=ref("combobox", "Topic"), values=["Billing"])
    b.act(kind="click", ref=ref("button", "Double me"), double=True)
    assert b.status_text() == "double clicked"
    b.act(kind="hover", ref=ref("button", "Hover zone"))
    assert b.status_text() == "hovered"
    b.act(kind="drag", startRef=ref("button", "Drag source"), endRef=ref("button", "Drop target"))
    assert b.status_text() == "dropped"
    b.act(kind="clickCoords", x=650, y=30)
    assert b.status_text() == "spot hit"
    b.act(kind="click", ref=ref("textbox", "Keys"))
    b.act(kind="press", key="ArrowDown")
    assert b.status_text() == "key ArrowDown"
    b.act(kind="insertText", text="typed in place")
    assert b.act(kind="evaluate", fn="(el) => el.value", ref=ref("textbox", "Keys"))["result"] == "typed in place"
    b.act(kind="scrollIntoView", ref=ref("button", "Far away"))
    assert b.evaluate("window.scrollY") > 1000
    b.act(kind="resize", width=800, height=600)
    assert b.evaluate("[innerWidth, innerHeight]") == [800, 600]

    b.act(kind="click", ref=ref("button", "Send message"))
    waited = b.act(
        kind="wait",
        text="Thanks Ada",
        url="**/form",
        loadState="load",
        selector="h1",
        fn="() => document.title === 'Sent'",
        timeMs=10,
    )
    assert waited["ok"] is True and waited["url"] == f"{site.url}/form"
    expected = {"name": "Ada", "email": "ada@example.com", "topic": "Billing", "subscribe": "yes"}
    assert expected in site.log.submissions

    extra = ok(b.post("/tabs/open", {"url": f"{site.url}/blank"}))
    assert b.act(kind="close", targetId=extra["targetId"])["ok"] is True
    assert extra["targetId"] not in {tab["targetId"] for tab in ok(b.get("/tabs"))["tabs"]}


def test_a_batch_stops_after_the_navigation_it_caused_and_skips_the_rest(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/form")
    snap = b.snapshot(interactive="true")
    actions: list[dict[str, Any]] = [
        {"kind": "type", "ref": ref_of(snap, "textbox", "Your name"), "text": "Grace"},
        {"kind": "click", "ref": ref_of(snap, "button", "Send message")},
        {"kind": "press", "key": "Tab"},
    ]
    batch = b.act(kind="batch", actions=actions)
    assert batch["results"][0] == {"ok": True}
    assert batch["results"][1] == {"ok": True, "navigated": True, "url": f"{site.url}/form"}
    assert batch["aborted"] == {"reason": "navigation", "afterAction": 2, "url": f"{site.url}/form", "skipped": 1}
    assert any(entry.get("name") == "Grace" for entry in site.log.submissions)
    assert "Thanks Grace" in b.snapshot()["snapshot"]


def test_a_click_on_a_link_to_a_slow_page_is_done_once_and_the_page_arrives(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/slow-link")
    snap = b.snapshot(interactive="true")
    clicked = b.act(kind="click", ref=ref_of(snap, "link", "Open the slow page"), timeoutMs=1000)
    assert clicked["ok"] is True and site.log.slow_page_hits == 1
    site.log.slow_page_release.set()
    b.act(kind="wait", text="The slow page arrived")
    assert site.log.slow_page_hits == 1


def test_screenshots_and_pdfs_are_files_served_at_their_url(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/form")
    snap = b.snapshot(interactive="true")
    png = ok(b.post("/screenshot", {"type": "png", "fullPage": True}))
    assert png["mimeType"] == "image/png" and b.fetch(png["url"]).startswith(b"\x89PNG\r\n\x1a\n")
    jpeg = ok(b.post("/screenshot", {"type": "jpeg"}))
    assert jpeg["mimeType"] == "image/jpeg" and b.fetch(jpeg["url"]).startswith(b"\xff\xd8\xff")
    button = ref_of(snap, "button", "Send message")
    element = ok(b.post("/screenshot", {"ref": button}))
    element_png = b.fetch(element["url"])
    assert element_png.startswith(b"\x89PNG") and len(element_png) < len(b.fetch(png["url"]))
    wrong = b.post("/screenshot", {"ref": button, "fullPage": True})
    assert wrong.status_code == 400 and wrong.json()["error"] == "fullPage is not supported for element screenshots"

    pdf = ok(b.post("/pdf"))
    assert pdf["path"].endswith(".pdf") and b.fetch(pdf["url"]).startswith(b"%PDF")


def test_extract_captures_the_chosen_text_and_answers_a_question_with_one_model_call(
    b: Browser, site: ControlSite, fake: FakeProvider
) -> None:
    b.goto(f"{site.url}/article")
    captured = ok(b.post("/extract", {"selector": "main", "ignoreSelectors": [".ads"]}))
    assert "The Blue Widget costs 42 EUR" in captured["text"] and captured["chars"] == len(captured["text"])
    assert "sponsored" not in captured["text"] and "Imprint" not in captured["text"]
    refused(b.post("/extract", {"selector": "#no-such-thing"}), 400, "ACT_INVALID_REQUEST")

    marker = token("EXTRACT")
    fake.script(marker, [text("It costs 42 EUR.")])
    answered = ok(b.post("/extract", {"query": f"{marker} What does the Blue Widget cost?"}))
    assert answered["answer"] == "It costs 42 EUR." and answered["found"] is True
    asked = fake.requests_matching(marker)
    assert len(asked) == 1 and "The Blue Widget costs 42 EUR" in asked[0].text


def test_console_errors_and_requests_show_what_the_page_did_with_secrets_redacted(
    b: Browser, site: ControlSite
) -> None:
    b.goto(f"{site.url}/blank")
    for log in ("/console", "/errors", "/requests"):
        b.get(log, clear="true")
    b.goto(f"{site.url}/noisy")

    def console_errors() -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = ok(b.get("/console", level="error"))["entries"]
        return entries

    wait_until(console_errors, 10, what="the console error")
    assert [entry["text"] for entry in console_errors()] == ["boom in the console"]
    everything = [entry["text"] for entry in ok(b.get("/console", clear="true"))["entries"]]
    assert "just saying hello" in everything
    assert ok(b.get("/console"))["entries"] == []
    wait_until(lambda: ok(b.get("/errors"))["entries"], 10, what="the uncaught error")
    assert "boom uncaught" in ok(b.get("/errors", clear="true"))["entries"][0]["message"]
    assert ok(b.get("/errors"))["entries"] == []

    b.goto(f"{site.url}/fetcher")
    b.act(kind="wait", text="loaded data-42")
    data = ok(b.get("/requests", filter="/api/data"))
    assert [entry["url"] for entry in data["entries"]] == [f"{site.url}/api/data"]
    assert data["entries"][0]["headers"]["authorization"] == "[redacted]" and data["entries"][0]["status"] == 200
    everything_seen = b.get("/requests").text
    assert "/api/ping?n=1" in everything_seen and "sekrit" not in everything_seen
    body = ok(b.post("/response/body", {"url": "**/api/data"}))
    assert body["status"] == 200 and '"data-42"' in body["body"] and body["truncated"] is False
    ok(b.get("/requests", clear="true"))
    assert ok(b.get("/requests"))["entries"] == []


def test_dialogs_block_until_answered_and_an_armed_answer_reaches_the_page(b: Browser, site: ControlSite) -> None:
    b.goto(f"{site.url}/dialogs")
    snap = b.snapshot(interactive="true")

    armed = ok(b.post("/hooks/dialog", {"accept": True, "promptText": "Grace Hopper"}))
    assert armed["armed"] is True
    b.act(kind="click", ref=ref_of(snap, "button", "Prompt"))
    assert b.status_text() == "Hello, Grace Hopper"

    blocked = b.act(kind="click", ref=ref_of(snap, "button", "Alert"))
    assert blocked["blockedByDialog"] is True, blocked
    assert b.snapshot()["blockedByDialog"] is True
    pending = ok(b.get("/dialogs"))["pending"]
    assert [(item["type"], item["message"]) for item in pending] == [("alert", "Heads up")]
    ok(b.post("/hooks/dialog", {"accept": True, "dialogId": pending[0]["id"]}))
    assert b.status_text() == "alert closed"

    ok(b.post("/hooks/dialog", {"accept": False}))
    b.act(kind="click", ref=ref_of(snap, "button", "Confirm"))
    assert b.status_text() == "confirmed false"
    recent = ok(b.get("/dialogs"))
    assert recent["pending"] == [] and {item["type"] for item in recent["recent"]} == {"prompt", "alert", "confirm"}


def test_each_error_code_is_returned_where_the_user_would_hit_it(
    server: ServerProcess, b: Browser, site: ControlSite
) -> None:
    b.goto(f"{site.url}/form")
    snap = b.snapshot(interactive="true")
    name = ref_of(snap, "textbox", "Your name")

    refused(b.post("/act", {}), 400, "ACT_KIND_REQUIRED")
    refused(b.post("/act", {"kind": "fly"}), 400, "ACT_KIND_REQUIRED")
    refused(b.post("/act", {"kind": "type", "ref": name}), 400, "ACT_INVALID_REQUEST")
    refused(b.post("/act", {"kind": "click", "selector": "button"}), 400, "ACT_SELECTOR_UNSUPPORTED")
    refused(b.post("/act", {"kind": "click", "ref": "e9999"}), 409, "REF_STALE")
    disabled = {"kind": "click", "ref": ref_of(snap, "button", "Never enabled"), "timeoutMs": 500}
    refused(b.post("/act", disabled), 422, "ACT_OPERATION_FAILED")
    refused(b.post("/act", {"kind": "wait", "textGone": "Contact", "timeoutMs": 300}), 422, "ACT_OPERATION_FAILED")

    other = ok(b.post("/tabs/open", {"url": f"{site.url}/blank"}))
    mismatch = {
        "kind": "batch",
        "targetId": snap["targetId"],
        "actions": [{"kind": "type", "ref": name, "text": "never typed", "targetId": other["targetId"]}],
    }
    refused(b.post("/act", mismatch), 403, "ACT_TARGET_ID_MISMATCH")
    ok(b.http.delete(f"{b.base}/tabs/{other['targetId']}"))
    refused(b.http.delete(f"{b.base}/tabs/{other['targetId']}"), 404, "TAB_NOT_FOUND")
    ok(b.post("/tabs/focus", {"targetId": snap["targetId"]}))
    refused(b.post("/navigate", {"url": f"http://127.0.0.1:{server.port}/health"}), 403, "NAVIGATION_BLOCKED")
    assert b.evaluate("document.forms[0].name.value") == ""  # nothing refused above typed anything

    b.goto(f"{site.url}/form")  # a new document: the refs of the old one are stale
    refused(b.post("/act", {"kind": "type", "ref": name, "text": "late"}), 409, "REF_STALE")


def test_evaluate_is_refused_when_disabled_and_an_ended_browser_is_not_live(
    tmp_path_factory: pytest.TempPathFactory, site: ControlSite
) -> None:
    home = tmp_path_factory.mktemp("control-no-eval-home")
    with (
        running_server(home, {"API_KEY": API_KEY, "CONTROL_EVALUATE": "0"}) as process,
        api_client(process) as http,
    ):
        created = create_browser(http)
        b = Browser(http, created["id"])
        b.goto(f"{site.url}/blank")
        refused(b.post("/act", {"kind": "evaluate", "fn": "1 + 1"}), 403, "ACT_EVALUATE_DISABLED")
        refused(b.post("/act", {"kind": "wait", "fn": "() => true"}), 403, "ACT_EVALUATE_DISABLED")
        assert b.act(kind="wait", text="Blank page")["ok"] is True
        stop_browser(http, created["id"])
        refused(b.get("/tabs"), 409, "browser_not_live")
        refused(b.post("/navigate", {"url": f"{site.url}/blank"}), 409, "browser_not_live")
