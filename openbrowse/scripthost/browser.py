"""``browser`` inside scripts: the agent's focused tab and its embedded frames, through the server's page filter.

Under site isolation a cross-site frame is a target of its own (type ``iframe``): Chromium attaches it to the
tab's session (auto-attach) and its document is evaluated through that session. A frame in the same process as
its parent is reached through an isolated world created in its owner's session. A frame belongs to the tab
when its chain of parents ends at the tab's main frame.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from openbrowse.scripthost.cdp import Cdp, CdpError
from openbrowse.scripthost.page_js import READ_PAGE

FRAME_WAIT = 15.0
LOAD_WAIT = 30.0
POLL = 0.3
NAVIGABLE = ("http://", "https://", "about:")


@dataclass(frozen=True, slots=True)
class Frame:
    frame_id: str
    url: str
    parent_id: str | None
    target_id: str  # the target whose session reaches the frame's document
    target_root: bool  # the frame is that target's main frame (evaluated without an isolated world)


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return parts.scheme, parts.hostname, port


class ScriptBrowser:
    def __init__(self, cdp: Cdp, focused: Callable[[], str | None], read_pages: Callable[..., Awaitable[str]]) -> None:
        self._cdp = cdp
        self._focused = focused
        self.read_pages = read_pages
        """``read_pages(urls?, frame_url_contains?)``: the server's tool, in the session's browser."""
        self._sessions: dict[str, str] = {}

    # -- sessions ------------------------------------------------------------------------------------------
    async def _tab(self) -> str:
        target = self._focused()
        if not target:
            raise LookupError("the agent has no focused tab for the script to work in")
        return target

    async def _session(self, target_id: str) -> str:
        frame_session = self._cdp.frames.get(target_id)
        if frame_session is not None:
            return frame_session  # a frame of the page, attached by Chromium itself (auto-attach)
        session = self._sessions.get(target_id)
        if session is not None and session not in self._cdp.detached:
            return session
        reply = await self._cdp.send("Target.attachToTarget", {"targetId": target_id, "flatten": True})
        self._sessions[target_id] = session = str(reply["sessionId"])
        await self._cdp.auto_attach(session)  # the page's cross-origin frames arrive as sessions of their own
        return session

    async def _evaluate(self, target_id: str, expression: str, context_id: int | None = None) -> Any:
        params: dict[str, Any] = {"expression": expression, "returnByValue": True, "awaitPromise": True}
        if context_id is not None:
            params["contextId"] = context_id
        for attempt in range(2):
            session = await self._session(target_id)
            try:
                reply = await self._cdp.send("Runtime.evaluate", params, session)
                break
            except CdpError as exc:
                if attempt or "session" not in str(exc).lower():
                    raise RuntimeError(f"the script could not run in the page: {exc}") from exc
                self._sessions.pop(target_id, None)  # the target went away and came back: attach again
        details = reply.get("exceptionDetails")
        if details:
            message = details.get("exception", {}).get("description") or details.get("text") or "script error"
            raise RuntimeError(f"the page's script threw: {str(message)[:300]}")
        return reply.get("result", {}).get("value")

    # -- the tab -------------------------------------------------------------------------------------------
    async def evaluate(self, js: str) -> Any:
        return await self._evaluate(await self._tab(), js)

    async def html(self) -> Any:
        return await self.evaluate("document.documentElement.outerHTML")

    async def url(self) -> str:
        reply = await self._cdp.send("Target.getTargetInfo", {"targetId": await self._tab()})
        return str(reply["targetInfo"]["url"])

    async def navigate(self, url: str) -> None:
        if not isinstance(url, str) or not url.startswith(NAVIGABLE):
            raise ValueError(f"browser.navigate takes an http(s) URL, not {str(url)[:100]!r}")
        tab = await self._tab()
        reply = await self._cdp.send("Page.navigate", {"url": url}, await self._session(tab))
        if reply.get("errorText"):
            raise ConnectionError(f"the page could not load: {reply['errorText']}")
        deadline = asyncio.get_running_loop().time() + LOAD_WAIT
        while asyncio.get_running_loop().time() < deadline:
            try:
                if await self._evaluate(tab, "document.readyState") == "complete":
                    return
            except RuntimeError:
                pass  # the old document is going away
            await asyncio.sleep(0.1)

    # -- frames --------------------------------------------------------------------------------------------
    async def _frames(self) -> list[tuple[Frame, str]]:
        """Every embedded frame of the tab with the tab's URL, cross-origin frames included."""
        tab = await self._tab()
        await self._session(tab)
        owners = [tab, *self._cdp.frames]
        frames: dict[str, Frame] = {}
        root_id = tab
        for owner in owners:
            try:
                tree = (await self._cdp.send("Page.getFrameTree", None, await self._session(owner)))["frameTree"]
            except (CdpError, KeyError):
                continue
            if owner == tab:
                root_id = str(tree["frame"]["id"])
            _walk(tree, None, owner, owner != tab, frames)
        top = frames.get(root_id)
        top_url = top.url if top else ""
        found = []
        for frame in frames.values():
            if frame.frame_id != root_id and _belongs(frame, frames, root_id):
                found.append((frame, top_url))
        return found

    async def frames(self) -> list[dict[str, Any]]:
        return [{"url": f.url, "crossOrigin": _origin(f.url) != _origin(top)} for f, top in await self._frames()]

    async def _frame(self, needle: str) -> tuple[Frame, str]:
        matches = [(f, top) for f, top in await self._frames() if needle in f.url]
        if not matches:
            raise LookupError(f"no embedded frame whose URL contains {needle!r}; try await browser.wait_for_frame()")
        return matches[0]

    async def wait_for_frame(self, needle: str, timeout: float = FRAME_WAIT) -> dict[str, Any]:  # noqa: ASYNC109
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            try:
                frame, top = await self._frame(needle)
                return {"url": frame.url, "crossOrigin": _origin(frame.url) != _origin(top)}
            except LookupError:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                await asyncio.sleep(POLL)

    async def frame_evaluate(self, needle: str, js: str) -> Any:
        frame, _ = await self._frame(needle)
        if frame.target_root:
            return await self._evaluate(frame.target_id, js)
        session = await self._session(frame.target_id)
        try:
            world = await self._cdp.send(
                "Page.createIsolatedWorld", {"frameId": frame.frame_id, "worldName": "openbrowse-script"}, session
            )
        except CdpError as exc:
            raise RuntimeError(f"the frame {frame.url[:200]} went away: {exc}") from exc
        return await self._evaluate(frame.target_id, js, int(world["executionContextId"]))

    async def frame_text(self, needle: str) -> str:
        page = await self.frame_evaluate(needle, READ_PAGE)
        return str(page.get("text", "")) if isinstance(page, dict) else ""

    async def frame_jsonld(self, needle: str) -> list[Any]:
        page = await self.frame_evaluate(needle, READ_PAGE)
        return list(page.get("jsonld", [])) if isinstance(page, dict) else []


def _walk(node: dict[str, Any], parent: str | None, target: str, in_iframe: bool, frames: dict[str, Frame]) -> None:
    info = node.get("frame", {})
    frame_id = info.get("id")
    if not frame_id:
        return
    is_root = parent is None
    existing = frames.get(frame_id)
    if existing is None or (in_iframe and is_root):  # the frame's own target reaches it best
        frames[frame_id] = Frame(
            str(frame_id),
            str(info.get("url", "")),
            info.get("parentId") or parent,
            target,
            target_root=in_iframe and is_root,
        )
    for child in node.get("childFrames", []):
        _walk(child, str(frame_id), target, in_iframe, frames)


def _belongs(frame: Frame, frames: dict[str, Frame], root_id: str) -> bool:
    seen: set[str] = set()
    current: Frame | None = frame
    while current is not None and current.parent_id and current.frame_id not in seen:
        seen.add(current.frame_id)
        if current.parent_id == root_id:
            return True
        current = frames.get(current.parent_id)
    return False
