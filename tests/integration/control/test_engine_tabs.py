"""Status, tabs and navigation through the control routes, on a real headless Chromium."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Iterator

import pytest

from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from openbrowse.control.target import ControlTarget
from openbrowse.network.policy import NetworkRules
from tests.integration.control.control_site import Sites, call, serve_sites


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    with serve_sites() as running:
        yield running


async def test_status_lists_the_existing_tab(engine: ControlEngine) -> None:
    status = await call(engine, "GET", "")
    assert status["running"] is True and status["engine"] == "playwright" and status["attached"] is True
    assert [tab["tabId"] for tab in status["tabs"]] == ["t1"]
    tab = status["tabs"][0]
    assert tab["type"] == "page" and tab["url"] == "about:blank" and tab["suggestedTargetId"] == "t1"
    assert status["activeTargetId"] == tab["targetId"]


async def test_open_label_focus_and_close_tabs(engine: ControlEngine, sites: Sites) -> None:
    opened = await call(engine, "POST", "/tabs/open", {"url": f"{sites.main}/form", "label": "form"})
    assert opened["tabId"] == "t2" and opened["label"] == "form" and opened["suggestedTargetId"] == "form"
    assert opened["title"] == "Form" and opened["url"] == f"{sites.main}/form"

    page = await engine.page("form")
    assert await page.locator("h1").inner_text() == "Sign up"
    assert await engine.page(opened["targetId"][:10]) is page
    assert (await call(engine, "GET", ""))["activeTargetId"] == opened["targetId"]

    first = (await call(engine, "GET", "/tabs"))["tabs"][0]
    assert (await call(engine, "POST", "/tabs/focus", {"targetId": "t1"}))["targetId"] == first["targetId"]
    assert (await call(engine, "GET", ""))["activeTargetId"] == first["targetId"]

    assert (await call(engine, "DELETE", "/tabs/{target_id}", path_target_id="form"))["ok"] is True
    assert page.is_closed()
    assert [tab["tabId"] for tab in (await call(engine, "GET", "/tabs"))["tabs"]] == ["t1"]


async def test_tab_actions(engine: ControlEngine) -> None:
    created = await call(engine, "POST", "/tabs/action", {"action": "new", "label": "scratch"})
    assert created["tab"]["label"] == "scratch" and created["tab"]["url"] == "about:blank"
    relabelled = await call(engine, "POST", "/tabs/action", {"action": "label", "targetId": "t2", "label": "notes"})
    assert relabelled["tab"]["suggestedTargetId"] == "notes"
    listed = await call(engine, "POST", "/tabs/action", {"action": "list"})
    assert [tab.get("label") for tab in listed["tabs"]] == [None, "notes"]
    selected = await call(engine, "POST", "/tabs/action", {"action": "select", "index": 0})
    assert selected["targetId"] == listed["tabs"][0]["targetId"]
    closed = await call(engine, "POST", "/tabs/action", {"action": "close", "index": 1})
    assert closed["targetId"] == listed["tabs"][1]["targetId"]
    assert len((await call(engine, "GET", "/tabs"))["tabs"]) == 1
    with pytest.raises(ControlError) as unknown:
        await call(engine, "POST", "/tabs/action", {"action": "shuffle"})
    assert unknown.value.status == 400


async def test_navigate_reports_the_new_url(engine: ControlEngine, sites: Sites) -> None:
    result = await call(engine, "POST", "/navigate", {"url": f"{sites.main}/done?name=Ada"})
    assert result["ok"] is True and result["url"] == f"{sites.main}/done?name=Ada"
    page = await engine.page(result["targetId"])
    assert await page.locator("#result").inner_text() == "Hello Ada"
    assert engine.state(page).document >= 1


async def test_refusals(engine: ControlEngine, control_target: ControlTarget, sites: Sites) -> None:
    with pytest.raises(ControlError) as missing:
        await call(engine, "POST", "/tabs/open", {})
    assert missing.value.status == 400 and missing.value.body()["error"] == "url is required"
    with pytest.raises(ControlError) as scheme:
        await call(engine, "POST", "/navigate", {"url": "file:///etc/passwd"})
    assert scheme.value.status == 400 and "http(s)" in scheme.value.message
    with pytest.raises(ControlError) as unknown:
        await call(engine, "POST", "/tabs/focus", {"targetId": "t99"})
    assert unknown.value.status == 404 and unknown.value.code == "TAB_NOT_FOUND"

    guarded = ControlEngine(dataclasses.replace(control_target, rules=NetworkRules(policy="public-only")))
    try:
        with pytest.raises(ControlError) as blocked:
            await call(guarded, "POST", "/navigate", {"url": f"{sites.main}/form"})
        assert blocked.value.status == 403 and blocked.value.code == "NAVIGATION_BLOCKED"
        page = await guarded.page(None)
        assert page.url == "about:blank"
    finally:
        await guarded.aclose()


async def test_concurrent_first_calls_share_one_attachment(engine: ControlEngine) -> None:
    pages = await asyncio.gather(engine.page(None), engine.page(None), engine.page("t1"))
    assert pages[0] is pages[1] is pages[2]
    assert len(engine.pages) == 1
