"""BrowserService: raw browsers for callers who bring their own agent (spec §19.1).

A raw browser is a display slot taken from the **same** :class:`~openbrowse.slots.pool.SlotPool` as agent runs
(same FIFO queue, same eviction of parked keep-alive sessions) with a Chromium on it and nothing else: the
caller drives it over CDP. Each browser lives in one task owned by this service:

    lease a slot (may queue) -> start Chromium (VNC starts lazily on the first live view)
    -> insert the row (``active``) and hand the record to the waiting POST
    -> wait for a stop request, ``timeoutAt``, or Chromium dying -> release the slot -> row ``stopped``

A CDP client disconnecting changes nothing; only a stop, the timeout, the browser exiting or shutdown end it.
If the POST that asked for a browser goes away before the browser is up, the browser is abandoned (it would
otherwise hold a slot until its timeout with nobody knowing its id). Rows left ``active`` by a previous
process are marked ``stopped`` on entry; that process's children are already gone (the pool's start-up clean-up).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Protocol

from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.browsers import (
    DEFAULT_TIMEOUT_MINUTES,
    BrowserRecord,
    BrowserStatus,
    BrowserStopReason,
)
from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.ids import BrowserId, new_browser_id
from openbrowse.errors import BrowserUnavailable, InvalidRequest, ResourceLimitExceeded
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.admission import QueueAdmission
from openbrowse.sessions.profile_sync import ProfileSync
from openbrowse.sessions.runtime import LiveSlot
from openbrowse.shielding import run_shielded
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH
from openbrowse.store.browsers import BrowserRepo

__all__ = ["BrowserRequest", "BrowserService", "CdpEndpoint"]

logger = logging.getLogger(__name__)


class BrowserSlot(LiveSlot, Protocol):
    """What a raw browser needs of a started slot (implemented by :class:`openbrowse.slots.slot.Slot`)."""

    @property
    def cdp_url(self) -> str: ...

    @property
    def cdp_ws_url(self) -> str: ...

    @property
    def uploads_dir(self) -> Path: ...

    @property
    def downloads_dir(self) -> Path: ...

    async def watch(self) -> BaseException: ...


class BrowserLease(Protocol):
    async def start_browser(self, *, vnc: bool = ..., window_size: tuple[int, int] | None = ...) -> BrowserSlot: ...

    async def release(self) -> None: ...


class LeaseProvider(Protocol):
    async def lease(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None = ...) -> BrowserLease: ...


@dataclass(frozen=True, slots=True)
class BrowserRequest:
    """A validated ``POST /v3/browsers``. ``timeout_minutes`` may be fractional."""

    timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES
    screen_width: int | None = None
    screen_height: int | None = None
    profile_id: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    @property
    def window_size(self) -> tuple[int, int] | None:
        if self.screen_width is None and self.screen_height is None:
            return None
        return (self.screen_width or SCREEN_WIDTH, self.screen_height or SCREEN_HEIGHT)


@dataclass(frozen=True, slots=True)
class CdpEndpoint:
    """Where the browser's own DevTools endpoint listens (loopback only), and the folders its files may use."""

    ws_url: str
    http_url: str
    folders: BrowserFolders


class _Running:
    """One raw browser from the moment it was requested until its slot is released."""

    def __init__(self, browser_id: BrowserId, request: BrowserRequest) -> None:
        self.id = browser_id
        self.request = request
        self.ready: asyncio.Future[BrowserRecord] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "never retrieved"
        self.slot: BrowserSlot | None = None
        self.task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.reason = BrowserStopReason.REQUESTED
        self.profile: ProfileSync | None = None
        self.leased = False

    def request_stop(self, reason: BrowserStopReason) -> None:
        """Ask the browser to end. Before it is up there is nothing to wait for: the start is cancelled."""
        if not self._stop.is_set():
            self.reason = reason
            self._stop.set()
        if not self.ready.done() and self.task is not None:
            self.task.cancel()

    async def stop_requested(self) -> None:
        await self._stop.wait()


class BrowserService:
    """Creates, lists and stops raw browsers. Enter after the slot pool; close before it."""

    def __init__(
        self,
        browsers: BrowserRepo,
        profiles: ProfileService,
        pool: LeaseProvider,
        live_url: Callable[[str], str],
        clock: Clock = utc_now,
        files_dir: Path | None = None,
        admission: QueueAdmission | None = None,
    ) -> None:
        self._repo = browsers
        self._profiles = profiles
        self._pool = pool
        self._live_url = live_url
        self._clock = clock
        self._files_dir = files_dir
        self._running: dict[BrowserId, _Running] = {}
        self._closed = False
        self._admission = admission
        if admission is not None:
            admission.add_source(self.waiting_for_slot)

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def __aenter__(self) -> BrowserService:
        stale = await self._repo.stop_all_active(reason=BrowserStopReason.RESTART, finished_at=self._clock())
        if stale:
            logger.info("Marked %d raw browser(s) of a previous process as stopped", stale)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every raw browser and wait until their slots are released (shielded; idempotent)."""
        self._closed = True
        running = list(self._running.values())
        for browser in running:
            browser.request_stop(BrowserStopReason.SHUTDOWN)
        tasks = [browser.task for browser in running if browser.task is not None]
        if tasks:
            await run_shielded(asyncio.wait(tasks))

    # -- commands ----------------------------------------------------------------------------------------------
    async def create(self, request: BrowserRequest) -> BrowserRecord:
        """Take a slot (waiting in the pool's FIFO queue if needed), start Chromium, return the active record.

        Cancelling this call before the browser is up abandons the browser (and after, stops it): the caller
        would never learn its id.
        """
        if request.profile_id is not None and not await self._profiles.exists(request.profile_id):
            raise InvalidRequest("Profile not found")
        if self._closed:
            raise BrowserUnavailable("The server is shutting down")
        if self._admission is not None:
            self._admission.admit()  # the browser below counts as waiting from here on, with no await between
        browser = _Running(new_browser_id(), request)
        browser.task = asyncio.get_running_loop().create_task(self._run(browser), name=f"browser-{browser.id}")
        self._running[browser.id] = browser
        browser.task.add_done_callback(lambda _: self._forget(browser))
        try:
            return await asyncio.shield(browser.ready)
        except asyncio.CancelledError:
            browser.request_stop(BrowserStopReason.ABANDONED)
            raise

    async def stop(self, browser_id: str) -> BrowserRecord:
        """Stop the browser and wait until its slot is released; stopping a stopped browser changes nothing."""
        browser = self._running.get(BrowserId(browser_id))
        if browser is not None and browser.task is not None:
            browser.request_stop(BrowserStopReason.REQUESTED)
            await run_shielded(asyncio.wait([browser.task]))
        return await self._repo.get(browser_id)

    # -- queries -----------------------------------------------------------------------------------------------
    def waiting_for_slot(self) -> int:
        """Browsers asked for that hold no slot yet: ``MAX_QUEUED`` counts them with queued agent runs."""
        return sum(1 for browser in self._running.values() if not browser.leased)

    async def get(self, browser_id: str) -> BrowserRecord:
        return await self._repo.get(browser_id)

    async def find(self, browser_id: str) -> BrowserRecord | None:
        return await self._repo.find(browser_id)

    async def page(
        self, page: int, page_size: int, status: BrowserStatus | None = None
    ) -> tuple[list[BrowserRecord], int]:
        return await self._repo.page(page, page_size, status)

    def live_url(self, record: BrowserRecord) -> str | None:
        """The live-view path of an active browser (same design as a session's ``liveUrl``)."""
        return self._live_url(record.id) if record.active else None

    def live_slot(self, browser_id: str) -> LiveSlot | None:
        """The slot showing this browser while it is up, else None."""
        browser = self._running.get(BrowserId(browser_id))
        return browser.slot if browser is not None else None

    async def cdp_endpoint(self, browser_id: str) -> CdpEndpoint:
        """The loopback DevTools endpoint of an active browser. Unknown → 404; stopped → 422."""
        browser = self._running.get(BrowserId(browser_id))
        slot = browser.slot if browser is not None else None
        if slot is None:
            await self._repo.get(browser_id)  # BrowserNotFound for an unknown id
            raise InvalidRequest("Browser is stopped")
        try:
            ws_url = slot.cdp_ws_url
        except RuntimeError as exc:  # the slot went away (crash, timeout, stop) while the record was active
            raise BrowserUnavailable("The browser is no longer running") from exc
        folders = BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir)
        return CdpEndpoint(ws_url=ws_url, http_url=slot.cdp_url, folders=folders)

    # -- the browser task --------------------------------------------------------------------------------------
    def _forget(self, browser: _Running) -> None:
        if self._running.get(browser.id) is browser:
            del self._running[browser.id]

    async def _run(self, browser: _Running) -> None:
        lease: BrowserLease | None = None
        record: BrowserRecord | None = None
        try:
            lease = await self._pool.lease(f"browser {browser.id}")
            browser.leased = True
            slot = await lease.start_browser(vnc=False, window_size=browser.request.window_size)
            await asyncio.to_thread(BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir).ensure)
            browser.profile = await self._load_profile(browser, slot)
            record = await self._insert(browser)
            browser.slot = slot
            browser.ready.set_result(record)
            logger.info("Raw browser %s is up until %s", browser.id, record.timeout_at.isoformat())
            await self._wait_for_end(browser, slot, record)
        except asyncio.CancelledError:
            if not browser.ready.done():
                browser.ready.set_exception(BrowserUnavailable("The browser was stopped before it was up"))
            raise
        except Exception as exc:
            if not browser.ready.done():
                browser.ready.set_exception(exc)
            else:
                logger.exception("Raw browser %s failed", browser.id)
        finally:
            browser.slot = None
            await run_shielded(self._finish(browser, lease, record))

    async def _load_profile(self, browser: _Running, slot: BrowserSlot) -> ProfileSync | None:
        profile_id = browser.request.profile_id
        if profile_id is None or self._files_dir is None:
            return None

        async def note(text: str) -> None:
            logger.info("Raw browser %s: %s", browser.id, text)

        return await ProfileSync.start(self._profiles, profile_id, self._files_dir / browser.id, slot.cdp_ws_url, note)

    async def _insert(self, browser: _Running) -> BrowserRecord:
        request = browser.request
        now = self._clock()
        record = BrowserRecord(
            id=browser.id,
            status=BrowserStatus.ACTIVE,
            timeout_minutes=request.timeout_minutes,
            started_at=now,
            timeout_at=now + timedelta(minutes=request.timeout_minutes),
            profile_id=request.profile_id,
            screen_width=request.screen_width,
            screen_height=request.screen_height,
            metadata=dict(request.metadata),
        )
        return await self._repo.insert(record)

    async def _wait_for_end(self, browser: _Running, slot: BrowserSlot, record: BrowserRecord) -> None:
        remaining = max((record.timeout_at - self._clock()).total_seconds(), 0.0)
        stop = asyncio.ensure_future(browser.stop_requested())
        died = asyncio.ensure_future(slot.watch())
        try:
            done, _ = await asyncio.wait({stop, died}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (stop, died):
                waiter.cancel()
            await asyncio.gather(stop, died, return_exceptions=True)
        if stop in done:
            return
        if died in done:
            death = died.result()
            logger.warning("Raw browser %s ended: %s", browser.id, death)
            memory = isinstance(death, ResourceLimitExceeded) and death.limit == "memory"
            browser.reason = BrowserStopReason.MEMORY_LIMIT if memory else BrowserStopReason.BROWSER_EXITED
        else:
            logger.info("Raw browser %s reached its timeout", browser.id)
            browser.reason = BrowserStopReason.TIMEOUT

    async def _finish(self, browser: _Running, lease: BrowserLease | None, record: BrowserRecord | None) -> None:
        try:
            profile, browser.profile = browser.profile, None
            if profile is not None:
                await profile.finish()  # before the slot's Chromium stops
                assert self._files_dir is not None
                await asyncio.to_thread(shutil.rmtree, self._files_dir / browser.id, True)
            if lease is not None:
                await lease.release()
        finally:
            if record is not None:
                await self._repo.mark_stopped(browser.id, reason=browser.reason, finished_at=self._clock())
                logger.info("Raw browser %s stopped (%s)", browser.id, browser.reason)
