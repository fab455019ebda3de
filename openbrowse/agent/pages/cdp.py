"""Small CDP operations on browser-use's session that the reading tools share: evaluate in a page or in an
embedded (possibly cross-origin) frame, open, focus and close real tabs, wait for a page to render.

Cross-origin frames are separate targets under site isolation; browser-use auto-attaches to them (its
``cross_origin_iframes`` option), so a frame's document is reached through the session of the target that owns
it, and a same-origin frame through an isolated world created in its parent's session.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from browser_use import BrowserSession
from browser_use.browser.session import CDPSession

from openbrowse.agent.pages.scripts import RENDER_PROBE, STALE_MARK

RENDER_TIMEOUT = 25.0
RENDER_POLL = 0.15
MIN_RENDER_CHARS = 40
ATTACH_TIMEOUT = 2.0
ATTACH_POLL = 0.01


class PageScriptError(Exception):
    """A script could not run (the page or frame went away, or it threw)."""


@dataclass(frozen=True, slots=True)
class FrameRef:
    frame_id: str
    url: str
    target_id: str  # the target whose session reaches the frame's document
    owner_target_id: str  # the tab the frame belongs to
    top_url: str = ""

    @property
    def out_of_process(self) -> bool:
        """A cross-site frame under site isolation: its own target, evaluated through its own session."""
        return self.target_id != self.owner_target_id

    @property
    def cross_origin(self) -> bool:
        return _origin(self.url) != _origin(self.top_url)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, parts.hostname, port


async def _evaluate_in(session_id: str, cdp: Any, expression: str, context_id: int | None = None) -> Any:
    params: dict[str, Any] = {"expression": expression, "returnByValue": True, "awaitPromise": True}
    if context_id is not None:
        params["contextId"] = context_id
    try:
        reply = await cdp.send.Runtime.evaluate(params=params, session_id=session_id)
    except Exception as exc:  # CDP error replies (context destroyed, target closed) arrive as plain exceptions
        raise PageScriptError(str(exc)[:300]) from exc
    if reply.get("exceptionDetails"):
        details = reply["exceptionDetails"]
        message = details.get("exception", {}).get("description") or details.get("text") or "script error"
        raise PageScriptError(str(message)[:300])
    return reply.get("result", {}).get("value")


async def session_of(browser: BrowserSession, target_id: str | None) -> CDPSession:
    """browser-use's session of a target; a tab just opened is awaited here in short polls (its pool polls every
    100 ms, a wait a wave of new tabs would pay per tab)."""
    if target_id is not None and browser.session_manager is not None:
        deadline = time.monotonic() + ATTACH_TIMEOUT
        while True:
            if browser.session_manager.get_all_sessions_for_target(target_id) or time.monotonic() > deadline:
                break
            await asyncio.sleep(ATTACH_POLL)
    return await browser.get_or_create_cdp_session(target_id, focus=False)


async def evaluate(browser: BrowserSession, expression: str, target_id: str | None = None) -> Any:
    """Evaluate in a tab's main document (the agent's focused tab by default)."""
    session = await session_of(browser, target_id)
    return await _evaluate_in(session.session_id, session.cdp_client, expression)


async def evaluate_in_frame(browser: BrowserSession, frame: FrameRef, expression: str) -> Any:
    session = await session_of(browser, frame.target_id)
    if frame.out_of_process:
        return await _evaluate_in(session.session_id, session.cdp_client, expression)
    try:
        world = await session.cdp_client.send.Page.createIsolatedWorld(
            params={"frameId": frame.frame_id, "worldName": "openbrowse-reader"}, session_id=session.session_id
        )
    except Exception as exc:
        raise PageScriptError(f"the frame {frame.url[:200]} went away: {exc}") from exc
    return await _evaluate_in(session.session_id, session.cdp_client, expression, world["executionContextId"])


async def frames_of(browser: BrowserSession, tab_target_id: str | None = None) -> list[FrameRef]:
    """Every embedded frame (not the top document) of a tab, cross-origin ones included."""
    if tab_target_id is None:
        tab_target_id = browser.agent_focus_target_id
    all_frames, _ = await browser.get_all_frames()
    refs: list[FrameRef] = []
    for frame_id, info in all_frames.items():
        if not info.get("parentFrameId"):
            continue
        owner = _owner_tab(all_frames, frame_id)
        if tab_target_id is not None and owner != tab_target_id:
            continue
        top = next(
            (f for f in all_frames.values() if not f.get("parentFrameId") and f.get("frameTargetId") == owner), {}
        )
        refs.append(
            FrameRef(
                frame_id, str(info.get("url", "")), str(info.get("frameTargetId")), str(owner), str(top.get("url", ""))
            )
        )
    return refs


def _owner_tab(all_frames: dict[str, dict[str, Any]], frame_id: str) -> str | None:
    seen: set[str] = set()
    current = all_frames.get(frame_id)
    while current is not None and current.get("parentFrameId") and current["id"] not in seen:
        seen.add(current["id"])
        parent = all_frames.get(current["parentFrameId"])
        if parent is None:
            break
        current = parent
    return None if current is None else current.get("frameTargetId")


async def open_tab(browser: BrowserSession, url: str) -> str:
    reply = await browser.cdp_client.send.Target.createTarget(params={"url": url, "background": True})
    return str(reply["targetId"])


async def navigate_tab(browser: BrowserSession, target_id: str, url: str) -> None:
    """Load ``url`` in an open tab (its renderer reused), marking the document it replaces as stale first so a
    read never mistakes the old page for the new one."""
    session = await session_of(browser, target_id)
    await _evaluate_in(session.session_id, session.cdp_client, f"window.{STALE_MARK} = true")
    reply = await session.cdp_client.send.Page.navigate(params={"url": url}, session_id=session.session_id)
    if reply.get("errorText"):
        raise PageScriptError(f"the page could not load: {reply['errorText']}")


async def focus_tab(browser: BrowserSession, target_id: str) -> None:
    await browser.cdp_client.send.Target.activateTarget(params={"targetId": target_id})


async def close_tab(browser: BrowserSession, target_id: str) -> None:
    try:
        await browser.cdp_client.send.Target.closeTarget(params={"targetId": target_id})
    except Exception:  # already gone
        return


async def wait_tab_forgotten(browser: BrowserSession, target_id: str, limit: float = 3.0) -> bool:
    """Wait until browser-use's own tab list (fed by CDP target events) no longer lists a closed tab.

    ``Target.closeTarget`` answers before the target-destroyed event reaches browser-use, so a state captured
    right after a close could still list the tab; a caller that must not show a closed tab to the model waits here.
    """
    deadline = time.monotonic() + limit
    while True:
        manager = browser.session_manager
        if manager is None or all(t.target_id != target_id for t in manager.get_all_page_targets()):
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)


async def wait_rendered(browser: BrowserSession, target_id: str, limit: float = RENDER_TIMEOUT) -> bool:
    """Wait until the document is complete and its visible text stopped growing (or the timeout)."""
    deadline = time.monotonic() + limit
    last = -1
    while time.monotonic() < deadline:
        try:
            probe = await asyncio.wait_for(evaluate(browser, RENDER_PROBE, target_id), timeout=5)
        except (PageScriptError, TimeoutError, ValueError, KeyError):
            probe = None
        if isinstance(probe, dict) and probe.get("ready") == "complete":
            chars = int(probe.get("chars") or 0)
            if chars >= MIN_RENDER_CHARS and chars == last:
                return True
            last = chars
        await asyncio.sleep(RENDER_POLL)
    return False
