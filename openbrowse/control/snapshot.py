"""``GET /snapshot``: the page as text with refs an action can use (spec §20.2).

Three shapes. ``format=ai`` (default) is Playwright's ai snapshot, its refs resolved with ``aria-ref``. Any of
``interactive``, ``compact``, ``depth``, ``selector``, ``frame`` or ``mode=efficient`` asks for a role snapshot:
``eN`` refs found again with ``get_by_role(role, name, exact).nth(n)`` inside the frame and selector they were
taken in (``refs=aria`` keeps Playwright's refs and only filters lines). ``format=aria`` is the accessibility tree
as ``nodes`` with ``axN`` refs bound to backend DOM nodes. The refs are kept in the tab's state: a later action
with a ref of an older snapshot or document is refused before it runs.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError, Page

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import act_invalid, operation_failed
from openbrowse.control.snapshot_text import Built, build_ai, build_role, finalize
from openbrowse.control.tab_state import RefTarget, TabState
from openbrowse.control.tabs import timeout_ms

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["SnapshotOptions", "take_snapshot"]

AI_MAX_CHARS = 40_000
EFFICIENT_MAX_CHARS = 8_000
ARIA_LIMIT, ARIA_LIMIT_CAP = 500, 2_000
SNAPSHOT_TIMEOUT_MS, SNAPSHOT_TIMEOUT_CAP_MS = 20_000, 60_000
LINKS_LIMIT = 200

_COLLECT_LINKS = """(anchors, limit) => anchors
  .filter((a) => a.href && (a.offsetWidth || a.offsetHeight || a.getClientRects().length))
  .slice(0, limit)
  .map((a) => ({
    text: (a.innerText || a.getAttribute('aria-label') || '').trim().replace(/\\s+/g, ' '),
    url: a.href,
  }))"""


@dataclass(frozen=True, slots=True)
class SnapshotOptions:
    format: str
    role: bool
    """A role-style snapshot (filtered lines, ``eN`` refs) rather than the plain ai snapshot."""
    refs_mode: str
    interactive: bool
    compact: bool
    depth: int | None
    selector: str | None
    frame: str | None
    max_chars: int | None
    limit: int
    urls: bool
    timeout: int

    @classmethod
    def from_call(cls, call: ControlCall) -> SnapshotOptions:
        fmt = call.text("format") or "ai"
        if fmt not in {"ai", "aria"}:
            raise act_invalid("format must be ai or aria")
        efficient = call.text("mode") == "efficient"
        if fmt == "aria" and (efficient or call.flag("labels")):
            raise act_invalid("labels/mode=efficient require format=ai")
        depth = _whole(call, "depth")
        interactive = call.flag("interactive", efficient)
        compact = call.flag("compact", efficient)
        depth = depth if depth is not None else (6 if efficient else None)
        selector, frame = call.text("selector"), call.text("frame")
        refs_mode = call.text("refs") or "role"
        role = fmt == "ai" and (interactive or compact or depth is not None or bool(selector or frame) or efficient)
        if refs_mode == "aria" and (selector or frame):
            raise act_invalid("refs=aria does not support selector/frame snapshots yet.")
        max_chars = _whole(call, "maxChars")
        if fmt == "ai" and max_chars is None:
            max_chars = EFFICIENT_MAX_CHARS if efficient else AI_MAX_CHARS
        limit = min(_whole(call, "limit") or ARIA_LIMIT, ARIA_LIMIT_CAP)
        timeout = timeout_ms(call, SNAPSHOT_TIMEOUT_MS, SNAPSHOT_TIMEOUT_CAP_MS)
        urls = call.flag("urls")
        return cls(
            fmt, role, refs_mode, interactive, compact, depth, selector, frame, max_chars or None, limit, urls, timeout
        )

    @property
    def family(self) -> str:
        """Snapshots compare for ``[new]`` only within one family of options."""
        parts = (self.role, self.refs_mode, self.interactive, self.compact, self.depth, self.selector, self.frame)
        return "|".join(map(str, (*parts, self.urls, self.max_chars)))


def _whole(call: ControlCall, name: str) -> int | None:
    value = call.number(name)
    if value is None:
        return None
    if value < 0 or value != int(value):
        raise act_invalid(f"{name} must be a non-negative integer")
    return int(value)


@route("GET", "/snapshot", mutating=False)
async def snapshot_route(call: ControlCall) -> dict[str, Any]:
    """The page as text (or accessibility nodes) with refs."""
    options = SnapshotOptions.from_call(call)
    page = await call.engine.page(call.target_id)
    return await take_snapshot(call.engine, page, options)


async def take_snapshot(engine: ControlEngine, page: Page, options: SnapshotOptions) -> dict[str, Any]:
    state = engine.state(page)
    base = {"ok": True, "format": options.format, "targetId": await engine.target_id_of(page), "url": page.url}
    if state.blocked() is not None:
        empty: dict[str, Any] = {"nodes": []} if options.format == "aria" else {"snapshot": "", "refs": {}}
        return {**base, "blockedByDialog": True, "browserState": state.browser_state(), **empty}
    try:
        if options.format == "aria":
            return {**base, **await _aria(engine, page, state, options)}
        return {**base, **await _text(page, state, options)}
    except PlaywrightError as exc:
        if state.blocked() is not None:
            return {**base, "blockedByDialog": True, "browserState": state.browser_state(), "snapshot": "", "refs": {}}
        raise operation_failed(f"Snapshot failed: {str(exc).splitlines()[0]}") from exc


async def _text(page: Page, state: TabState, options: SnapshotOptions) -> dict[str, Any]:
    for _attempt in range(2):  # a navigation during capture: take it again on the new document
        document = state.document
        built, scope_frame = await _capture(page, options)
        if options.urls:
            built.snapshot = await _with_links(page, built.snapshot, options)
        if state.document == document:
            break
    mode = "aria" if not options.role or options.refs_mode == "aria" else "role"
    same_family = state.last_snapshot_document == document and state.last_snapshot_family == options.family
    previous = state.last_snapshot_lines if same_family else None
    done = finalize(built, mode=mode, max_chars=options.max_chars, previous=previous)
    state.generation += 1
    state.refs = {ref: _ref_target(ref, info, mode, options, scope_frame) for ref, info in built.refs.items()}
    state.refs_document = document
    state.last_snapshot_lines = done.keys
    state.last_snapshot_document = document
    state.last_snapshot_family = options.family
    body: dict[str, Any] = {"snapshot": done.snapshot, "refs": done.refs, "stats": done.stats}
    if done.truncated:
        body["truncated"] = True
    if done.new_elements is not None:
        body["newElements"] = done.new_elements
    return body


def _ref_target(ref: str, info: dict[str, Any], mode: str, options: SnapshotOptions, frame: str | None) -> RefTarget:
    if mode == "aria":
        return RefTarget("aria", role=info["role"], name=info.get("name", ""), aria_ref=ref)
    return RefTarget("role", info["role"], info.get("name", ""), info.get("nth"), frame, options.selector)


async def _capture(page: Page, options: SnapshotOptions) -> tuple[Built, str | None]:
    if not options.role or options.refs_mode == "aria":
        text = await page.aria_snapshot(mode="ai", timeout=options.timeout)
        if not options.role:
            return build_ai(text), None
        return build_ai(text, interactive=options.interactive, compact=options.compact, max_depth=options.depth), None
    scope: Any = page
    if options.frame:
        if await page.locator(options.frame).count() == 0:
            raise act_invalid(f"No frame matches {options.frame!r}")
        scope = page.frame_locator(options.frame)
    root = scope.locator(options.selector).first if options.selector else scope.locator(":root")
    if options.selector and await scope.locator(options.selector).count() == 0:
        empty = "(no interactive elements)" if options.interactive else "(empty)"
        return Built(empty), options.frame
    text = await root.aria_snapshot(timeout=options.timeout)
    built = build_role(text, interactive=options.interactive, compact=options.compact, max_depth=options.depth)
    return built, options.frame


async def _with_links(page: Page, snapshot: str, options: SnapshotOptions) -> str:
    scope: Any = page.frame_locator(options.frame) if options.frame else page
    anchors = scope.locator(f"{options.selector} a[href]" if options.selector else "a[href]")
    try:
        links = await anchors.evaluate_all(_COLLECT_LINKS, LINKS_LIMIT)
    except PlaywrightError:
        return snapshot
    if not links:
        return snapshot
    listed = "\n".join(f"{index}. {link['text']} -> {link['url']}" for index, link in enumerate(links, 1))
    return f"{snapshot}\n\nLinks:\n{listed}"


async def _aria(engine: ControlEngine, page: Page, state: TabState, options: SnapshotOptions) -> dict[str, Any]:
    document = state.document
    session = await engine.context.new_cdp_session(page)
    try:
        tree = await session.send("Accessibility.getFullAXTree")
    finally:
        with contextlib.suppress(PlaywrightError):
            await session.detach()
    nodes = flatten_ax_tree(tree.get("nodes") or [], options.limit)
    state.generation += 1
    state.refs = {
        node["ref"]: RefTarget("ax", node["role"], node["name"], backend_node_id=node["backendDOMNodeId"])
        for node in nodes
        if isinstance(node.get("backendDOMNodeId"), int)
    }
    state.refs_document = document
    return {"nodes": nodes}


def _ax_value(field: Any) -> str:
    if isinstance(field, dict):
        value = field.get("value")
        if value is None:
            return ""
        return value if isinstance(value, str) else str(value)
    return ""


def flatten_ax_tree(raw_nodes: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """The CDP accessibility tree depth-first from its root, at most ``limit`` nodes, numbered ``ax1``…"""
    by_id = {node["nodeId"]: node for node in raw_nodes if node.get("nodeId")}
    children = {child for node in raw_nodes for child in node.get("childIds") or []}
    root = next((node for node in raw_nodes if node.get("nodeId") and node["nodeId"] not in children), None)
    if root is None:
        return []
    out: list[dict[str, Any]] = []
    stack: list[tuple[str, int]] = [(root["nodeId"], 0)]
    while stack and len(out) < limit:
        node_id, depth = stack.pop()
        node = by_id.get(node_id)
        if node is None:
            continue
        entry: dict[str, Any] = {
            "ref": f"ax{len(out) + 1}",
            "role": _ax_value(node.get("role")) or "unknown",
            "name": _ax_value(node.get("name")),
        }
        for key in ("value", "description"):
            text = _ax_value(node.get(key))
            if text:
                entry[key] = text
        if isinstance(node.get("backendDOMNodeId"), int):
            entry["backendDOMNodeId"] = node["backendDOMNodeId"]
        entry["depth"] = depth
        out.append(entry)
        stack.extend((child, depth + 1) for child in reversed(node.get("childIds") or []) if child in by_id)
    return out
