"""``kind: "batch"`` on real pages: results in order, stopOnError, aborts on navigation and close, target checks."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.async_api import Page

from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from tests.integration.control.control_site import Sites, call, serve_sites


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    with serve_sites() as running:
        yield running


async def _refs(engine: ControlEngine, url: str) -> tuple[Page, dict[str, str]]:
    page = await engine.page(None)
    await page.goto(url)
    snap = await call(engine, "GET", "/snapshot", interactive="true")
    by_name: dict[str, str] = {}
    for ref, info in snap["refs"].items():
        by_name.setdefault(info.get("name", ""), ref)
    return page, by_name


async def batch(engine: ControlEngine, actions: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return await call(engine, "POST", "/act", {"kind": "batch", "actions": actions, **extra})


async def test_actions_run_in_order(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _refs(engine, f"{sites.main}/form")
    result = await batch(
        engine,
        [
            {"kind": "type", "ref": refs["Name"], "text": "Lin"},
            {"kind": "click", "ref": refs["Agree"]},
            {"kind": "batch", "actions": [{"kind": "select", "ref": refs["Colour"], "values": ["blue"]}]},
            {"kind": "evaluate", "fn": "document.querySelector('#name').value"},
        ],
    )
    assert result["ok"] is True and "aborted" not in result
    assert [entry["ok"] for entry in result["results"]] == [True, True, True, True]
    assert result["results"][3]["result"] == "Lin"
    assert await page.locator("#agree").is_checked() and await page.locator("#colour").input_value() == "blue"


async def test_stop_on_error_and_continue(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _refs(engine, f"{sites.main}/form")
    failing = {"kind": "wait", "text": "Never", "timeoutMs": 200}
    stopped = await batch(engine, [failing, {"kind": "click", "ref": refs["Go"]}])
    assert [entry["ok"] for entry in stopped["results"]] == [False]
    assert "error" in stopped["results"][0]
    assert await page.evaluate("document.body.dataset.clicked") is None
    went_on = await batch(engine, [failing, {"kind": "click", "ref": refs["Go"]}], stopOnError=False)
    assert [entry["ok"] for entry in went_on["results"]] == [False, True]
    assert await page.evaluate("document.body.dataset.clicked") == "first"


async def test_navigation_aborts_the_rest(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _refs(engine, f"{sites.main}/form")
    result = await batch(
        engine,
        [
            {"kind": "type", "ref": refs["Name"], "text": "Bo"},
            {"kind": "click", "ref": refs["Send"]},
            {"kind": "click", "ref": refs["Go"]},
            {"kind": "press", "key": "Tab"},
        ],
    )
    assert result["aborted"]["reason"] == "navigation"
    assert result["aborted"]["afterAction"] == 2 and result["aborted"]["skipped"] == 2
    assert "/done?name=Bo" in result["aborted"]["url"]
    assert result["results"][-1] == {"ok": True, "navigated": True, "url": result["aborted"]["url"]}
    assert await page.locator("#result").inner_text() == "Hello Bo"


async def test_close_aborts_the_rest(engine: ControlEngine, sites: Sites) -> None:
    opened = await call(engine, "POST", "/tabs/open", {"url": f"{sites.main}/form"})
    result = await batch(engine, [{"kind": "close"}, {"kind": "press", "key": "Tab"}], targetId=opened["targetId"])
    assert result["aborted"]["reason"] == "closed" and result["aborted"]["skipped"] == 1
    assert len(engine.pages) == 1


async def test_nested_target_on_another_tab_is_refused(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _refs(engine, f"{sites.main}/form")
    other = await call(engine, "POST", "/tabs/open", {"url": "about:blank"})
    actions = [{"kind": "click", "ref": refs["Go"]}, {"kind": "press", "key": "a", "targetId": other["targetId"]}]
    with pytest.raises(ControlError) as refused:
        await batch(engine, actions, targetId="t1")
    assert refused.value.status == 403 and refused.value.code == "ACT_TARGET_ID_MISMATCH"
    assert await page.evaluate("document.body.dataset.clicked") is None
    same = await batch(engine, [{"kind": "click", "ref": refs["Go"], "targetId": "t1"}], targetId="t1")
    assert same["results"] == [{"ok": True}]


async def test_twenty_actions(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _refs(engine, f"{sites.main}/form")
    actions = [{"kind": "type", "ref": refs["Name"], "text": f"n{index}"} for index in range(20)]
    result = await batch(engine, actions)
    assert len(result["results"]) == 20 and all(entry["ok"] for entry in result["results"])
    assert await page.locator("#name").input_value() == "n19"
