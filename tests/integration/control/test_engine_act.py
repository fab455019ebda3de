"""``POST /act`` on real pages: every kind, its refusals, dialogs, and what the page shows afterwards."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.async_api import Page

from openbrowse.control.engine import ControlEngine
from openbrowse.control.errors import ControlError
from openbrowse.control.target import ControlTarget
from tests.integration.control.control_site import Sites, call, serve_sites


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    with serve_sites() as running:
        yield running


async def _snapshot(engine: ControlEngine, url: str) -> tuple[Page, dict[str, str]]:
    """Open ``url`` in the active tab and take an interactive snapshot: ``{name: ref}``."""
    page = await engine.page(None)
    await page.goto(url)
    snap = await call(engine, "GET", "/snapshot", interactive="true")
    by_name: dict[str, str] = {}
    for ref, info in snap["refs"].items():
        by_name.setdefault(info.get("name", ""), ref)
    return page, by_name


async def act(engine: ControlEngine, **body: Any) -> dict[str, Any]:
    return await call(engine, "POST", "/act", body)


async def test_type_and_submit_navigates(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/form")
    result = await act(engine, kind="type", ref=refs["Name"], text="Ada", submit=True)
    assert result["ok"] is True and "/done?name=Ada" in result["url"]
    assert await page.locator("#result").inner_text() == "Hello Ada"


async def test_fill_select_and_checkbox(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/form")
    fields = [
        {"ref": refs["Name"], "type": "text", "value": "Grace"},
        {"ref": refs["Agree"], "type": "checkbox", "value": True},
        {"ref": refs["Colour"], "type": "select", "value": "green"},
    ]
    await act(engine, kind="fill", fields=fields)
    assert await page.locator("#name").input_value() == "Grace"
    assert await page.locator("#agree").is_checked()
    assert await page.locator("#colour").input_value() == "green"
    selected = await act(engine, kind="select", ref=refs["Colour"], values=["blue"])
    assert selected["result"] == ["blue"] and await page.locator("#colour").input_value() == "blue"


async def test_pointer_and_keyboard_kinds(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/gadgets")
    await act(engine, kind="hover", ref=refs["Hover me"])
    assert await page.evaluate("document.body.querySelector('#hover').dataset.hovered") == "yes"
    await act(engine, kind="drag", startRef=refs["Drag source"], endRef=refs["Drop target"])
    assert await page.evaluate("document.body.dataset.dropped") == "yes"
    await act(engine, kind="click", ref=refs["Keys"])
    await act(engine, kind="press", key="ArrowDown")
    assert await page.locator("#keys").get_attribute("data-last") == "ArrowDown"
    await act(engine, kind="insertText", text="héllo")
    assert await page.locator("#keys").input_value() == "héllo"
    await act(engine, kind="clickCoords", x=330, y=35)
    assert await page.evaluate("document.body.dataset.spot") == "hit"
    await act(engine, kind="scrollIntoView", ref=refs["Far away"])
    assert await page.evaluate("window.scrollY") > 1000
    await act(engine, kind="resize", width=640, height=480)
    assert await page.evaluate("[innerWidth, innerHeight]") == [640, 480]


async def test_wait_conditions_combine(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/form")
    await act(engine, kind="click", ref=refs["Later"])
    await act(engine, kind="wait", text="Arrived later", selector="#later", loadState="load", fn="!!window.document")
    assert await page.locator("#later").inner_text() == "Arrived later"
    with pytest.raises(ControlError) as timed_out:
        await act(engine, kind="wait", text="Never shown", timeoutMs=300)
    assert timed_out.value.status == 422 and timed_out.value.code == "ACT_OPERATION_FAILED"


async def test_evaluate_forms_and_the_switch(
    engine: ControlEngine, control_target: ControlTarget, sites: Sites
) -> None:
    _, refs = await _snapshot(engine, f"{sites.main}/form")
    assert (await act(engine, kind="evaluate", fn="document.title"))["result"] == "Form"
    assert (await act(engine, kind="evaluate", fn="() => 6 * 7"))["result"] == 42
    assert (await act(engine, kind="evaluate", fn="const t = document.title; return t + '!';"))["result"] == "Form!"
    by_ref = await act(engine, kind="evaluate", fn="(el) => el.textContent", ref=refs["Later"])
    assert by_ref["result"] == "Later"

    locked = ControlEngine(dataclasses.replace(control_target, evaluate_enabled=False))
    try:
        for body in ({"kind": "evaluate", "fn": "1"}, {"kind": "wait", "fn": "true"}):
            with pytest.raises(ControlError) as refused:
                await act(locked, **body)
            assert refused.value.status == 403 and refused.value.code == "ACT_EVALUATE_DISABLED"
    finally:
        await locked.aclose()


async def test_refusals_before_anything_runs(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/form")
    cases: list[tuple[dict[str, Any], int, str | None]] = [
        ({}, 400, "ACT_KIND_REQUIRED"),
        ({"kind": "teleport"}, 400, "ACT_KIND_REQUIRED"),
        ({"kind": "click"}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "click", "ref": refs["Go"], "selector": "#go1"}, 400, "ACT_SELECTOR_UNSUPPORTED"),
        ({"kind": "resize", "width": "wide", "height": 10}, 400, "ACT_INVALID_REQUEST"),
        ({"kind": "batch", "actions": [{"kind": "click", "ref": refs["Go"]}, {"kind": "press"}]}, 400, None),
    ]
    for body, status, code in cases:
        with pytest.raises(ControlError) as refused:
            await act(engine, **body)
        assert refused.value.status == status, body
        assert code is None or refused.value.code == code
    assert await page.evaluate("document.body.dataset.clicked") is None


async def test_playwright_failure_is_422(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/form")
    await page.evaluate("document.querySelector('#go1').disabled = true")
    with pytest.raises(ControlError) as failed:
        await act(engine, kind="click", ref=refs["Go"], timeoutMs=300)
    assert failed.value.status == 422 and failed.value.code == "ACT_OPERATION_FAILED"


async def test_dialog_blocks_until_answered(engine: ControlEngine, sites: Sites) -> None:
    page, refs = await _snapshot(engine, f"{sites.main}/gadgets")
    blocked = await act(engine, kind="click", ref=refs["Ask"])
    assert blocked["blockedByDialog"] is True and blocked["targetId"]
    pending = blocked["browserState"]["dialogs"]["pending"]
    assert [dialog["type"] for dialog in pending] == ["confirm"]
    again = await act(engine, kind="press", key="Tab")
    assert again["blockedByDialog"] is True
    await call(engine, "POST", "/hooks/dialog", {"accept": True})
    assert await page.evaluate("document.body.dataset.answer") == "true"


async def test_close_closes_the_tab(engine: ControlEngine, sites: Sites) -> None:
    opened = await call(engine, "POST", "/tabs/open", {"url": f"{sites.main}/form"})
    page = await engine.page(opened["targetId"])
    closed = await call(engine, "POST", "/act", {"kind": "close", "targetId": opened["targetId"]})
    assert closed["targetId"] == opened["targetId"] and "url" not in closed
    assert page.is_closed()
