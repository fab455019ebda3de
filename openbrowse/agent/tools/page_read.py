"""Reading one page of a ``read_pages`` wave in its real foreground tab (spec §11.2).

The wait-and-read script runs inside the page: it waits until the document is complete, shown in the foreground
and its text is stable across a rendered frame, then returns ``{url, title, text, jsonld, links}``. A wave sends
it to each tab as soon as the tab's page loaded, before the tab is focused (:func:`read_early`): it then waits,
idle, until the tab is shown, so when the reader focuses the tab the read is already in place and only the focus
and one rendered frame remain on the reader's path. A tab read without such an early script gets the script
together with its focus (:func:`read_one`'s fallback path, also used for retries).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from browser_use import BrowserSession

from openbrowse.agent.pages.cdp import (
    MIN_RENDER_CHARS,
    RENDER_TIMEOUT,
    FrameRef,
    PageScriptError,
    evaluate,
    evaluate_in_frame,
    focus_tab,
    frames_of,
)
from openbrowse.agent.pages.scripts import TIMER_FALLBACK_MS, read_when_ready
from openbrowse.scripthost.page_js import READ_PAGE

PANEL_ATTACH_TIMEOUT = 10.0
STALE_RETRY = 0.05
EARLY_GRACE = TIMER_FALLBACK_MS / 1000
"""How long a focused tab's early read may take before the reader sends the script again with the focus (a tab
that never reports itself shown is then read by the script's no-frame fallback)."""


def _fresh(page: Any) -> bool:
    """A read of the tab's own page, not of the page a reused tab was navigating away from."""
    return isinstance(page, dict) and not str(page.get("url", "")).startswith("about:")


async def read_early(browser: BrowserSession, target_id: str) -> dict[str, Any] | None:
    """The wait-and-read script of a tab not focused yet: waits inside the page until the tab is shown, then
    reads it. Sent again while the tab still shows the document it is navigating away from."""
    return await _read_loop(browser, target_id, wait_shown=True, focus_first=False)


async def read_one(
    browser: BrowserSession,
    target_id: str,
    url: str,
    frame_filter: str | None,
    early: asyncio.Future[dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """Focus the tab and read it once it rendered (inside the matching panel when filtered); ``early`` is the
    tab's :func:`read_early`, if one was sent."""
    page = await _take_early(browser, target_id, early) if early is not None else None
    if page is None:
        page = await _read_when_ready(browser, target_id)
    page["frameMatched"] = False
    if frame_filter and frame_filter not in str(page.get("url", "")):  # a panel's own page is read directly
        frames = await _panel_frames(browser, target_id, frame_filter)
        if not frames:
            raise PageScriptError(f"the embedded panel '{frame_filter}' never attached")
        inner = await evaluate_in_frame(browser, frames[0], READ_PAGE)
        if isinstance(inner, dict):
            page.update(text=inner["text"], jsonld=inner["jsonld"] or page["jsonld"], links=inner["links"])
            page["textChars"], page["frameMatched"] = inner["textChars"], True
    if not page.get("text"):
        raise PageScriptError("the page rendered no text within 25 s")
    panels: list[str] = []
    if not page["frameMatched"] and page.get("iframes"):
        panels = [f.url for f in await frames_of(browser, target_id) if f.cross_origin]
    return {
        "panels": panels,
        "url": url,
        "finalUrl": page.get("url"),
        "title": page.get("title", ""),
        "text": page.get("text", ""),
        "jsonld": page.get("jsonld", []),
        "links": page.get("links", []),
        "frameMatched": page["frameMatched"],
    }


async def _take_early(
    browser: BrowserSession, target_id: str, early: asyncio.Future[dict[str, Any] | None]
) -> dict[str, Any] | None:
    """Focus the tab and take its early read; None when it failed or did not come within the grace."""
    taken = asyncio.wait_for(asyncio.shield(early), EARLY_GRACE)  # the owner settles ``early`` if left waiting
    outcomes: list[Any] = await asyncio.gather(focus_tab(browser, target_id), taken, return_exceptions=True)
    focused, page = outcomes
    if isinstance(focused, BaseException):
        raise focused
    return page if isinstance(page, dict) else None


async def _read_when_ready(browser: BrowserSession, target_id: str) -> dict[str, Any]:
    page = await _read_loop(browser, target_id, wait_shown=False, focus_first=True)
    if page is None:
        raise PageScriptError("the page did not load within 25 s")
    return page


async def _read_loop(
    browser: BrowserSession, target_id: str, *, wait_shown: bool, focus_first: bool
) -> dict[str, Any] | None:
    """Run the wait-and-read script until it reads the tab's own page (None after the render timeout); a read
    broken by a document replaced mid-way (a navigation committing) is sent again to the new document."""
    deadline = time.monotonic() + RENDER_TIMEOUT
    focus = focus_first
    while time.monotonic() < deadline:
        script = read_when_ready(int((deadline - time.monotonic()) * 1000), MIN_RENDER_CHARS, wait_shown=wait_shown)
        try:
            page = await (_read_focused(browser, target_id, script) if focus else evaluate(browser, script, target_id))
        except PageScriptError:
            page = None
        focus = False
        if _fresh(page):
            return dict(page)
        await asyncio.sleep(STALE_RETRY)
    return None


async def _read_focused(browser: BrowserSession, target_id: str, script: str) -> Any:
    """Focus the tab and run the read script together: the script waits for a rendered frame, which only comes
    once the tab is in the foreground, so it need not wait for the focus reply before being sent."""
    outcomes: tuple[Any, ...] = await asyncio.gather(
        focus_tab(browser, target_id), evaluate(browser, script, target_id), return_exceptions=True
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    return outcomes[1]


async def _panel_frames(browser: BrowserSession, target_id: str, needle: str) -> list[FrameRef]:
    deadline = time.monotonic() + PANEL_ATTACH_TIMEOUT
    while True:
        frames = [f for f in await frames_of(browser, target_id) if needle in f.url]
        if frames or time.monotonic() > deadline:
            return frames
        await asyncio.sleep(0.3)
