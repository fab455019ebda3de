"""BrowserService: raw browsers for callers who bring their own agent (spec §19.1, §21).

A raw browser is a display slot taken from the **same** :class:`~openbrowse.slots.pool.SlotPool` as agent runs
(same FIFO queue, same eviction of parked keep-alive sessions) with a Chromium on it and nothing else: the
caller drives it over CDP. Each browser lives in one task owned by this service:

    [queued row, answered at once] -> lease a slot (bounded wait, see ``browser_capacity``) -> start Chromium
    -> row ``active`` and live, handed to the waiting POST -> wait for a stop request, the idle or age limit, or
    Chromium dying (``browser_lifetime``) -> cut its access (tokens revoked, CDP and live-view connections closed)
    -> merge its profile back -> row ``stopped`` (a stop request is answered here) -> release the slot

The slot's teardown runs after the stop is answered, still in the browser's task: the service owns it, awaits it
on shutdown, and the pool hands the slot to nobody before it ends. A caller's release thus costs only the cut.

If the POST that asked for a browser goes away before the browser is up, the browser is abandoned (it would
otherwise hold a slot with nobody knowing its id); a queued browser's POST has already been answered. Rows left
``active`` by a previous process are marked stopped on entry (its children are gone: the pool's clean-up).

A live browser can be paused for a person (spec §21.5): its ``state`` reads ``paused``, its idle clock stops (its
maximum age does not), and a takeover token is opened for its live view until it is resumed or ends; the pause is
kept in memory only, like the browser itself. So is its upstream proxy's route (spec §28.1)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from openbrowse.agent.files.quota import DEFAULT_AREA_MB
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.browsers import (
    QUEUE_REASON_FULL,
    BrowserQueue,
    BrowserRecord,
    BrowserStatus,
    BrowserStopReason,
)
from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.ids import BrowserId, new_browser_id
from openbrowse.errors import BrowserUnavailable, InvalidRequest, NotPausable, NotPaused
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.admission import QueueAdmission
from openbrowse.sessions.browser_capacity import CapacityExceeded, capacity_now, estimate_eta, lease_timeout
from openbrowse.sessions.browser_parts import BrowserLease, BrowserRequest, CdpEndpoint, SlotSource
from openbrowse.sessions.browser_running import RunningBrowser, first_of, remove_profile_base
from openbrowse.sessions.browser_tokens import BrowserTokens, IssuedToken
from openbrowse.sessions.pausing import PauseRecord
from openbrowse.sessions.proxies import put_route_on
from openbrowse.sessions.recordings import browser_recording, finalize_all_leftovers
from openbrowse.sessions.runtime import LiveSlot
from openbrowse.sessions.slot_downloads import collect_downloads, folders_of
from openbrowse.sessions.takeover import TakeoverTokens
from openbrowse.shielding import run_shielded
from openbrowse.store.browsers import BrowserRepo

if TYPE_CHECKING:
    from openbrowse.config import Settings

__all__ = ["BrowserRequest", "BrowserService", "CdpEndpoint"]

logger = logging.getLogger(__name__)


class BrowserService:
    """Creates, lists and stops raw browsers. Enter after the slot pool; close before it."""

    def __init__(
        self,
        browsers: BrowserRepo,
        profiles: ProfileService,
        pool: SlotSource,
        live_url: Callable[[str], str],
        clock: Clock = utc_now,
        files_dir: Path | None = None,
        admission: QueueAdmission | None = None,
        takeovers: TakeoverTokens | None = None,
        takeover_url: Callable[[str, str], str] | None = None,
        settings: Settings | None = None,
    ) -> None:
        """``settings``: what recordings need (spec §22.1); without them no raw browser is recorded."""
        self._settings = settings
        self._disk_quota_mb = settings.SLOT_DISK_MB if settings is not None else DEFAULT_AREA_MB
        self._records_by_default = settings.RECORDING_DEFAULT if settings is not None else False
        self._repo = browsers
        self._profiles = profiles
        self._pool = pool
        self._live_url = live_url
        self._clock = clock
        self._files_dir = files_dir
        self._running: dict[BrowserId, RunningBrowser] = {}
        self._closed = False
        self.tokens = BrowserTokens(clock)
        self.before_end: Callable[[str], Awaitable[None]] | None = None  # the control API detaches here
        self._admission = admission
        self.takeovers = takeovers if takeovers is not None else TakeoverTokens()
        self._takeover_url = takeover_url
        if admission is not None:
            admission.add_source(self.waiting_for_slot)

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def __aenter__(self) -> BrowserService:
        stale = await self._repo.stop_all_active(reason=BrowserStopReason.RESTART, finished_at=self._clock())
        if stale:
            logger.info("Marked %d raw browser(s) of a previous process as stopped", stale)
        if self._files_dir is not None:  # recordings cut short by that process's end
            await asyncio.to_thread(finalize_all_leftovers, self._files_dir)
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
        if tasks := [browser.task for browser in running if browser.task is not None]:
            await run_shielded(asyncio.wait(tasks))

    async def begin_drain(self) -> None:
        """A maintenance drain (spec §21.6): refuse new browsers and end those still waiting for a slot now; live
        ones end at :meth:`aclose`."""
        self._closed = True
        waiting = [browser for browser in self._running.values() if not browser.leased]
        for browser in waiting:
            browser.request_stop(BrowserStopReason.SHUTDOWN)
        if tasks := [browser.task for browser in waiting if browser.task is not None]:
            await run_shielded(asyncio.wait(tasks))

    def live_tasks(self) -> list[asyncio.Task[None]]:
        return [browser.task for browser in self._running.values() if browser.task is not None]

    # -- commands ----------------------------------------------------------------------------------------------
    async def create(self, request: BrowserRequest) -> BrowserRecord:
        """Start a browser and return its live record; with every slot busy, refuse, wait or queue as asked.

        A queued browser's record (``starting``) is returned at once. Cancelling this call before the browser
        is up abandons the browser (and after, stops it): the caller would never learn its id.
        """
        if request.profile_id is not None and not await self._profiles.exists(request.profile_id):
            raise InvalidRequest("Profile not found")
        if self._closed:
            raise BrowserUnavailable("The server is shutting down")
        free = capacity_now(self._pool)
        if not free and not request.capacity.queues and request.capacity.wait_ms == 0:
            raise CapacityExceeded()
        if self._admission is not None:
            self._admission.admit()  # the browser below counts as waiting from here on, with no await between
        browser = RunningBrowser(new_browser_id(), request, queued=not free and request.capacity.queues)
        browser.task = asyncio.get_running_loop().create_task(self._run(browser), name=f"browser-{browser.id}")
        self._running[browser.id] = browser
        browser.task.add_done_callback(lambda _: self._forget(browser))
        try:
            return await asyncio.shield(browser.ready)
        except asyncio.CancelledError:
            if not (browser.queued and browser.ready.done()):
                browser.request_stop(BrowserStopReason.ABANDONED)
            raise

    async def stop(self, browser_id: str) -> BrowserRecord:
        """Stop the browser; answer once its access is cut and its row says stopped, while the slot's teardown
        goes on in the browser's task. Stopping a stopped browser changes nothing."""
        browser = self._running.get(BrowserId(browser_id))
        if browser is not None and browser.task is not None:
            browser.request_stop(BrowserStopReason.REQUESTED)
            await run_shielded(first_of(browser.ended.wait(), browser.task))
        return await self._repo.get(browser_id)

    def ended_signal(self, browser_id: str) -> asyncio.Event | None:
        """Set when the browser's access is cut: open CDP and live-view connections close on it. None once the
        browser is gone (or unknown)."""
        browser = self._running.get(BrowserId(browser_id))
        return browser.ended if browser is not None else None

    def issue_token(self, browser_id: str, ttl_seconds: float) -> IssuedToken | None:
        """A fresh CDP token for a browser that has not ended; None once it has (its tokens are revoked)."""
        browser = self._running.get(BrowserId(browser_id))
        if browser is None or browser.ended.is_set():
            return None
        return self.tokens.issue(browser_id, ttl_seconds)

    async def pause(self, browser_id: str, reason: str | None) -> BrowserRecord:
        """Pause a live browser for a person and open its takeover; pausing a paused browser changes nothing."""
        record = await self._repo.get(browser_id)
        browser = self._running.get(BrowserId(browser_id))
        if browser is None or browser.slot is None or not record.live:
            raise NotPausable("Browser is still waiting for a slot" if record.starting else "Browser is stopped")
        if browser.pause is None:
            browser.paused_for_person(reason, self._clock(), self.takeovers.open(browser_id))
            logger.info("Raw browser %s is paused for a person", browser_id)
        return record

    async def resume(self, browser_id: str, note: str | None) -> BrowserRecord:
        """End a pause: the takeover link stops sending input at once and the idle clock starts again."""
        record = await self._repo.get(browser_id)
        browser = self._running.get(BrowserId(browser_id))
        if browser is None or browser.pause is None:
            raise NotPaused("Browser is not paused")
        self.takeovers.close(browser_id)
        browser.resumed()
        logger.info("Raw browser %s is resumed%s", browser_id, f" ({len(note)}-character note)" if note else "")
        return record

    # -- activity (spec §21.1: CDP clients, control calls and live viewers keep a browser from idling out) -----
    def touch(self, browser_id: str) -> None:
        """A control-API call (or anything else a person or program does to it) used the browser just now."""
        if (browser := self._running.get(BrowserId(browser_id))) is not None:
            browser.activity.touch()

    def cdp_connected(self, browser_id: str) -> None:
        if (browser := self._running.get(BrowserId(browser_id))) is not None:
            browser.activity.cdp_connected()

    def cdp_disconnected(self, browser_id: str) -> None:
        if (browser := self._running.get(BrowserId(browser_id))) is not None:
            browser.activity.cdp_disconnected()

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
        """The live-view path of a live browser (same design as a session's ``liveUrl``)."""
        return self._live_url(record.id) if record.live else None

    def queue(self, record: BrowserRecord) -> BrowserQueue | None:
        """Where a queued browser stands; None once it has started (or ended)."""
        browser = self._running.get(record.id)
        if not record.starting or browser is None or record.queued_at is None or record.queue_expires_at is None:
            return None
        now = self._clock()
        waiting = self._pool.queue_position(browser.owner)
        position = 1 if browser.leased else waiting or self._pool.stats().queued + 1
        ends = [end for other in self._running.values() if (end := other.expected_end(now)) is not None]
        eta = 0 if browser.leased else estimate_eta(position, ends, now, record.queue_expires_at)
        return BrowserQueue(position, eta, QUEUE_REASON_FULL, record.queued_at, record.queue_expires_at)

    def pause_of(self, record: BrowserRecord) -> PauseRecord | None:
        browser = self._running.get(record.id)
        return browser.pause if browser is not None and record.live else None

    def takeover_url(self, record: BrowserRecord) -> str | None:
        """The live view with input enabled for this link alone, while the browser is paused."""
        browser = self._running.get(record.id)
        if browser is None or browser.takeover_token is None or self._takeover_url is None or not record.live:
            return None
        return self._takeover_url(record.id, browser.takeover_token)

    def proxy_bytes(self, record: BrowserRecord) -> int:  # spec §28.1 ``proxyUsedMb``, live or as recorded
        return (
            browser.proxy_bytes if (browser := self._running.get(record.id)) and record.active else record.proxy_bytes
        )

    def live_slot(self, browser_id: str) -> LiveSlot | None:
        """The slot showing this browser while it is up, else None."""
        browser = self._running.get(BrowserId(browser_id))
        return browser.slot if browser is not None else None

    def files_dir(self, browser_id: str) -> Path:
        """Where a raw browser's own files live (screenshots and PDFs of the control API)."""
        assert self._files_dir is not None, "BrowserService was built without a files dir"
        return self._files_dir / browser_id

    async def cdp_endpoint(self, browser_id: str) -> CdpEndpoint:
        """The loopback DevTools endpoint of a live browser. Unknown → 404; queued or stopped → 422."""
        browser = self._running.get(BrowserId(browser_id))
        slot = browser.slot if browser is not None else None
        if slot is None:
            record = await self._repo.get(browser_id)  # BrowserNotFound for an unknown id
            raise InvalidRequest("Browser is still waiting for a slot" if record.starting else "Browser is stopped")
        try:
            ws_url = slot.cdp_ws_url
        except RuntimeError as exc:  # the slot went away (crash, timeout, stop) while the record was active
            raise BrowserUnavailable("The browser is no longer running") from exc
        folders = BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir)
        return CdpEndpoint(ws_url=ws_url, http_url=slot.cdp_url, folders=folders)

    # -- the browser task --------------------------------------------------------------------------------------
    def _forget(self, browser: RunningBrowser) -> None:
        if self._running.get(browser.id) is browser:
            del self._running[browser.id]

    async def _run(self, browser: RunningBrowser) -> None:
        lease: BrowserLease | None = None
        try:
            if browser.queued:
                browser.record = await self._insert(browser)
                browser.ready.set_result(browser.record)
                logger.info("Raw browser %s is queued for a slot", browser.id)
            lease = await self._take_slot(browser)
            if lease is None:
                return
            browser.leased = True
            put_route_on(lease, browser.route)  # spec §28.1: before its browser starts, never direct
            slot = await lease.start_browser(vnc=False, window_size=browser.request.window_size)
            browser.folders = await folders_of(slot, self._files_dir / browser.id if self._files_dir else None)
            browser.profile = await browser.load_profile(self._profiles, self._files_dir, slot)
            record = browser.record = await self._go_live(browser)
            if record.enable_recording and self._settings is not None and self._files_dir is not None:
                browser.recording = await browser_recording(self._settings, self._files_dir / browser.id, slot)
            browser.slot = slot
            browser.activity.touch()  # the idle clock starts when the browser is up
            if not browser.ready.done():
                browser.ready.set_result(record)
            logger.info("Raw browser %s is up until %s at most", browser.id, record.timeout_at.isoformat())
            await browser.live_until_end(slot, record, self._clock())
        except asyncio.CancelledError:
            if not browser.ready.done():
                browser.ready.set_exception(BrowserUnavailable("The browser was stopped before it was up"))
            raise
        except Exception as exc:
            if not browser.ready.done():
                browser.ready.set_exception(exc)
            else:
                browser.reason = BrowserStopReason.FAILED
                logger.exception("Raw browser %s failed", browser.id)
        finally:
            browser.slot = None
            await run_shielded(self._finish(browser, lease, browser.record))

    async def _take_slot(self, browser: RunningBrowser) -> BrowserLease | None:
        """A lease within the browser's capacity bounds; None when a queued browser's wait expired."""
        if not browser.queued:
            try:
                async with asyncio.timeout(lease_timeout(self._pool, browser.request.capacity)):
                    return await self._pool.lease(browser.owner)
            except TimeoutError:
                if not browser.request.capacity.queues:
                    raise CapacityExceeded(browser.request.capacity.wait_ms) from None
            browser.queued = True  # the slot that looked free went to another caller first: queue after all
            browser.record = await self._insert(browser)
            browser.ready.set_result(browser.record)
        expires_at = browser.record.queue_expires_at if browser.record is not None else None
        assert expires_at is not None, "a queued browser has a queue entry"
        try:
            async with asyncio.timeout(max((expires_at - self._clock()).total_seconds(), 0.0)):
                return await self._pool.lease(browser.owner)
        except TimeoutError:
            logger.info("Raw browser %s found no slot before its queue entry expired", browser.id)
            browser.reason = BrowserStopReason.CAPACITY_TIMEOUT
            return None

    async def _insert(self, browser: RunningBrowser) -> BrowserRecord:
        """The browser's row: live at once, or (queued) waiting until ``queue_expires_at``."""
        return await self._repo.insert(browser.new_row(self._clock(), records_by_default=self._records_by_default))

    async def _go_live(self, browser: RunningBrowser) -> BrowserRecord:
        if browser.record is None:
            return await self._insert(browser)
        now = self._clock()
        timeout_at = now + timedelta(minutes=browser.request.timeout_minutes)
        return await self._repo.mark_started(browser.id, started_at=now, timeout_at=timeout_at)

    async def _finish(self, browser: RunningBrowser, lease: BrowserLease | None, record: BrowserRecord | None) -> None:
        self.tokens.revoke(browser.id)
        self.takeovers.forget(browser.id)
        browser.pause = browser.takeover_token = None
        try:
            try:
                if self.before_end is not None:
                    await self.before_end(browser.id)
                recording, browser.recording = browser.recording, None
                if recording is not None:  # final, and so listed, before the stop is answered
                    await recording.finish()
                profile, browser.profile = browser.profile, None
                if profile is not None:
                    await profile.finish()  # before the slot's Chromium stops
                    assert self._files_dir is not None
                    await asyncio.to_thread(remove_profile_base, self._files_dir / browser.id)
                if self._files_dir is not None:  # listed after the end (spec §22.2): out of the slot before it goes
                    await collect_downloads(browser.folders, self._files_dir / browser.id, self._disk_quota_mb)
            finally:
                if record is not None:
                    reason, used, now = browser.reason, browser.proxy_bytes, self._clock()
                    await self._repo.mark_stopped(browser.id, reason=reason, finished_at=now, proxy_bytes=used)
                    logger.info("Raw browser %s stopped (%s)", browser.id, browser.reason)
        finally:
            await browser.forget_proxy()
            browser.ended.set()  # answers the stop and closes the browser's open connections
            if lease is not None:
                await lease.release()
