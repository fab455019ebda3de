"""Snapshots and their refs on real pages: ai, role (interactive, frame), aria; deltas, budgets, staleness."""

from __future__ import annotations

import re
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


async def _open(engine: ControlEngine, url: str) -> Page:
    page = await engine.page(None)
    await page.goto(url)
    return page


def _ref_of(snapshot: dict[str, Any], role: str, name: str, nth: int = 0) -> str:
    matches = [ref for ref, info in snapshot["refs"].items() if info["role"] == role and info.get("name") == name]
    return str(matches[nth])


async def test_ai_snapshot_refs_drive_actions(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/form")
    snap = await call(engine, "GET", "/snapshot")
    assert snap["ok"] is True and snap["format"] == "ai" and snap["url"] == f"{sites.main}/form"
    assert 'heading "Sign up"' in snap["snapshot"]
    assert snap["stats"]["refs"] == len(snap["refs"]) and snap["stats"]["interactive"] >= 6
    assert snap["stats"]["chars"] == len(snap["snapshot"])
    second_go = _ref_of(snap, "button", "Go", 1)
    assert f"[ref={second_go}]" in snap["snapshot"]

    await call(engine, "POST", "/act", {"kind": "click", "ref": second_go})
    assert await page.evaluate("document.body.dataset.clicked") == "second"


async def test_role_snapshot_numbers_duplicates(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/form")
    snap = await call(engine, "GET", "/snapshot", interactive="true")
    lines = snap["snapshot"].splitlines()
    assert all(line.startswith("- ") for line in lines)  # interactive output is flat
    assert '- button "Go" [ref=e' in snap["snapshot"] and "[nth=1]" in snap["snapshot"]
    assert all(re.fullmatch(r"e\d+", ref) for ref in snap["refs"])
    goes = [ref for ref, info in snap["refs"].items() if info.get("name") == "Go"]
    assert [snap["refs"][ref]["nth"] for ref in goes] == [0, 1]
    assert "nth" not in snap["refs"][_ref_of(snap, "button", "Send")]

    await call(engine, "POST", "/act", {"kind": "click", "ref": goes[0]})
    assert await page.evaluate("document.body.dataset.clicked") == "first"


async def test_compact_and_depth_options(engine: ControlEngine, sites: Sites) -> None:
    await _open(engine, f"{sites.main}/form")
    compact = await call(engine, "GET", "/snapshot", compact="true")
    assert "[ref=e" in compact["snapshot"]
    shallow = await call(engine, "GET", "/snapshot", depth="0")
    assert all(not line.startswith(" ") for line in shallow["snapshot"].splitlines())
    efficient = await call(engine, "GET", "/snapshot", mode="efficient")
    assert efficient["refs"] and all(info["role"] != "heading" for info in efficient["refs"].values())


async def test_frame_snapshot_reaches_a_cross_origin_iframe(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/frame")
    inner = page.frame_locator("#inner")
    await inner.get_by_role("button").wait_for()
    snap = await call(engine, "GET", "/snapshot", frame="#inner", interactive="true")
    assert list(snap["refs"].values()) == [{"role": "button", "name": "Inner button"}]
    await call(engine, "POST", "/act", {"kind": "click", "ref": next(iter(snap["refs"]))})
    assert await inner.locator("body").get_attribute("data-pressed") == "yes"
    assert await page.evaluate("document.body.dataset.outer") is None


async def test_ai_snapshot_includes_iframe_refs(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/frame")
    await page.frame_locator("#inner").get_by_role("button").wait_for()
    snap = await call(engine, "GET", "/snapshot")
    ref = _ref_of(snap, "button", "Inner button")
    assert ref.startswith("f")
    await call(engine, "POST", "/act", {"kind": "click", "ref": ref})
    assert await page.frame_locator("#inner").locator("body").get_attribute("data-pressed") == "yes"


async def test_aria_snapshot_nodes_are_actionable(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/form")
    snap = await call(engine, "GET", "/snapshot", format="aria", limit="300")
    assert snap["format"] == "aria" and snap["nodes"][0]["ref"] == "ax1" and snap["nodes"][0]["depth"] == 0
    button = next(node for node in snap["nodes"] if node["role"] == "button" and node["name"] == "Go")
    await call(engine, "POST", "/act", {"kind": "click", "ref": button["ref"]})
    assert await page.evaluate("document.body.dataset.clicked") == "first"
    limited = await call(engine, "GET", "/snapshot", format="aria", limit="5")
    assert len(limited["nodes"]) == 5


async def test_new_marks_lines_absent_from_the_previous_snapshot(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/form")
    first = await call(engine, "GET", "/snapshot", interactive="true")
    assert "[new]" not in first["snapshot"] and "newElements" not in first
    await page.evaluate("document.body.insertAdjacentHTML('beforeend', '<button>Fresh</button>')")
    second = await call(engine, "GET", "/snapshot", interactive="true")
    assert second["newElements"] == 1
    assert [line for line in second["snapshot"].splitlines() if "[new]" in line] == [
        next(line for line in second["snapshot"].splitlines() if '"Fresh"' in line)
    ]
    assert second["snapshot"].endswith("1 new element(s) since last snapshot")

    await page.reload()
    after_navigation = await call(engine, "GET", "/snapshot", interactive="true")
    assert "[new]" not in after_navigation["snapshot"]


async def test_max_chars_truncates_and_drops_hidden_refs(engine: ControlEngine, sites: Sites) -> None:
    await _open(engine, f"{sites.main}/form")
    whole = await call(engine, "GET", "/snapshot")
    cut = await call(engine, "GET", "/snapshot", maxChars="120")
    assert cut["truncated"] is True and len(cut["snapshot"]) <= 120
    assert cut["snapshot"].endswith("[...TRUNCATED - page too large]")
    assert 0 < len(cut["refs"]) < len(whole["refs"])


async def test_refs_go_stale_after_navigation(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/form")
    snap = await call(engine, "GET", "/snapshot", interactive="true")
    await page.goto(f"{sites.main}/form")
    with pytest.raises(ControlError) as stale:
        await call(engine, "POST", "/act", {"kind": "click", "ref": next(iter(snap["refs"]))})
    assert stale.value.status == 409 and stale.value.code == "REF_STALE"
    with pytest.raises(ControlError) as unknown:
        await call(engine, "POST", "/act", {"kind": "click", "ref": "e999"})
    assert unknown.value.code == "REF_STALE"


async def test_snapshot_of_a_blocked_tab(engine: ControlEngine, sites: Sites) -> None:
    page = await _open(engine, f"{sites.main}/gadgets")
    snap = await call(engine, "GET", "/snapshot", interactive="true")
    blocked = await call(engine, "POST", "/act", {"kind": "click", "ref": _ref_of(snap, "button", "Ask")})
    assert blocked["blockedByDialog"] is True
    assert blocked["browserState"]["dialogs"]["pending"][0]["message"] == "Sure?"
    during = await call(engine, "GET", "/snapshot")
    assert during["blockedByDialog"] is True and during["snapshot"] == "" and during["refs"] == {}
    aria = await call(engine, "GET", "/snapshot", format="aria")
    assert aria["nodes"] == []
    assert page.url.endswith("/gadgets")
