"""Files in and out of a page: file inputs and choosers from ``uploads/``, downloads into ``downloads/`` (§20.2, §22.2).

Only files inside the target's ``uploads/`` may go into a page, judged on real paths (a link never carries a path
out). The engine makes Chromium save every download into ``downloads/`` with download events switched on, so a
download is followed on the browser's DevTools session (``Browser.downloadWillBegin`` → ``downloadProgress``
``completed``) rather than through Playwright, which does not own the downloads of a browser it merely attached to.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import weakref
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from playwright.async_api import Error as PlaywrightError, FileChooser, Page

from openbrowse.control.call import ControlCall, route
from openbrowse.control.errors import ControlError, act_invalid, operation_failed
from openbrowse.control.tab_state import TabState
from openbrowse.control.target import DOWNLOADS
from openbrowse.domain.browser_folders import BrowserFolders, real_path_inside

if TYPE_CHECKING:
    from openbrowse.control.engine import ControlEngine

__all__ = ["download_file_name", "upload_paths"]

DOWNLOAD_TIMEOUT_MS = 120_000
CHOOSER_TIMEOUT_MS = 120_000


def _forbidden(message: str) -> ControlError:
    return ControlError(403, message, "PATH_FORBIDDEN")


def _plain(name: str) -> bool:
    return bool(name) and name not in {".", ".."} and "/" not in name and "\\" not in name and "\x00" not in name


def upload_paths(folders: BrowserFolders, raw: Any) -> list[str]:
    """The real paths of ``raw`` (names in ``uploads/`` or paths inside it); 403 for anything outside, 400 if absent."""
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list) or not items or not all(isinstance(item, str) and item for item in items):
        raise act_invalid("paths are required")
    resolved: list[str] = []
    for item in items:
        candidate = str(folders.uploads / item) if _plain(item) else item
        real = real_path_inside(candidate, (folders.uploads,))
        if real is None:
            raise _forbidden(f"{item} is outside this browser's uploads folder; upload the file there first.")
        if not os.path.isfile(real):
            raise act_invalid(f"{item} is not a file in this browser's uploads folder.")
        resolved.append(real)
    return resolved


def download_file_name(folders: BrowserFolders, raw: str) -> str:
    """The plain name a client asked a download to be saved as: a bare name, or a path directly in ``downloads/``."""
    if _plain(raw):
        return raw
    if os.path.isabs(raw) and _plain(os.path.basename(raw)):
        parent = real_path_inside(os.path.dirname(raw), (folders.downloads,))
        if parent is not None and parent == os.path.realpath(folders.downloads):
            return os.path.basename(raw)
    raise _forbidden(f"{raw} is not a plain file name in this browser's downloads folder.")


# -- file inputs -------------------------------------------------------------------------------------------------


async def _fill_chooser(chooser: FileChooser, state: TabState, paths: list[str]) -> None:
    state.file_chooser_paths = None
    with contextlib.suppress(PlaywrightError):  # the page went away or the input was removed
        await chooser.set_files(paths)


def _arm_chooser(page: Page, state: TabState, paths: list[str]) -> asyncio.Future[None]:
    """Answer the next file chooser of ``page`` with ``paths``; the future resolves when it was answered."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def on_chooser(chooser: FileChooser) -> None:
        page.remove_listener("filechooser", on_chooser)
        try:
            if state.file_chooser_paths is not None:
                await _fill_chooser(chooser, state, state.file_chooser_paths)
        finally:
            if not done.done():
                done.set_result(None)

    # Listening makes Playwright intercept choosers: only while armed, so a person's own click still opens one.
    previous = _armed.pop(page, None)
    if previous is not None:
        page.remove_listener("filechooser", previous)
    state.file_chooser_paths = paths
    _armed[page] = on_chooser
    page.on("filechooser", on_chooser)
    return done


_armed: weakref.WeakKeyDictionary[Page, Callable[[FileChooser], Awaitable[None]]] = weakref.WeakKeyDictionary()


@route("POST", "/hooks/file-chooser", mutating=True)
async def file_chooser(call: ControlCall) -> dict[str, Any]:
    """Put files from ``uploads/`` into a file input (``inputRef``/``element``), the chooser a ``ref`` opens, or
    the next chooser."""
    paths = upload_paths(call.engine.target.folders, call.arg("paths"))
    ref, input_ref, element = call.text("ref"), call.text("inputRef"), call.text("element")
    if ref and (input_ref or element):
        raise act_invalid("ref cannot be combined with inputRef/element")
    timeout_ms = call.number("timeoutMs", CHOOSER_TIMEOUT_MS) or CHOOSER_TIMEOUT_MS
    page = await call.engine.page(call.target_id)
    state = call.engine.state(page)
    target_id = await call.engine.target_id_of(page)
    try:
        if input_ref or element:
            locator = await call.engine.locator(page, input_ref) if input_ref else page.locator(element or "")
            await locator.first.set_input_files(paths, timeout=min(timeout_ms, 30_000))
            return {"ok": True, "targetId": target_id}
        answered = _arm_chooser(page, state, paths)
        if not ref:
            return {"ok": True, "targetId": target_id, "armed": True}
        locator = await call.engine.locator(page, ref)
        await locator.first.click(timeout=min(timeout_ms, 30_000))
        await asyncio.wait_for(answered, timeout_ms / 1000)
    except TimeoutError as exc:
        raise operation_failed(f"Clicking ref {ref} opened no file chooser within {int(timeout_ms)} ms.") from exc
    except PlaywrightError as exc:
        raise operation_failed(f"Setting the files failed: {exc.message.splitlines()[0]}") from exc
    return {"ok": True, "targetId": target_id}


# -- downloads ---------------------------------------------------------------------------------------------------


async def capture_download(
    engine: ControlEngine, trigger: Callable[[], Awaitable[None]] | None, timeout_ms: float
) -> dict[str, Any]:
    """Wait for the next download (started by ``trigger`` if given) to finish: its begin event merged with its end."""
    cdp = await engine.browser_cdp()
    loop = asyncio.get_running_loop()
    begun: asyncio.Future[dict[str, Any]] = loop.create_future()
    ended: dict[str, asyncio.Future[dict[str, Any]]] = {}

    def on_begin(event: dict[str, Any]) -> None:
        if not begun.done():
            begun.set_result(event)

    def on_progress(event: dict[str, Any]) -> None:
        if event.get("state") in {"completed", "canceled"}:
            future = ended.setdefault(str(event.get("guid")), loop.create_future())
            if not future.done():
                future.set_result(event)

    cdp.on("Browser.downloadWillBegin", on_begin)
    cdp.on("Browser.downloadProgress", on_progress)
    deadline = loop.time() + timeout_ms / 1000
    try:
        if trigger is not None:
            await trigger()
        started = await asyncio.wait_for(begun, max(0.001, deadline - loop.time()))
        finished = ended.setdefault(str(started["guid"]), loop.create_future())
        end = await asyncio.wait_for(finished, max(0.001, deadline - loop.time()))
    except TimeoutError as exc:
        what = "finished" if begun.done() and not begun.cancelled() else "started"
        raise operation_failed(f"No download {what} within {int(timeout_ms)} ms.") from exc
    finally:
        cdp.remove_listener("Browser.downloadWillBegin", on_begin)
        cdp.remove_listener("Browser.downloadProgress", on_progress)
    if end.get("state") != "completed":
        raise operation_failed(f"The download of {started.get('url')} was canceled.")
    return {**started, **end}


def _saved_file(folders: BrowserFolders, event: dict[str, Any]) -> Path:
    """Where Chromium put the finished download (it adds `` (1)`` to a name already taken)."""
    reported = event.get("filePath")
    if isinstance(reported, str) and reported:
        real = real_path_inside(reported, (folders.downloads,))
        if real is not None and os.path.isfile(real):
            return Path(real)
    suggested = os.path.basename(str(event.get("suggestedFilename") or "download"))
    stem, dot, ext = suggested.rpartition(".") if "." in suggested else (suggested, "", "")
    candidates = [p for p in folders.downloads.iterdir() if p.is_file() and p.name.startswith(stem)]
    candidates = [p for p in candidates if not dot or p.name.endswith(dot + ext)]
    if not candidates:
        raise operation_failed(f"The download {suggested} is not in the downloads folder.")
    return max(candidates, key=lambda path: path.stat().st_mtime_ns)


def _finish(call: ControlCall, event: dict[str, Any], wanted: str | None) -> dict[str, Any]:
    folders = call.engine.target.folders
    saved = _saved_file(folders, event)
    if wanted is not None and wanted != saved.name:
        destination = folders.downloads / wanted
        os.replace(saved, destination)
        saved = destination
    info = {
        "path": str(saved),
        "url": call.file_url(DOWNLOADS, saved.name),
        "suggestedFilename": event.get("suggestedFilename") or saved.name,
        "size": saved.stat().st_size,
    }
    return {"ok": True, **info, "download": info}


def _wanted(call: ControlCall) -> str | None:
    raw = call.text("path")
    return download_file_name(call.engine.target.folders, raw) if raw else None


@route("POST", "/download", mutating=True)
async def download(call: ControlCall) -> dict[str, Any]:
    """Click a ref and save the download it starts into ``downloads/`` (as ``path`` if given)."""
    ref = call.text("ref", required=True) or ""
    wanted = _wanted(call)
    timeout_ms = call.number("timeoutMs", DOWNLOAD_TIMEOUT_MS) or DOWNLOAD_TIMEOUT_MS
    page = await call.engine.page(call.target_id)
    locator = await call.engine.locator(page, ref)

    async def click() -> None:
        try:
            await locator.first.click(timeout=min(timeout_ms, 30_000))
        except PlaywrightError as exc:
            raise operation_failed(f"Clicking ref {ref} failed: {exc.message.splitlines()[0]}") from exc

    event = await capture_download(call.engine, click, timeout_ms)
    return {**_finish(call, event, wanted), "targetId": await call.engine.target_id_of(page)}


@route("POST", "/wait/download", mutating=True)
async def wait_download(call: ControlCall) -> dict[str, Any]:
    """Wait for the next download to finish in ``downloads/`` (renamed to ``path`` if given)."""
    wanted = _wanted(call)
    timeout_ms = call.number("timeoutMs", DOWNLOAD_TIMEOUT_MS) or DOWNLOAD_TIMEOUT_MS
    page = await call.engine.page(call.target_id)
    event = await capture_download(call.engine, None, timeout_ms)
    return {**_finish(call, event, wanted), "targetId": await call.engine.target_id_of(page)}
