"""Performing one ``/act`` action on a page with Playwright (spec §20.2).

Every kind but ``batch``. Refs become locators through the engine (a stale ref is refused before anything runs);
Playwright's own timeout bounds each step. :class:`NavigationSettle` lets an action that started a main-frame
navigation wait for it to commit (or fail), so the caller sees the new URL and a batch sees the new document.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Literal

from playwright.async_api import Download, Error as PlaywrightError, Frame, Page, Request

from openbrowse.control.act_request import evaluate_source
from openbrowse.control.errors import act_invalid, operation_failed

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["ACT_TIMEOUT_CAP_MS", "NavigationSettle", "failure_message", "perform"]

ACT_TIMEOUT_CAP_MS = 60_000
WAIT_TIME_CAP_MS = 60_000
NAVIGATION_SETTLE_MS = 5_000
TYPE_SLOWLY_DELAY_MS = 75
_CHECKED_WORDS = {"true", "on", "1", "yes", "checked"}
_BUTTON_NAMES: dict[str, Literal["left", "middle", "right"]] = {"left": "left", "middle": "middle", "right": "right"}
_NAVIGATION_PENDING = "waiting for scheduled navigations to finish"


async def _done_even_if_loading(work: Awaitable[None]) -> None:
    """A click or key press that was performed is done, even when the navigation it started is still loading at the
    timeout (a slow page): Playwright then fails only its wait after the action, and a 422 would invite a repeat."""
    try:
        await work
    except PlaywrightError as exc:
        if _NAVIGATION_PENDING not in str(exc):
            raise


def failure_message(exc: BaseException) -> str:
    """The first line of a Playwright error (its call log follows on later lines)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


async def perform(engine: ControlEngine, page: Page, action: dict[str, Any], wait_ms: int) -> Any:
    """Run one validated non-batch action; returns its result (``evaluate``, ``select``) or None."""
    kind = action["kind"]
    if kind == "clickCoords":
        clicks = 2 if action.get("double") else 1
        await page.mouse.click(
            float(action["x"]),
            float(action["y"]),
            button=_BUTTON_NAMES[action.get("button") or "left"],
            click_count=clicks,
        )
    elif kind == "insertText":
        await page.keyboard.insert_text(action["text"])
    elif kind == "press":
        if action.get("ref"):
            located = await engine.locator(page, action["ref"])
            await _done_even_if_loading(located.press(action["key"], timeout=wait_ms))
        else:
            await page.keyboard.press(action["key"])
    elif kind == "resize":
        await page.set_viewport_size({"width": int(action["width"]), "height": int(action["height"])})
    elif kind == "wait":
        await _wait(page, action, wait_ms)
    elif kind == "evaluate":
        return await _evaluate(engine, page, action, wait_ms)
    elif kind == "close":
        await page.close()
    elif kind == "fill":
        for field in action["fields"]:
            await _fill_field(engine, page, field, wait_ms)
    else:
        return await _on_ref(engine, page, action, wait_ms)
    return None


async def _on_ref(engine: ControlEngine, page: Page, action: dict[str, Any], wait_ms: int) -> Any:
    kind = action["kind"]
    if kind == "drag":
        start = await engine.locator(page, action["startRef"])
        end = await engine.locator(page, action["endRef"])
        await start.drag_to(end, timeout=wait_ms)
        return None
    target = await engine.locator(page, action["ref"])
    if kind == "click":
        button = _BUTTON_NAMES[action.get("button") or "left"]
        modifiers = action.get("modifiers")
        if action.get("double"):
            await _done_even_if_loading(target.dblclick(button=button, modifiers=modifiers, timeout=wait_ms))
        else:
            await _done_even_if_loading(target.click(button=button, modifiers=modifiers, timeout=wait_ms))
    elif kind == "type":
        if action.get("slowly"):
            await target.click(timeout=wait_ms)
            await target.press_sequentially(action["text"], delay=TYPE_SLOWLY_DELAY_MS, timeout=wait_ms)
        else:
            await target.fill(action["text"], timeout=wait_ms)
        if action.get("submit"):
            await _done_even_if_loading(target.press("Enter", timeout=wait_ms))
    elif kind == "hover":
        await target.hover(timeout=wait_ms)
    elif kind == "scrollIntoView":
        await target.scroll_into_view_if_needed(timeout=wait_ms)
    elif kind == "select":
        return await target.select_option(action["values"], timeout=wait_ms)
    return None


async def _fill_field(engine: ControlEngine, page: Page, field: dict[str, Any], wait_ms: int) -> None:
    target = await engine.locator(page, field["ref"])
    kind = (field.get("type") or "text").lower()
    value = field["value"]
    if kind in {"checkbox", "radio", "switch"}:
        checked = value if isinstance(value, bool) else str(value).strip().lower() in _CHECKED_WORDS
        await target.set_checked(checked, timeout=wait_ms)
    elif kind in {"select", "combobox", "listbox"}:
        await target.select_option(str(value), timeout=wait_ms)
    elif kind == "file":
        raise act_invalid("Files go through POST /hooks/file-chooser, not fill")
    else:
        await target.fill(str(value).lower() if isinstance(value, bool) else str(value), timeout=wait_ms)


async def _wait(page: Page, action: dict[str, Any], wait_ms: int) -> None:
    """Every condition given, in turn: the time, text shown or gone, a selector, the URL, a load state, a predicate."""
    if action.get("timeMs"):
        await asyncio.sleep(min(float(action["timeMs"]), WAIT_TIME_CAP_MS) / 1000)
    if action.get("text"):
        await page.get_by_text(action["text"]).first.wait_for(state="visible", timeout=wait_ms)
    if action.get("textGone"):
        await page.get_by_text(action["textGone"]).first.wait_for(state="hidden", timeout=wait_ms)
    if action.get("selector"):
        await page.locator(action["selector"]).first.wait_for(state="visible", timeout=wait_ms)
    if action.get("url"):
        await page.wait_for_url(action["url"], wait_until="commit", timeout=wait_ms)
    if action.get("loadState"):
        await page.wait_for_load_state(action["loadState"], timeout=wait_ms)
    if action.get("fn"):
        await page.wait_for_function(evaluate_source(action["fn"], with_element=False), timeout=wait_ms)


async def _evaluate(engine: ControlEngine, page: Page, action: dict[str, Any], wait_ms: int) -> Any:
    ref = action.get("ref")
    source = evaluate_source(action["fn"], with_element=bool(ref))
    if ref:
        target = await engine.locator(page, ref)
        running = target.evaluate(source, timeout=wait_ms)
    else:
        running = page.evaluate(source)
    try:
        # page.evaluate has no timeout of its own; a never-settling promise must not hold the call.
        return await asyncio.wait_for(running, wait_ms / 1000)
    except TimeoutError as exc:
        raise operation_failed(f"evaluate did not finish within {wait_ms} ms") from exc


class NavigationSettle:
    """Watches one action: did it start a main-frame navigation, and has that navigation committed or failed?

    ``async with NavigationSettle(page): await action`` — on a clean exit it waits (at most
    :data:`NAVIGATION_SETTLE_MS`) for a navigation the action started; it never waits when none started.
    """

    def __init__(self, page: Page) -> None:
        self._page = page
        self._request: Request | None = None
        self._settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def _settle(self, *_: object) -> None:
        if not self._settled.done():
            self._settled.set_result(None)

    def _on_request(self, request: Request) -> None:
        with contextlib.suppress(PlaywrightError):
            if self._request is None and request.is_navigation_request() and request.frame == self._page.main_frame:
                self._request = request

    def _on_request_failed(self, request: Request) -> None:
        if request is self._request:
            self._settle()

    def _on_frame_navigated(self, frame: Frame) -> None:
        if frame == self._page.main_frame and self._request is not None:
            self._settle()

    def _on_download(self, _download: Download) -> None:
        self._settle()

    async def __aenter__(self) -> NavigationSettle:
        page = self._page
        page.on("request", self._on_request)
        page.on("requestfailed", self._on_request_failed)
        page.on("framenavigated", self._on_frame_navigated)
        page.on("download", self._on_download)
        page.on("close", self._settle)
        return self

    async def __aexit__(self, exc_type: object, *_: object) -> None:
        try:
            if exc_type is None and self._request is not None and not self._page.is_closed():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(self._settled), NAVIGATION_SETTLE_MS / 1000)
        finally:
            page = self._page
            page.remove_listener("request", self._on_request)
            page.remove_listener("requestfailed", self._on_request_failed)
            page.remove_listener("framenavigated", self._on_frame_navigated)
            page.remove_listener("download", self._on_download)
            page.remove_listener("close", self._settle)
