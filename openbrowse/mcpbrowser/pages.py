"""OwnerPages: one owner's pages in its browser context, as the browser tools see them (spec §23.3).

Pages get small numeric ids (``pageId``, as chrome-devtools-mcp's ``list_pages`` shows them) in the order they
appear, including pages the page itself opens (popups). One page is *selected*: tools without a page argument act
on it. Each page has a :class:`~openbrowse.control.tab_state.TabState` filled by the control API's observer
(console, requests with their credential headers redacted, dialogs), and remembers the document its last snapshot
was taken on: a ``uid`` of an older document is refused at once instead of waiting for an element that is gone.

Files the tools write go to the owner's own area (``files_dir``); a ``filePath`` argument is a plain name, or a
path inside that area, and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import shutil
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, ConsoleMessage, Dialog, Locator, Page, Request

from openbrowse.control import page_log
from openbrowse.control.tab_state import TabState
from openbrowse.network.policy import NetworkRules
from openbrowse.network.refusal import NetworkRefused

__all__ = ["OwnerPages", "PageEntry", "ToolFailure"]

logger = logging.getLogger(__name__)

SNAPSHOT_TIMEOUT_MS = 20_000
_UID = re.compile(r"(?:f\d+)?e\d+")  # Playwright's aria refs: e12, or f2e7 inside a later frame or document


class ToolFailure(Exception):
    """A browser tool that cannot do what was asked; the MCP result is ``isError`` with this sentence."""


@dataclass(eq=False, slots=True)
class PageEntry:
    page_id: int
    page: Page
    name: str = ""
    state: TabState = field(default_factory=TabState)
    document: int = 0
    snapshot_document: int = -1
    console_seen: int = 0
    requests_seen: int = 0
    console_mark: int = 0
    requests_mark: int = 0
    """How many console messages and requests the page had when its current document started: the lists show
    what came after unless the caller asks for the earlier documents' too (upstream's ``includePreserved…``)."""

    def console(self, *, preserved: bool) -> list[dict[str, Any]]:
        rows = list(self.state.console)
        return rows if preserved else rows[max(0, len(rows) - (self.console_seen - self.console_mark)) :]

    def requests(self, *, preserved: bool) -> list[dict[str, Any]]:
        rows = list(self.state.requests)
        return rows if preserved else rows[max(0, len(rows) - (self.requests_seen - self.requests_mark)) :]

    def dialog_notice(self) -> str | None:
        """The open dialog as the tools' replies show it (the page is frozen until handle_dialog), or None."""
        pending = self.state.dialogs_pending
        if not pending:
            return None
        dialog = pending[-1]
        return f'## Open dialog\n{dialog["type"]} dialog: "{dialog["message"]}". Call handle_dialog to handle it.'

    async def snapshot(self, *, verbose: bool = False) -> str:
        """The page's accessibility tree with a ``uid`` for every element a tool can act on; those uids hold
        until the page's next document (see :meth:`OwnerPages.locator`)."""
        if (dialog := self.dialog_notice()) is not None:
            return dialog
        document = self.document
        text = await self.page.aria_snapshot(mode="ai", timeout=SNAPSHOT_TIMEOUT_MS)
        self.snapshot_document = document
        if not verbose:
            text = "\n".join(line for line in text.splitlines() if not line.strip().startswith("- /url:"))
        return "## Latest page snapshot\n" + text.replace("[ref=", "[uid=")


class OwnerPages:
    """The pages of one browser context. ``owns_context``: closing this closes the context (the shared browser's
    owners); otherwise it only stops watching (a raw browser's default context)."""

    def __init__(
        self,
        context: BrowserContext,
        *,
        files_dir: Path,
        rules: NetworkRules | None,
        evaluate_enabled: bool = True,
        owns_context: bool = True,
        remove_files: bool = False,
    ) -> None:
        self.context = context
        self.files_dir = files_dir
        self.rules = rules
        self.evaluate_enabled = evaluate_enabled
        self._owns_context = owns_context
        self._remove_files = remove_files
        self._entries: list[PageEntry] = []
        self._by_page: dict[Page, PageEntry] = {}
        self._next_id = 0
        self._selected: PageEntry | None = None
        self.lock = asyncio.Lock()
        """One tool call at a time per owner: a call that types must not interleave with one that navigates."""
        context.on("page", self._on_page)
        for page in context.pages:
            self.adopt(page)

    # -- pages -------------------------------------------------------------------------------------------------
    def _on_page(self, page: Page) -> None:
        self.adopt(page)

    def adopt(self, page: Page, name: str = "") -> PageEntry:
        entry = self._by_page.get(page)
        if entry is not None:
            if name and not entry.name:
                entry.name = name
            return entry
        self._next_id += 1
        entry = PageEntry(self._next_id, page, name)
        self._entries.append(entry)
        self._by_page[page] = entry
        page_log.watch(page, entry.state)

        def navigated(frame: object) -> None:
            if frame == page.main_frame:
                entry.document += 1
                entry.console_mark = entry.console_seen

        def requested(request: Request) -> None:
            entry.requests_seen += 1
            if request.is_navigation_request() and request.frame == page.main_frame:
                entry.requests_mark = entry.requests_seen - 1  # the new document's own request counts as its

        def logged(_: ConsoleMessage) -> None:
            entry.console_seen += 1

        page.on("framenavigated", navigated)
        page.on("request", requested)
        page.on("console", logged)
        page.on("close", self._forget)
        if self._selected is None:
            self._selected = entry
        return entry

    def _forget(self, page: Page) -> None:
        entry = self._by_page.pop(page, None)
        if entry is None:
            return
        self._entries.remove(entry)
        if self._selected is entry:
            self._selected = self._entries[-1] if self._entries else None

    @property
    def entries(self) -> list[PageEntry]:
        return [entry for entry in self._entries if not entry.page.is_closed()]

    @property
    def selected(self) -> PageEntry:
        entry = self._selected
        if entry is None or entry.page.is_closed():
            open_entries = self.entries
            if not open_entries:
                raise ToolFailure("No page is open; open one with new_page.")
            entry = self._selected = open_entries[-1]
        return entry

    def entry(self, page_id: int) -> PageEntry:
        for entry in self.entries:
            if entry.page_id == page_id:
                return entry
        raise ToolFailure(f"No page has id {page_id}; call list_pages to see the open pages.")

    def select(self, entry: PageEntry) -> None:
        self._selected = entry

    async def new_page(self, name: str = "") -> PageEntry:
        page = await self.context.new_page()
        entry = self.adopt(page, name)
        self._selected = entry
        return entry

    async def listing(self) -> str:
        """``## Pages`` as chrome-devtools-mcp writes it: ``<pageId>: <url> [selected]``."""
        selected = self._selected
        lines = ["## Pages"]
        for entry in self.entries:
            mark = " [selected]" if entry is selected else ""
            lines.append(f"{entry.page_id}: {entry.page.url}{mark}")
        return "\n".join(lines)

    # -- uids --------------------------------------------------------------------------------------------------
    def locator(self, uid: str, entry: PageEntry | None = None) -> Locator:
        """The element of ``uid`` from the selected page's last snapshot; stale or malformed uids fail at once."""
        entry = entry or self.selected
        ref = uid.strip()
        if ref.isdigit():
            ref = f"e{ref}"
        if _UID.fullmatch(ref) is None:
            raise ToolFailure(f"{uid!r} is not a uid from take_snapshot (they look like e12 or f2e7).")
        if entry.snapshot_document != entry.document:
            raise ToolFailure(f"uid {uid} is from an older snapshot of this page; take a new snapshot.")
        return entry.page.locator(f"aria-ref={ref}")

    # -- dialogs -----------------------------------------------------------------------------------------------
    @staticmethod
    async def until_dialog(entry: PageEntry, work: Awaitable[object]) -> bool:
        """Run ``work`` unless a dialog opens and stays open first: then stop waiting for it (the page is frozen
        until handle_dialog) and return True. A click that opens ``confirm()`` never finishes by itself."""
        loop = asyncio.get_running_loop()
        opened: asyncio.Future[None] = loop.create_future()

        def on_dialog(_: Dialog) -> None:
            if not opened.done():
                opened.set_result(None)

        task: asyncio.Future[object] = asyncio.ensure_future(work)
        entry.page.on("dialog", on_dialog)
        try:
            while True:
                waiting: list[asyncio.Future[Any]] = [task, opened]
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                if task.done():
                    task.result()
                    return False
                if entry.state.dialogs_pending:  # the observer, registered first, has recorded it
                    return True
                opened = loop.create_future()
        finally:
            entry.page.remove_listener("dialog", on_dialog)
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    # -- URLs and files ----------------------------------------------------------------------------------------
    async def check_url(self, url: str) -> None:
        scheme = urlsplit(url).scheme.lower()
        if url == "about:blank":
            return
        if scheme not in {"http", "https"}:
            raise ToolFailure("Only http(s) URLs and about:blank may be opened.")
        if self.rules is None:
            return
        try:
            await self.rules.check(url)
        except NetworkRefused as exc:
            raise ToolFailure(f"Navigation blocked by the network policy: {exc}") from exc

    def file_path(self, requested: str) -> Path:
        """Where a ``filePath`` argument may write: a plain name (or a path) inside the owner's area only."""
        area = self.files_dir.resolve()
        candidate = Path(requested)
        target = (candidate if candidate.is_absolute() else area / candidate).resolve()
        if target.parent != area or not target.name or target.name.startswith("."):
            raise ToolFailure(f"filePath must be a plain file name; files are written to {area} only.")
        return target

    async def write_file(self, requested: str, data: bytes) -> Path:
        target = self.file_path(requested)

        def write() -> None:
            self.files_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            target.write_bytes(data)

        await asyncio.to_thread(write)
        return target

    # -- close -------------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the owner's context (its pages with it), or only stop watching a context we do not own."""
        with contextlib.suppress(Exception):
            self.context.remove_listener("page", self._on_page)
        if self._owns_context:
            try:
                await self.context.close()
            except Exception as exc:  # the browser is gone already
                logger.debug("Closing an owner's context: %s", exc)
        if self._remove_files:
            try:
                await asyncio.to_thread(shutil.rmtree, self.files_dir)
            except FileNotFoundError:
                pass
            except OSError:
                logger.exception("Removing an owner's file area failed")
