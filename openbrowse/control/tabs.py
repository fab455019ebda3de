"""Status, doctor, tabs and navigation routes of the browser control API (spec §20.1, §20.2).

Tabs are the pages of the browser's default context. A tab is named by its raw CDP ``targetId``, its ``tabId``
(``t1``, stable for this attachment), its label, or a unique prefix of the raw id; ``suggestedTargetId`` is the label
when there is one, else the ``tabId``. Calls without a ``targetId`` act on the active tab: the one last opened or
focused through this API, else the last one.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError, Page

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import ControlError, act_invalid, operation_failed, tab_not_found

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["navigate", "open_tab", "timeout_ms"]

NAVIGATION_TIMEOUT_MS = 20_000
NAVIGATION_TIMEOUT_CAP_MS = 60_000


def timeout_ms(call: ControlCall, default: int, cap: int) -> int:
    """``timeoutMs`` from the call, bounded to ``1..cap``; ``default`` when absent."""
    value = call.number("timeoutMs")
    if value is None or value <= 0:
        return default
    return int(min(value, cap))


async def _tabs(engine: ControlEngine) -> list[dict[str, Any]]:
    return [await engine.tab_info(page) for page in engine.pages]


@route("GET", "", mutating=False)
async def status(call: ControlCall) -> dict[str, Any]:
    """Whether the browser is live and attached, and its tabs."""
    engine = call.engine
    try:
        await engine.attach()
    except ControlError as exc:
        return {
            "running": False,
            "engine": "playwright",
            "attached": False,
            "controllable": False,
            "reason": exc.message,
            "activeTargetId": None,
            "tabs": [],
        }
    active = engine.active_page()
    return {
        "running": True,
        "engine": "playwright",
        "attached": engine.attached,
        "controllable": True,
        "reason": None,
        "activeTargetId": await engine.target_id_of(active) if active is not None else None,
        "tabs": await _tabs(engine),
    }


@route("GET", "/doctor", mutating=False)
async def doctor(call: ControlCall) -> dict[str, Any]:
    """Checks of the control path; ``deep=true`` adds a live snapshot probe."""
    checks: list[dict[str, Any]] = []
    try:
        await call.engine.attach()
        checks.append({"id": "attach", "label": "Playwright over CDP", "status": "pass", "summary": "attached"})
    except ControlError as exc:
        fail = {"id": "attach", "label": "Playwright over CDP", "status": "fail", "summary": exc.message}
        checks.append(fail)
        return {"ok": False, "engine": "playwright", "checks": checks}
    pages = call.engine.pages
    checks.append(
        {
            "id": "tabs",
            "label": "Tabs",
            "status": "pass" if pages else "warn",
            "summary": f"{len(pages)} open tab(s)",
        }
    )
    if call.flag("deep") or call.flag("live"):
        checks.append(await _live_probe(call.engine))
    return {"ok": all(check["status"] != "fail" for check in checks), "engine": "playwright", "checks": checks}


async def _live_probe(engine: ControlEngine) -> dict[str, Any]:
    probe: dict[str, Any] = {"id": "live-snapshot", "label": "Live snapshot"}
    try:
        page = await engine.page(None)
        text = await page.aria_snapshot(mode="ai", timeout=5_000)
    except (ControlError, PlaywrightError) as exc:
        return {**probe, "status": "fail", "summary": str(exc).splitlines()[0]}
    lines = len(text.splitlines())
    return {**probe, "status": "pass" if lines else "warn", "summary": f"ai snapshot returned {lines} line(s)"}


@route("GET", "/tabs", mutating=False)
async def list_tabs(call: ControlCall) -> dict[str, Any]:
    """The open tabs."""
    try:
        await call.engine.attach()
    except ControlError:
        return {"running": False, "tabs": []}
    return {"running": True, "tabs": await _tabs(call.engine)}


async def open_tab(engine: ControlEngine, url: str, label: str | None = None) -> Page:
    """A new tab at ``url`` (checked first), labelled and made active."""
    await engine.check_url(url)
    await engine.attach()
    if label is not None:
        _check_label_free(engine, label)
    page = await engine.context.new_page()
    state = engine.state(page)
    state.opened_by_us = True
    state.label = label
    engine.focus(page)
    if url != "about:blank":
        try:
            await page.goto(url, wait_until="domcontentloaded", timeout=NAVIGATION_TIMEOUT_MS)
        except PlaywrightError as exc:
            raise operation_failed(f"Navigation to {url} failed: {str(exc).splitlines()[0]}") from exc
    return page


def _check_label_free(engine: ControlEngine, label: str) -> None:
    if any(engine.state(page).label == label for page in engine.pages):
        raise act_invalid(f"Another tab is already labelled {label!r}")


@route("POST", "/tabs/open", mutating=True)
async def open_tab_route(call: ControlCall) -> dict[str, Any]:
    """Open a URL in a new tab."""
    url = call.arg("url")
    if not isinstance(url, str) or not url.strip():
        raise ControlError(400, "url is required")
    page = await open_tab(call.engine, url.strip(), call.text("label"))
    return await call.engine.tab_info(page)


@route("POST", "/tabs/focus", mutating=True)
async def focus_tab(call: ControlCall) -> dict[str, Any]:
    """Make a tab the active one."""
    target = call.text("targetId", required=True)
    page = await call.engine.page(target)
    await _focus(call.engine, page)
    return {"ok": True, "targetId": await call.engine.target_id_of(page)}


async def _focus(engine: ControlEngine, page: Page) -> None:
    engine.focus(page)
    with contextlib.suppress(PlaywrightError):
        await page.bring_to_front()


@route("DELETE", "/tabs/{target_id}", mutating=True)
async def close_tab(call: ControlCall) -> dict[str, Any]:
    """Close a tab."""
    target = call.path.get("target_id") or call.text("targetId", required=True)
    page = await call.engine.page(target)
    target_id = await call.engine.target_id_of(page)
    await page.close()
    return {"ok": True, "targetId": target_id}


@route("POST", "/tabs/action", mutating=True)
async def tab_action(call: ControlCall) -> dict[str, Any]:
    """Index-based tab actions: new, label, select, close, list."""
    engine = call.engine
    action = call.text("action")
    if action == "list":
        return {"ok": True, "tabs": (await list_tabs(call))["tabs"]}
    if action == "new":
        page = await open_tab(engine, call.text("url") or "about:blank", call.text("label"))
        return {"ok": True, "tab": await engine.tab_info(page)}
    if action == "label":
        page = await engine.page(call.text("targetId", required=True))
        label = call.text("label", required=True)
        assert label is not None
        if engine.state(page).label != label:
            _check_label_free(engine, label)
        engine.state(page).label = label
        return {"ok": True, "tab": await engine.tab_info(page)}
    if action in {"select", "close"}:
        page = await _page_at(call, required=action == "select")
        if action == "select":
            await _focus(engine, page)
        else:
            target_id = await engine.target_id_of(page)
            await page.close()
            return {"ok": True, "targetId": target_id}
        return {"ok": True, "targetId": await engine.target_id_of(page)}
    raise ControlError(400, "unknown tab action", "ACT_INVALID_REQUEST")


async def _page_at(call: ControlCall, *, required: bool) -> Page:
    """The tab at ``index`` (0-based), or by ``targetId``; ``close`` without either takes the first tab."""
    await call.engine.attach()
    target = call.text("targetId")
    if target is not None:
        return await call.engine.page(target)
    index = call.number("index")
    if index is None:
        if required:
            raise act_invalid("index is required")
        index = 0
    if index != int(index) or index < 0:
        raise act_invalid("index must be a non-negative integer")
    pages = call.engine.pages
    if int(index) >= len(pages):
        raise tab_not_found(str(int(index)))
    return pages[int(index)]


async def navigate(engine: ControlEngine, page: Page, url: str, wait_ms: int) -> None:
    await engine.check_url(url)
    try:
        await page.goto(url, wait_until="domcontentloaded", timeout=wait_ms)
    except PlaywrightError as exc:
        raise operation_failed(f"Navigation to {url} failed: {str(exc).splitlines()[0]}") from exc


@route("POST", "/navigate", mutating=True)
async def navigate_route(call: ControlCall) -> dict[str, Any]:
    """Load a URL in a tab."""
    url = call.text("url", required=True)
    assert url is not None
    await call.engine.check_url(url)
    page = await call.engine.page(call.target_id)
    await navigate(call.engine, page, url, timeout_ms(call, NAVIGATION_TIMEOUT_MS, NAVIGATION_TIMEOUT_CAP_MS))
    return {"ok": True, "targetId": await call.engine.target_id_of(page), "url": page.url}
