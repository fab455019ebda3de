"""``find_links(href_contains?, href_regex?, frame_url_contains?, container_index?, attr?, visible_only=false)``
(spec §11.1): every matching link of the page or of an embedded cross-origin panel, after scrolling until the
list stops growing; saved to ``found_links.json``; the read_pages queue is reset."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from browser_use.filesystem.file_system import FileSystem
from pydantic import BaseModel, Field

from openbrowse.agent.files.delivery import envelope, save
from openbrowse.agent.pages.cdp import FrameRef, PageScriptError, evaluate, evaluate_in_frame, frames_of
from openbrowse.agent.pages.scripts import SCROLL_UNTIL_STABLE, collect_links
from openbrowse.domain.feed import EventCategory

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

RESCAN_DELAY = 3.0
POLL = 0.25
COUNT = "document.querySelectorAll('a[href]').length + document.querySelectorAll('iframe').length"
FOUND_FILE = "found_links.json"


class FindLinksParams(BaseModel):
    href_contains: str | None = Field(default=None, description="Keep links whose URL contains this text.")
    href_regex: str | None = Field(default=None, description="Keep links whose URL matches this regex.")
    frame_url_contains: str | None = Field(
        default=None, description="Read links inside the embedded frame (panel) whose URL contains this text."
    )
    container_index: int | None = Field(default=None, description="Only links inside this element index.")
    attr: str | None = Field(default=None, description="Read the URL from this attribute instead of href.")
    visible_only: bool = Field(default=False, description="Only links currently visible.")


async def _scan_document(
    browser: BrowserSession, params: FindLinksParams, frame: FrameRef | None, avoid: str | None = None
) -> tuple[dict[str, Any], int]:
    collect = f"({collect_links(params.attr, params.visible_only, avoid)}).call(document)"
    if frame is not None:
        scrolled = await evaluate_in_frame(browser, frame, SCROLL_UNTIL_STABLE)
        result = await evaluate_in_frame(browser, frame, collect)
    else:
        scrolled = await evaluate(browser, SCROLL_UNTIL_STABLE)
        if params.container_index is not None:
            result = await _scan_container(browser, params)
        else:
            result = await evaluate(browser, collect)
    rounds = int(scrolled.get("rounds", 0)) if isinstance(scrolled, dict) else 0
    return (result if isinstance(result, dict) else {"links": []}), rounds


async def _scan_container(browser: BrowserSession, params: FindLinksParams) -> dict[str, Any]:
    node = (await browser.get_selector_map()).get(params.container_index or 0)
    if node is None:
        raise RuntimeError(f"Element index {params.container_index} is not on the page; use an index from the state.")
    session = await browser.get_or_create_cdp_session(focus=False)
    resolved = await session.cdp_client.send.DOM.resolveNode(
        params={"backendNodeId": node.backend_node_id}, session_id=session.session_id
    )
    reply = await session.cdp_client.send.Runtime.callFunctionOn(
        params={
            "objectId": resolved["object"]["objectId"],
            "functionDeclaration": collect_links(params.attr, params.visible_only),
            "returnByValue": True,
        },
        session_id=session.session_id,
    )
    value = reply.get("result", {}).get("value")
    return value if isinstance(value, dict) else {"links": []}


def _filter(raw: list[dict[str, Any]], params: FindLinksParams) -> list[dict[str, Any]]:
    pattern = re.compile(params.href_regex or ".+")
    seen: set[str] = set()
    links: list[dict[str, Any]] = []
    for link in raw:
        href = str(link.get("href", ""))
        if href in seen or not href.startswith(("http://", "https://")):
            continue
        if params.href_contains and params.href_contains not in href:
            continue
        if not pattern.search(href):
            continue
        seen.add(href)
        links.append({"index": len(links), "text": link.get("text", ""), "href": href})
    if len(links) >= 3:
        hosts = Counter(urlsplit(link["href"]).hostname for link in links)
        majority = hosts.most_common(1)[0][0]
        for link in links:
            if urlsplit(link["href"]).hostname != majority:
                link["offhost"] = True
    return links


async def _matched_frames(browser: BrowserSession, needle: str) -> list[FrameRef]:
    """The attached frames whose URL contains ``needle``; an embed still loading gets up to 3 s to attach and
    to finish loading its document."""
    deadline = time.monotonic() + RESCAN_DELAY
    frames = [f for f in await frames_of(browser) if needle in f.url]
    while not frames and time.monotonic() < deadline:
        await asyncio.sleep(POLL)
        frames = [f for f in await frames_of(browser) if needle in f.url]
    if not frames:
        raise RuntimeError(
            f"No embedded frame whose URL contains '{needle}' is attached; the embed may still be loading. "
            "Wait a moment and call find_links again, or check the frame URL."
        )
    for frame in frames:
        while time.monotonic() < deadline:
            try:
                if await evaluate_in_frame(browser, frame, "document.readyState") == "complete":
                    break
            except PageScriptError:
                pass
            await asyncio.sleep(POLL)
    return frames


async def _anchor_count(browser: BrowserSession, targets: list[FrameRef | None]) -> int:
    total = 0
    for frame in targets:
        try:
            count = await (evaluate_in_frame(browser, frame, COUNT) if frame else evaluate(browser, COUNT))
        except PageScriptError:
            count = 0
        total += int(count or 0)
    return total


async def _wait_for_more(browser: BrowserSession, targets: list[FrameRef | None], before: int) -> float:
    """Wait (at most 3 s) until the anchor and frame count changes; the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < RESCAN_DELAY:
        await asyncio.sleep(POLL)
        if await _anchor_count(browser, targets) != before:
            break
    return time.monotonic() - started


async def run_find_links(
    ctx: ToolContext, params: FindLinksParams, browser: BrowserSession, file_system: FileSystem | None
) -> str:
    if params.href_regex:
        try:
            re.compile(params.href_regex)
        except re.error as exc:
            raise RuntimeError(f"href_regex is not a valid regular expression: {exc}.") from exc
    targets: list[FrameRef | None] = (
        list(await _matched_frames(browser, params.frame_url_contains)) if params.frame_url_contains else [None]
    )
    scan = await _scan(browser, params, targets)
    links = _filter(scan.raw, params)
    waited = 0.0
    if len(links) <= 2 and (scan.anchors > len(links) or scan.iframes):  # suspicious: rescanned once
        waited = await _wait_for_more(browser, targets, await _anchor_count(browser, targets))
        if params.frame_url_contains:
            targets = [f for f in await frames_of(browser) if params.frame_url_contains in f.url] or targets
        scan = await _scan(browser, params, targets)
        links = _filter(scan.raw, params)
    reading = ctx.reading
    reading.found = links
    reading.found_frame = params.frame_url_contains
    reading.reset_queue()
    save(ctx.files_dir, FOUND_FILE, json.dumps(links, ensure_ascii=False, indent=1), file_system)
    ctx.clipboard.seed("found_links", f"{len(links)} link(s) in {FOUND_FILE}")
    where = f" inside frame '{params.frame_url_contains}'" if params.frame_url_contains else ""
    telemetry = (
        f"find_links: {len(links)} link(s) matched from {scan.anchors} anchor(s){where}, "
        f"scrolled {scan.rounds} round(s)"
    )
    if waited:
        telemetry += f", rescanned after {waited:.1f}s"
    if scan.relaxed:
        telemetry += f", {scan.relaxed} panel(s) with anchors rewritten to the host page read by a relaxed rescan"
    await ctx.event(EventCategory.READ, "find_links", telemetry, links=len(links), anchors=scan.anchors)
    note = f"{len(links)} link(s) found{where}; saved to {FOUND_FILE}. Next: read_pages() with no arguments reads them"
    offhost = sum(1 for link in links if link.get("offhost"))
    note += f" ({offhost} off-host link(s) skipped)." if offhost else "."
    if scan.relaxed:
        note += " The panel's anchors pointed at the host page; their real targets were read from data attributes."
    if scan.iframes and not params.frame_url_contains:
        hints = [f.url for f in await frames_of(browser) if f.cross_origin][:5]
        if hints:
            note += f" This page embeds panels ({', '.join(hints)}); pass frame_url_contains to list links inside one."
    return envelope(note, FOUND_FILE, links)


@dataclass
class Scan:
    raw: list[dict[str, Any]] = field(default_factory=list)
    anchors: int = 0
    iframes: int = 0
    rounds: int = 0
    relaxed: int = 0
    """Panels whose anchors pointed at the host page, salvaged by a relaxed rescan."""


async def _scan(browser: BrowserSession, params: FindLinksParams, targets: list[FrameRef | None]) -> Scan:
    scan = Scan()
    for frame in targets:
        try:
            result, scrolled = await _scan_document(browser, params, frame)
            host_page = _bare(frame.top_url) if frame is not None else ""
            if host_page and _rewritten(result.get("links", []), host_page):
                result, _ = await _scan_document(browser, params, frame, avoid=host_page)
                scan.relaxed += 1
        except PageScriptError as exc:
            raise RuntimeError(f"Could not read links: {exc}") from exc
        scan.raw += result.get("links", [])
        scan.anchors += int(result.get("anchors", 0))
        scan.iframes += int(result.get("iframes", 0))
        scan.rounds = max(scan.rounds, scrolled)
    return scan


def _bare(url: str) -> str:
    return url.split("#", 1)[0]


def _rewritten(links: list[dict[str, Any]], host_page: str) -> bool:
    """Most of a panel's anchors point at the page embedding it: an embed script rewrote them."""
    hits = sum(1 for link in links if _bare(str(link.get("href", ""))) == host_page)
    return hits >= 2 and hits * 2 >= len(links)


def register_find_links(tools: Tools[Any], ctx: ToolContext) -> None:
    async def find_links(
        params: FindLinksParams, browser_session: BrowserSession, file_system: FileSystem
    ) -> ActionResult:
        reply = await run_find_links(ctx, params, browser_session, file_system)
        return ActionResult(
            extracted_content=reply, long_term_memory="find_links", include_extracted_content_only_once=True
        )

    find_links.__annotations__.update(browser_session=BrowserSession, file_system=FileSystem)
    tools.action(
        "List every link on the page (after scrolling until the list stops growing), or only those matching "
        "href_contains / href_regex, or those inside an embedded panel (frame_url_contains). Saves "
        "found_links.json; then call read_pages() with no arguments to read them all.",
        param_model=FindLinksParams,
    )(find_links)
