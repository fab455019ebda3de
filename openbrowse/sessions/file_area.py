"""The file areas of sessions and raw browsers (spec §22.2, §22.3): listings, uploads, serving and retention.

Each session and raw browser owns ``data/sessions/{id}/`` or ``data/browsers/{id}/`` with ``downloads/``,
``uploads/``, ``recordings/`` and ``screenshots/`` (and ``traces/``). While its browser is up, the browser's own
``downloads/`` and ``uploads/`` are the slot's folders (the only ones its sandbox can reach); downloads are moved
into the file area at each turn's end and when a raw browser stops, and an upload is copied into the live slot at
once and into each new slot when it starts. So a listing shows the file area plus what the live browser has
finished downloading since, and an upload is usable by the agent's ``upload_file``, the control API's file
chooser and a raw CDP client's ``DOM.setFileInputFiles`` alike.

A session's files go with its ``DELETE``; an ended raw browser's after ``ARTIFACT_RETENTION_HOURS``
(:meth:`FileAreas.sweep_expired`, run periodically).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from openbrowse.agent.files.quota import MIB, AreaQuota
from openbrowse.config import Settings
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.file_listing import FileEntry, FilePage, page_of, require_plain_name
from openbrowse.domain.ids import SessionId
from openbrowse.errors import BrowserUnavailable, InvalidRequest
from openbrowse.sessions.area_files import OpenedFile, PendingFile, copy_into, list_folder, open_in
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.manager import SessionManager

__all__ = ["AREAS", "MAX_UPLOAD_BYTES", "RETENTION_SWEEP_S", "FileAreas", "OwnerKind", "UploadTooLarge"]

logger = logging.getLogger(__name__)

OwnerKind = Literal["sessions", "browsers"]
MAX_UPLOAD_BYTES = 100 * 1024 * 1024
RETENTION_SWEEP_S = 600.0  # how often ended raw browsers' files are checked against ARTIFACT_RETENTION_HOURS
AREAS = ("downloads", "uploads", "recordings", "screenshots", "traces")
"""The folders of a file area the files route serves, each under its own name (spec §22.2)."""
_WRITE_BATCH = 1 << 20


class UploadTooLarge(Exception):
    """An upload went past :data:`MAX_UPLOAD_BYTES` or the room left in the file area (the message, one sentence,
    says which); nothing of it is kept."""


class FileAreas:
    """Finds owners, their file areas and their live browsers' folders. One per app."""

    def __init__(
        self, settings: Settings, manager: SessionManager, browsers: BrowserService, clock: Clock = utc_now
    ) -> None:
        self._settings = settings
        self._manager = manager
        self._browsers = browsers
        self._clock = clock

    # -- owners ------------------------------------------------------------------------------------------------
    async def require_owner(self, kind: OwnerKind, owner_id: str) -> Path:
        """The owner's file area; 404 for an unknown session or browser (listed after its end too)."""
        if kind == "sessions":
            record = await self._manager.get(owner_id)
            return self._settings.sessions_dir / record.id
        browser = await self._browsers.get(owner_id)
        return self._browsers.files_dir(browser.id)

    async def live_folders(self, kind: OwnerKind, owner_id: str) -> BrowserFolders | None:
        """The live browser's ``uploads/`` and ``downloads/`` (in its slot), or None while no browser is up."""
        if kind == "sessions":
            worker = self._manager.worker(SessionId(owner_id))
            slot = worker.control_slot() if worker is not None else None
            return BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir) if slot else None
        try:
            return (await self._browsers.cdp_endpoint(owner_id)).folders
        except (InvalidRequest, BrowserUnavailable):
            return None

    # -- listings and files ------------------------------------------------------------------------------------
    async def listing(self, kind: OwnerKind, owner_id: str, area: str, limit: int, cursor: str | None) -> FilePage:
        """One page of the files of ``area``, in name order: the file area's, then (downloads and uploads) the live
        browser's newer ones."""
        root = await self.require_owner(kind, owner_id)
        folders = [root / area, *await self._live_folder(kind, owner_id, area)]

        def collect() -> list[FileEntry]:
            entries: dict[str, FileEntry] = {}
            for folder in folders:
                for entry in list_folder(folder):
                    entries.setdefault(entry.name, entry)
            return list(entries.values())

        return page_of(await asyncio.to_thread(collect), limit, cursor)

    async def _live_folder(self, kind: OwnerKind, owner_id: str, area: str) -> list[Path]:
        """The live browser's own ``downloads/`` or ``uploads/`` for those areas (none for the others)."""
        if area not in {"downloads", "uploads"} or (live := await self.live_folders(kind, owner_id)) is None:
            return []
        return [live.downloads if area == "downloads" else live.uploads]

    async def open_file(self, kind: OwnerKind, owner_id: str, area: str, name: str) -> OpenedFile | None:
        """The named file of ``area`` opened for reading, or None. The caller closes it."""
        require_plain_name(name)
        root = await self.require_owner(kind, owner_id)
        folders = [root / area, *await self._live_folder(kind, owner_id, area)]

        def first_found() -> OpenedFile | None:
            for folder in folders:
                if (opened := open_in(folder, name)) is not None:
                    return opened
            return None

        return await asyncio.to_thread(first_found)

    # -- uploads -----------------------------------------------------------------------------------------------
    async def store_upload(
        self, kind: OwnerKind, owner_id: str, name: str, chunks: AsyncIterator[bytes], max_bytes: int = MAX_UPLOAD_BYTES
    ) -> FileEntry:
        """Stream ``chunks`` into ``uploads/name`` (replacing a file of that name) and into the live browser's
        ``uploads/``; :class:`UploadTooLarge` past ``max_bytes`` or the room the file area has left (``SLOT_DISK_MB``,
        the file it replaces set aside), keeping nothing."""
        require_plain_name(name)
        root = await self.require_owner(kind, owner_id)
        quota = AreaQuota.of(root, self._settings.SLOT_DISK_MB)
        room = await asyncio.to_thread(_room_for, quota, root / "uploads" / name)
        full = (
            f"The upload does not fit: the file area is capped at {quota.limit_mb} MiB "
            f"and has {room / MIB:.1f} MiB left."
        )
        pending = await asyncio.to_thread(PendingFile, root / "uploads")
        try:
            batch = bytearray()
            async for chunk in chunks:
                if pending.size + len(batch) + len(chunk) > max_bytes:
                    raise UploadTooLarge()
                if pending.size + len(batch) + len(chunk) > room:
                    raise UploadTooLarge(full)
                batch += chunk
                if len(batch) >= _WRITE_BATCH:
                    await asyncio.to_thread(pending.write, bytes(batch))
                    batch.clear()
            if batch:
                await asyncio.to_thread(pending.write, bytes(batch))
            entry = await asyncio.to_thread(pending.commit, name)
        except BaseException:
            await asyncio.to_thread(pending.abort)
            raise
        live = await self.live_folders(kind, owner_id)
        if live is not None:
            await asyncio.to_thread(_share_one, root / "uploads", name, live.uploads)
        logger.info("Stored a %d-byte upload for %s %s", entry.size, kind[:-1], owner_id)
        return entry

    # -- retention ---------------------------------------------------------------------------------------------
    async def sweep_expired(self) -> int:
        """Remove the file areas of raw browsers that ended more than ``ARTIFACT_RETENTION_HOURS`` ago; how many."""
        keep = timedelta(hours=self._settings.ARTIFACT_RETENTION_HOURS)
        root = self._settings.browsers_dir  # as the app gives BrowserService
        names = await asyncio.to_thread(_folder_names, root)
        removed = 0
        for name in names:
            record = await self._browsers.find(name)
            if record is None or record.finished_at is None or record.live or record.starting:
                continue
            if _expired(record.finished_at, keep, self._clock()):
                await asyncio.to_thread(shutil.rmtree, root / name, True)
                removed += 1
        if removed:
            logger.info("Removed the files of %d raw browser(s) ended more than %s ago", removed, keep)
        return removed


def _room_for(quota: AreaQuota, replaced: Path) -> int:
    try:
        old = replaced.lstat().st_size if replaced.is_file() and not replaced.is_symlink() else 0
    except OSError:
        old = 0
    return quota.room() + old


def _expired(finished_at: datetime, keep: timedelta, now: datetime) -> bool:
    return finished_at + keep <= now


def _folder_names(root: Path) -> list[str]:
    try:
        return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.is_symlink())
    except FileNotFoundError:
        return []


def _share_one(source: Path, name: str, target: Path) -> None:
    opened = open_in(source, name)
    if opened is None:
        return
    try:
        copy_into(opened.fd, target, name)
    except OSError as exc:
        logger.warning("Could not put upload %s into the live browser's folder: %s", name, exc)
    finally:
        opened.close()
