"""``read_pages(urls?, frame_url_contains?)`` (spec §11.2): up to 48 pages per call, read in waves of up to 6
real foreground tabs; a bare call reads the last find_links set and queues the rest, and the next bare call
resumes the queue. Every page read joins ``pages.json``; every attempt is recorded in ``read_pages_status.json``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from browser_use import BrowserSession
from browser_use.agent.views import ActionResult
from browser_use.filesystem.file_system import FileSystem
from pydantic import BaseModel, Field

from openbrowse.agent.files.delivery import envelope, save
from openbrowse.agent.pages.cdp import close_tab, focus_tab, open_tab
from openbrowse.agent.tools.draft_file import draft_note, save_drafts
from openbrowse.agent.tools.pacing import tab_spacing
from openbrowse.agent.tools.page_read import read_early, read_one
from openbrowse.agent.tools.wave_tabs import WaveTabs
from openbrowse.agent.turns.timeouts import TIMEOUTS
from openbrowse.domain.feed import EventCategory
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

MAX_URLS = 48
WAVE_SIZE = 6
MAX_WAVE_SIZE = 8
"""A solo run (never paced) reads waves of 8 tabs: fewer wave boundaries, and each tab has longer to load its
next page while the others are read; a paced run keeps waves of 6 (spec §11.2: up to 6, max 8)."""
MIN_TIME_FOR_WAVE = 30.0
PAGES_FILE = "pages.json"
STATUS_FILE = "read_pages_status.json"


class ReadPagesParams(BaseModel):
    urls: list[str] | None = Field(
        default=None, description="Pages to read (max 48). Omit to read the last find_links set / resume the queue."
    )
    frame_url_contains: str | None = Field(
        default=None, description="Read inside the embedded frame whose URL contains this text."
    )


@dataclass
class Batch:
    urls: list[str]
    explicit: bool
    dropped: int = 0
    beyond_cap: int = 0


@dataclass
class Pending:
    """A page of a wave on its way: the load of its tab, then its early read waiting inside the page."""

    load: asyncio.Task[str | None]
    early: asyncio.Task[dict[str, Any] | None]


async def _loaded(target: str) -> str | None:
    return target


def choose_batch(ctx: ToolContext, params: ReadPagesParams) -> Batch | str:
    """The URLs this call reads, or a message when there is nothing to read."""
    reading = ctx.reading
    if params.urls:
        kept = [u.strip() for u in params.urls if u.strip().startswith(("http://", "https://"))]
        if not kept:
            raise RuntimeError("read_pages needs http(s) URLs; every entry given was something else.")
        unique = list(dict.fromkeys(kept))
        return Batch(unique[:MAX_URLS], True, len(params.urls) - len(kept), max(0, len(unique) - MAX_URLS))
    if reading.queue is None:
        if not reading.found:
            raise RuntimeError("Nothing to read: call find_links first, or pass urls.")
        reading.queue = list(dict.fromkeys(reading.default_urls()))
    if not reading.queue:
        return "Nothing left to read: the queue is drained. Call find_links for a new set, or pass urls."
    batch, reading.queue = reading.queue[:MAX_URLS], reading.queue[MAX_URLS:]
    return Batch(batch, False)


class Reader:
    """One read_pages call: waves of tabs against a time budget, then one retry pass for failures."""

    def __init__(self, ctx: ToolContext, browser: BrowserSession, frame_filter: str | None) -> None:
        self.ctx = ctx
        self.browser = browser
        self.frame_filter = frame_filter
        self.deadline = time.monotonic() + TIMEOUTS.read_pages
        self.results: dict[str, dict[str, Any]] = {}
        self.errors: dict[str, str] = {}
        self.home = browser.agent_focus_target_id
        self.wave_tabs = WaveTabs(browser, self.home)
        self.loads: list[asyncio.Task[str | None]] = []
        """Every tab load the waves started: the reader owns them and settles them before closing the tabs."""
        self.early_reads: list[asyncio.Task[dict[str, Any] | None]] = []
        """Every early read the waves sent (cancelled at the end if still waiting: their tabs then close)."""
        self.report: asyncio.Task[None] | None = None
        """The feed events of the waves read so far, written in order while the reading goes on."""

    async def run(self, urls: list[str]) -> list[str]:
        """Read ``urls``; return the ones never attempted because the budget ran out."""
        size = WAVE_SIZE if tab_spacing(WAVE_SIZE, self.ctx.active_sessions()) else MAX_WAVE_SIZE
        waves = [urls[i : i + size] for i in range(0, len(urls), size)]
        upcoming: list[Pending] = []
        try:
            for number, wave in enumerate(waves, 1):
                if self.deadline - time.monotonic() < MIN_TIME_FOR_WAVE:
                    return [u for w in waves[number - 1 :] for u in w]
                following = waves[number] if number < len(waves) else []
                upcoming = await self._wave(wave, number, len(waves), upcoming, following)
        finally:
            await run_shielded(self._settle())
        for url in [u for u in urls if u in self.errors]:
            if self.deadline - time.monotonic() < MIN_TIME_FOR_WAVE:
                break
            await self._attempt([url])
        await self._recover_shells(urls)
        await self._reread_missing_jsonld(urls)
        return []

    async def _recover_shells(self, urls: list[str]) -> None:
        """Pages that all read the same outer shell while a cross-origin panel holds the content: read inside it."""
        if self.frame_filter:
            return
        groups: dict[str, list[str]] = {}
        for url in urls:
            page = self.results.get(url)
            if page is not None and page["panels"]:
                groups.setdefault(" ".join(page["text"].split()), []).append(url)
        shells = [url for group in groups.values() if len(group) >= 2 for url in group]
        recovered = 0
        for url in shells:
            if self.deadline - time.monotonic() < MIN_TIME_FOR_WAVE:
                break
            panel_host = urlsplit(self.results[url]["panels"][0]).netloc
            del self.results[url]
            await self._attempt([url], frame_filter=panel_host)
            if url in self.results:
                recovered += 1
            else:
                self.errors[url] = f"shell read: the content is in an embedded panel ({panel_host}) that never attached"
        if shells:
            summary = f"read_pages: {len(shells)} shell read(s) detected, {recovered} recovered inside their panel"
            await self.ctx.event(EventCategory.READ, "read_pages", summary, shells=len(shells), recovered=recovered)

    async def _reread_missing_jsonld(self, urls: list[str]) -> None:
        """A page without JSON-LD while most of its siblings have it is re-navigated once."""
        read = [self.results[u] for u in urls if u in self.results]
        with_jsonld = sum(1 for page in read if page["jsonld"])
        if not with_jsonld or with_jsonld * 2 < len(read):
            return
        for page in [p for p in read if not p["jsonld"]]:
            if self.deadline - time.monotonic() < MIN_TIME_FOR_WAVE:
                break
            await self._attempt([page["url"]])

    async def _wave(
        self, wave: list[str], number: int, total: int, loading: list[Pending], following: list[str]
    ) -> list[Pending]:
        """Read one wave; unless paced, each tab starts loading its page of the following wave once read.
        Returns those pages on their way (the next wave's tabs, in order)."""
        started = time.monotonic()
        spacing = tab_spacing(len(wave), self.ctx.active_sessions())
        pending = list(loading)
        if not pending:
            pending = [self._pending(_loaded(target)) for _, target in await self.wave_tabs.load(wave, spacing)]
        # the previous wave stopped loading ahead (time budget): load the rest now
        pending += [self._pending(self._load(None, url)) for url in wave[len(pending) :]]
        upcoming: list[Pending] = []
        for index, url in enumerate(wave):
            target = await asyncio.shield(pending[index].load)
            ok = target is not None and await self._read(url, target, early=pending[index].early)
            if target is not None and not ok:
                await self.wave_tabs.discard(target)
            if not spacing and index < len(following) and self.deadline - time.monotonic() >= MIN_TIME_FOR_WAVE:
                upcoming.append(self._pending(self._load(target if ok else None, following[index])))
        ok_count = sum(1 for u in wave if u in self.results)
        inside = sum(1 for u in wave if self.results.get(u, {}).get("frameMatched"))
        summary = f"read_pages wave {number}/{total}: {ok_count} of {len(wave)} pages ok"
        if inside:
            summary += f", {inside} read inside their embedded panel"
        seconds = time.monotonic() - started
        summary += f" ({seconds:.1f}s"
        summary += f", paced {spacing * 1000:.0f}ms/tab)" if spacing else ")"
        self._report(summary, wave=number, waves=total, ok=ok_count, seconds=round(seconds, 3))
        return upcoming

    def _report(self, summary: str, **data: Any) -> None:
        """A wave's feed event, written while the next wave is read (after the previous wave's, in order)."""
        self.report = asyncio.create_task(self._append_report(self.report, summary, data))

    async def _append_report(self, previous: asyncio.Task[None] | None, summary: str, data: dict[str, Any]) -> None:
        if previous is not None:
            await previous
        await self.ctx.event(EventCategory.READ, "read_pages", summary, **data)

    def _pending(self, load: Coroutine[Any, Any, str | None]) -> Pending:
        """A page on its way: its tab loading it, then its early read sent as soon as it loaded."""
        task = asyncio.create_task(load)
        self.loads.append(task)
        early = asyncio.create_task(self._read_early(task))
        self.early_reads.append(early)
        return Pending(task, early)

    async def _read_early(self, load: asyncio.Task[str | None]) -> dict[str, Any] | None:
        target = await asyncio.shield(load)  # a cancelled early read leaves the load to :meth:`_settle`
        if target is None:
            return None
        try:
            return await read_early(self.browser, target)
        except Exception:  # the reader reads the tab the plain way
            return None

    async def _load(self, target: str | None, url: str) -> str | None:
        """A page of the next wave loading in a tab already read (or a fresh one); None when it could not."""
        try:
            return await self.wave_tabs.reuse(target, url)
        except Exception as exc:
            self.errors[url] = str(exc)[:300] or type(exc).__name__
            return None

    async def _settle(self) -> None:
        """Loads of a wave that will not be read (budget, failure, cancellation) finish before the tabs close;
        they are not cancelled, as a tab being opened would then be created without the pool knowing it. Early
        reads still waiting in their tabs are cancelled."""
        for early in self.early_reads:
            early.cancel()
        await asyncio.gather(*self.loads, *self.early_reads, return_exceptions=True)
        self.loads.clear()
        self.early_reads.clear()
        await self.wave_tabs.close()
        if self.report is not None:
            await self.report

    async def _read(
        self,
        url: str,
        target_id: str,
        frame_filter: str | None = None,
        early: asyncio.Task[dict[str, Any] | None] | None = None,
    ) -> bool:
        try:
            self.results[url] = await read_one(self.browser, target_id, url, frame_filter or self.frame_filter, early)
        except Exception as exc:  # one page's failure never ends the call; it is retried once
            self.errors[url] = str(exc)[:300] or type(exc).__name__
            return False
        self.errors.pop(url, None)
        return True

    async def _attempt(self, urls: list[str], frame_filter: str | None = None) -> None:
        """Read ``urls`` in tabs of their own (retries and re-reads), closed afterwards."""
        tabs: list[tuple[str, str]] = []
        try:
            opened = await asyncio.gather(*(open_tab(self.browser, url) for url in urls))
            tabs = list(zip(urls, opened, strict=True))
            for url, target_id in tabs:
                await self._read(url, target_id, frame_filter)
        finally:
            if self.home is not None:
                await _quietly(focus_tab(self.browser, self.home))
            await asyncio.gather(*(close_tab(self.browser, target_id) for _, target_id in tabs))


async def _quietly(step: Any) -> None:
    try:
        await step
    except Exception:
        return


def _status(url: str, page: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    if page is None:
        return {"url": url, "ok": False, "error": error or "not read"}
    return {
        "url": url,
        "ok": True,
        "textChars": len(page["text"]),
        "jsonld": len(page["jsonld"]),
        "frameMatched": page["frameMatched"],
        "links": len(page["links"]),
        "sourceRow": None,
    }


async def run_read_pages(
    ctx: ToolContext, params: ReadPagesParams, browser: BrowserSession, file_system: FileSystem | None
) -> str:
    batch = choose_batch(ctx, params)
    if isinstance(batch, str):
        return batch
    frame_filter = params.frame_url_contains or (None if batch.explicit else ctx.reading.found_frame)
    reader = Reader(ctx, browser, frame_filter)
    unattempted = await reader.run(batch.urls)
    if unattempted and not batch.explicit:
        ctx.reading.queue = unattempted + (ctx.reading.queue or [])
    reading = ctx.reading
    for url in batch.urls:
        page = reader.results.get(url)
        error = "not attempted — call again" if url in unattempted else reader.errors.get(url)
        reading.statuses[url] = _status(url, page, error)
        if page is not None:
            reading.pages[url] = page
    save(ctx.files_dir, PAGES_FILE, json.dumps(list(reading.pages.values()), ensure_ascii=False), file_system)
    drafts = save_drafts(ctx, file_system)
    save(ctx.files_dir, STATUS_FILE, json.dumps(list(reading.statuses.values()), ensure_ascii=False), file_system)
    note = _note(batch, reader, unattempted, ctx) + draft_note(drafts)
    return envelope(note, PAGES_FILE, [reading.statuses[u] for u in batch.urls])


def _note(batch: Batch, reader: Reader, unattempted: list[str], ctx: ToolContext) -> str:
    ok = len(reader.results)
    note = f"Read {ok} of {len(batch.urls)} page(s); all pages read this session are in {PAGES_FILE}"
    note += f" (per-page status in {STATUS_FILE})."
    failed = len(batch.urls) - ok - len(unattempted)
    if failed:
        note += f" {failed} failed after a retry."
    if unattempted:
        note += f" {len(unattempted)} not attempted (time budget) — call again."
    if batch.dropped:
        note += f" {batch.dropped} non-http(s) entr(ies) dropped."
    if batch.beyond_cap:
        note += f" Only the first {MAX_URLS} were read; pass the other {batch.beyond_cap} in another call."
    if not batch.explicit:
        remaining = len(ctx.reading.queue or [])
        note += (
            f" {remaining} URL(s) remain queued: call read_pages() with no arguments to continue."
            if remaining
            else " The queue is drained."
        )
    return note


def register_read_pages(tools: Tools[Any], ctx: ToolContext) -> None:
    async def read_pages(
        params: ReadPagesParams, browser_session: BrowserSession, file_system: FileSystem
    ) -> ActionResult:
        reply = await run_read_pages(ctx, params, browser_session, file_system)
        return ActionResult(
            extracted_content=reply, long_term_memory="read_pages", include_extracted_content_only_once=True
        )

    read_pages.__annotations__.update(browser_session=BrowserSession, file_system=FileSystem)
    tools.action(
        "Read many pages at once (title, text, JSON-LD, links) in real tabs, up to 48 per call: pass urls, or "
        "omit them to read the last find_links set; a bare call resumes the queue. Results go to pages.json.",
        param_model=ReadPagesParams,
    )(read_pages)
