"""Files the control API makes from a tab: screenshots, PDFs and Playwright traces; and ``/highlight`` (spec §20.2).

Every file is written into the target's own file area (``target.files_dir``) under a generated plain name:
screenshots and PDFs into ``screenshots/``, traces into ``traces/`` (spec §22.2). The answer carries both its
``path`` (the reference tool reads it on the same host) and its files route ``url`` (spec §22.3), so it is listed,
signed and fetched like every other file of the area.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import secrets
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import BrowserContext, Error as PlaywrightError, Locator, Page

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import ControlError, act_invalid, operation_failed
from openbrowse.control.target import SCREENSHOTS, TRACES

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["new_file_name", "write_file"]

MAX_LABELS = 150
_MIME = {"png": "image/png", "jpeg": "image/jpeg"}
_LABELS_ID = "__openbrowse_labels__"
_tracing: weakref.WeakKeyDictionary[BrowserContext, bool] = weakref.WeakKeyDictionary()


def new_file_name(kind: str, extension: str) -> str:
    """A plain, unique, sortable name: ``screenshot-20260818-091402-1a2b3c.png``."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return f"{kind}-{stamp}-{secrets.token_hex(3)}.{extension}"


async def write_file(call: ControlCall, area: str, name: str, data: bytes) -> dict[str, Any]:
    """Write ``data`` as ``<area>/<name>`` of the target's file area; ``{path, url}`` of it."""
    path = Path(call.engine.target.files_dir) / area / name

    def write() -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_bytes(data)

    await asyncio.to_thread(write)
    return {"path": str(path), "url": call.file_url(area, name)}


async def _tab(call: ControlCall) -> tuple[Page, str]:
    page = await call.engine.page(call.target_id)
    return page, await call.engine.target_id_of(page)


_DRAW_LABELS = """(boxes) => {
  const root = document.createElement("div");
  root.id = "__ID__";
  root.style.cssText = "position:absolute;left:0;top:0;pointer-events:none;z-index:2147483647";
  for (const b of boxes) {
    const box = document.createElement("div");
    box.style.cssText = `position:absolute;left:${b.x}px;top:${b.y}px;width:${b.width}px;height:${b.height}px;` +
      "border:2px solid #ff4500;box-sizing:border-box";
    const tag = document.createElement("span");
    tag.textContent = b.ref;
    tag.style.cssText = "position:absolute;left:-2px;top:-16px;background:#ff4500;color:#fff;" +
      "font:bold 11px/14px monospace;padding:0 3px;border-radius:2px";
    box.appendChild(tag);
    root.appendChild(box);
  }
  document.documentElement.appendChild(root);
}""".replace("__ID__", _LABELS_ID)


async def _draw_labels(engine: ControlEngine, page: Page) -> int:
    """Outline the refs of the tab's last snapshot with their names; how many were drawn."""
    boxes: list[dict[str, Any]] = []
    scroll = await page.evaluate("() => [window.scrollX, window.scrollY]")
    for ref in list(engine.state(page).refs)[:MAX_LABELS]:
        with contextlib.suppress(ControlError, PlaywrightError):
            locator = await engine.locator(page, ref)
            box = await locator.first.bounding_box(timeout=500)
            if box is not None and box["width"] > 0 and box["height"] > 0:
                boxes.append({**box, "x": box["x"] + scroll[0], "y": box["y"] + scroll[1], "ref": ref})
    if boxes:
        await page.evaluate(_DRAW_LABELS, boxes)
    return len(boxes)


async def _element(call: ControlCall, page: Page) -> Locator | None:
    ref, element = call.text("ref"), call.text("element")
    if ref and element:
        raise act_invalid("Pass ref or element, not both.")
    if ref:
        return (await call.engine.locator(page, ref)).first
    if element:
        return page.locator(element).first
    return None


@route("POST", "/screenshot", mutating=False)
async def screenshot(call: ControlCall) -> dict[str, Any]:
    """A PNG or JPEG of the tab, the whole page, or one element (``ref`` or CSS ``element``)."""
    kind = (call.text("type") or "png").lower()
    if kind == "jpg":
        kind = "jpeg"
    if kind not in _MIME:
        raise act_invalid('type must be "png" or "jpeg"')
    full_page = call.flag("fullPage")
    if full_page and (call.text("ref") or call.text("element")):
        raise act_invalid("fullPage is not supported for element screenshots")
    timeout_ms = call.number("timeoutMs", 20_000) or 20_000
    page, target_id = await _tab(call)
    blocked = call.engine.state(page).blocked()
    if blocked is not None:
        return {**blocked, "targetId": target_id}
    locator = await _element(call, page)
    labelled = call.flag("labels") and await _draw_labels(call.engine, page) > 0
    try:
        if locator is not None:
            data = await locator.screenshot(type=kind, timeout=timeout_ms)  # type: ignore[arg-type]
        else:
            data = await page.screenshot(type=kind, full_page=full_page, timeout=timeout_ms)  # type: ignore[arg-type]
    except PlaywrightError as exc:
        raise operation_failed(f"The screenshot failed: {exc.message.splitlines()[0]}") from exc
    finally:
        if labelled:
            with contextlib.suppress(PlaywrightError):
                await page.evaluate(f"() => document.getElementById('{_LABELS_ID}')?.remove()")
    name = new_file_name("screenshot", "jpg" if kind == "jpeg" else "png")
    saved = await write_file(call, SCREENSHOTS, name, data)
    return {"ok": True, **saved, "targetId": target_id, "mimeType": _MIME[kind]}


@route("POST", "/pdf", mutating=False)
async def pdf(call: ControlCall) -> dict[str, Any]:
    """The tab printed to a PDF."""
    page, target_id = await _tab(call)
    session = await call.engine.context.new_cdp_session(page)
    try:
        printed = await session.send("Page.printToPDF", {"printBackground": True})
    except PlaywrightError as exc:
        message = exc.message.lower()
        if "not implemented" in message or "not supported" in message or "headless" in message:
            raise ControlError(
                501, "This browser cannot print to PDF (Chromium prints only when headless).", "PDF_UNSUPPORTED"
            ) from exc
        raise operation_failed(f"Printing to PDF failed: {exc.message.splitlines()[0]}") from exc
    finally:
        # Detaching waits on the renderer, which a dialog opened meanwhile would block.
        with contextlib.suppress(PlaywrightError, TimeoutError):
            await asyncio.wait_for(session.detach(), 2)
    saved = await write_file(call, SCREENSHOTS, new_file_name("page", "pdf"), base64.b64decode(printed["data"]))
    return {"ok": True, **saved, "targetId": target_id, "mimeType": "application/pdf"}


@route("POST", "/highlight", mutating=False)
async def highlight(call: ControlCall) -> dict[str, Any]:
    """Outline the element a ref points at (to see what an action would hit)."""
    ref = call.text("ref", required=True) or ""
    page, target_id = await _tab(call)
    locator = await call.engine.locator(page, ref)
    try:
        await locator.first.scroll_into_view_if_needed(timeout=5_000)
        await locator.first.highlight()
    except PlaywrightError as exc:
        raise operation_failed(f"Could not highlight ref {ref}: {exc.message.splitlines()[0]}") from exc
    return {"ok": True, "targetId": target_id, "url": page.url}


def _trace_unavailable(exc: PlaywrightError) -> ControlError:
    return ControlError(
        501, f"Tracing is not possible on this browser connection: {exc.message.splitlines()[0]}", "TRACE_UNAVAILABLE"
    )


@route("POST", "/trace/start", mutating=False)
async def trace_start(call: ControlCall) -> dict[str, Any]:
    """Start a Playwright trace of the browser (screenshots and DOM snapshots by default)."""
    page, target_id = await _tab(call)
    context = call.engine.context
    if _tracing.get(context):
        raise ControlError(409, "A trace is already running; stop it first.", "TRACE_RUNNING")
    try:
        await context.tracing.start(
            screenshots=call.flag("screenshots", True),
            snapshots=call.flag("snapshots", True),
            sources=call.flag("sources", False),
        )
    except PlaywrightError as exc:
        raise _trace_unavailable(exc) from exc
    _tracing[context] = True
    return {"ok": True, "targetId": target_id, "url": page.url}


@route("POST", "/trace/stop", mutating=False)
async def trace_stop(call: ControlCall) -> dict[str, Any]:
    """Stop the trace and save it as a zip (open it with ``playwright show-trace``)."""
    _, target_id = await _tab(call)
    context = call.engine.context
    if not _tracing.get(context):
        raise ControlError(409, "No trace is running; start one first.", "TRACE_NOT_RUNNING")
    name = new_file_name("trace", "zip")
    folder = Path(call.engine.target.files_dir) / TRACES
    await asyncio.to_thread(folder.mkdir, mode=0o700, parents=True, exist_ok=True)
    try:
        await context.tracing.stop(path=folder / name)
    except PlaywrightError as exc:
        raise _trace_unavailable(exc) from exc
    finally:
        _tracing.pop(context, None)
    return {
        "ok": True,
        "targetId": target_id,
        "path": str(folder / name),
        "url": call.file_url(TRACES, name),
    }


# The file chooser and download routes live next door; importing them here puts them in the route table.
import openbrowse.control.transfers  # noqa: E402, F401
