"""One raw browser from the moment it was requested until its slot is released (see ``browsers.py``): its
request, row, slot, stop request, pause and what it holds while live."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from datetime import datetime, timedelta
from pathlib import Path

from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.browsers import BrowserRecord, BrowserStatus, BrowserStopReason
from openbrowse.domain.ids import BrowserId
from openbrowse.profiles.service import ProfileService
from openbrowse.profiles.sync import BASE_FILE, ProfileSync
from openbrowse.sessions.browser_lifetime import BrowserActivity, Lifetime, wait_for_end
from openbrowse.sessions.browser_parts import BrowserRequest, BrowserSlot
from openbrowse.sessions.pausing import PauseRecord
from openbrowse.sessions.proxies import ProxyCertificates, browser_route, forget_route
from openbrowse.sessions.recordings import DisplayRecording

logger = logging.getLogger(__name__)


class RunningBrowser:
    """One raw browser from the moment it was requested until its slot is released."""

    def __init__(self, browser_id: BrowserId, request: BrowserRequest, *, queued: bool = False) -> None:
        self.id = browser_id
        self.request = request
        self.queued = queued
        self.owner = f"browser {browser_id}"
        self.ready: asyncio.Future[BrowserRecord] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # never "never retrieved"
        self.record: BrowserRecord | None = None
        self.slot: BrowserSlot | None = None
        self.task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self.reason = BrowserStopReason.REQUESTED
        self.profile: ProfileSync | None = None
        self.leased = False
        self.activity = BrowserActivity()
        self.pause: PauseRecord | None = None
        self.takeover_token: str | None = None
        self.ended = asyncio.Event()  # access cut and row stopped; the slot may still be tearing down
        self.folders: BrowserFolders | None = None  # the slot's uploads/ and downloads/ while it is up
        self.recording: DisplayRecording | None = None  # enableRecording: the display, until the browser ends
        self.route = browser_route(browser_id, request.upstream)  # spec §28.1: its slot's one way out
        self.certificates = ProxyCertificates()

    async def forget_proxy(self) -> None:
        """The browser ended: its proxy's credentials leave the redactor, its certificate override goes."""
        forget_route(self.id)
        await self.certificates.aclose()

    @property
    def proxy_bytes(self) -> int:
        return self.route.bytes if self.route is not None else 0

    def request_stop(self, reason: BrowserStopReason) -> None:
        """Ask the browser to end. Before it is up there is nothing to wait for: the start is cancelled."""
        if not self._stop.is_set():
            self.reason = reason
            self._stop.set()
        if self.slot is None and self.task is not None:
            self.task.cancel()

    async def stop_requested(self) -> None:
        await self._stop.wait()

    def expected_end(self, now: datetime) -> datetime | None:
        """When this live browser ends if nobody uses it (for queue estimates); None before it is live."""
        record, slot = self.record, self.slot
        if record is None or slot is None:
            return None
        if self.activity.cdp_clients or slot.viewers:
            return record.timeout_at
        idle_left = self.activity.last_used + record.idle_timeout_ms / 1000 - time.monotonic()
        return min(record.timeout_at, now + timedelta(seconds=max(idle_left, 0.0)))

    def new_row(self, now: datetime, *, records_by_default: bool) -> BrowserRecord:
        """The browser's row: live at once, or (queued) waiting until ``queue_expires_at``."""
        request = self.request
        queue_seconds = request.capacity.queue_seconds if self.queued else None
        return BrowserRecord(
            id=self.id,
            status=BrowserStatus.ACTIVE,
            timeout_minutes=request.timeout_minutes,
            started_at=now,
            timeout_at=now + timedelta(minutes=request.timeout_minutes),
            profile_id=request.profile_id,
            screen_width=request.screen_width,
            screen_height=request.screen_height,
            metadata=dict(request.metadata),
            idle_timeout_ms=request.idle_timeout_ms,
            queued_at=now if queue_seconds is not None else None,
            queue_expires_at=now + timedelta(seconds=queue_seconds) if queue_seconds is not None else None,
            enable_recording=records_by_default if request.enable_recording is None else request.enable_recording,
            proxy=request.proxy_form,
        )

    def paused_for_person(self, reason: str | None, now: datetime, takeover_token: str) -> None:
        self.pause = PauseRecord("paused", "user", reason, requested_at=now, paused_at=now)
        self.takeover_token = takeover_token
        self.activity.paused = True

    def resumed(self) -> None:
        """The pause ended: its takeover token is void and the idle clock starts again."""
        self.pause = self.takeover_token = None
        self.activity.paused = False
        self.activity.touch()

    async def live_until_end(self, slot: BrowserSlot, record: BrowserRecord, now: datetime) -> None:
        """Wait for a stop request, the idle or age limit, or Chromium dying; keep why it ends."""
        left = (record.timeout_at - now).total_seconds()
        lifetime = Lifetime(idle_seconds=record.idle_timeout_ms / 1000, ends_at=time.monotonic() + left)
        reason = await wait_for_end(
            self.id, lifetime, self.activity, lambda: slot.viewers, self.stop_requested, slot.watch
        )
        if reason is not None:
            self.reason = reason

    async def load_profile(
        self, profiles: ProfileService, files_dir: Path | None, slot: BrowserSlot
    ) -> ProfileSync | None:
        """The profile the browser was asked to start with, loaded into its Chromium (None without one); first, with
        ``ignoreCertErrors``, the browser is set to accept its proxy's certificates."""
        await self.certificates.accept(slot.cdp_ws_url, self.request.upstream)
        profile_id = self.request.profile_id
        if profile_id is None or files_dir is None:
            return None

        async def note(text: str) -> None:
            logger.info("Raw browser %s: %s", self.id, text)

        return await ProfileSync.start(profiles, profile_id, files_dir / self.id, slot.cdp_ws_url, note)


def remove_profile_base(files_dir: Path) -> None:
    """The merged profile's base snapshot is the server's own; the browser's other files stay (spec §22.3)."""
    (files_dir / BASE_FILE).unlink(missing_ok=True)


async def first_of(ended: Awaitable[bool], task: asyncio.Task[None]) -> None:
    """Until ``ended`` or, should the task end without it, the task."""
    waiter = asyncio.ensure_future(ended)
    try:
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
