"""A session's downloads: saved by Chromium in the slot's ``downloads/``, kept in the session's file area.

Chromium runs in the slot's sandbox and can write only under the slot's directory, so the agent's browser saves
downloads in the slot's ``downloads/`` (spec §24.6). What users list and the agent reads is the session's
``files/downloads`` (spec §22.2), so the finished files are moved there at the end of every turn and before
the slot is released (the slot's directory is wiped for the next run). Links, folders and partial downloads
are never moved: the sandbox could have put a link to a host file there. A download with no room left for it in
the file area (``SLOT_DISK_MB``, apparent sizes: a sparse file counts in full) is not kept, and the owner is told
which and why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from openbrowse.agent.files.confined import FileRefused, move_files
from openbrowse.agent.files.quota import AreaQuota
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.sessions.area_files import share_folder

__all__ = ["DOWNLOADS", "UPLOADS", "collect_downloads", "folders_of"]

logger = logging.getLogger(__name__)

DOWNLOADS = "downloads"
UPLOADS = "uploads"


class FolderSlot(Protocol):
    @property
    def uploads_dir(self) -> Path: ...

    @property
    def downloads_dir(self) -> Path: ...


async def folders_of(slot: FolderSlot, files_dir: Path | None = None) -> BrowserFolders:
    """The slot's ``uploads/`` and ``downloads/``, created if missing; with ``files_dir``, the files uploaded to
    that file area are copied into the slot's ``uploads/``, where the browser can reach them (spec §22.2)."""
    folders = await asyncio.to_thread(BrowserFolders(uploads=slot.uploads_dir, downloads=slot.downloads_dir).ensure)
    if files_dir is not None:
        try:
            await asyncio.to_thread(share_folder, files_dir / UPLOADS, folders.uploads)
        except OSError as exc:
            logger.warning("Could not share the uploads of %s with its browser: %s", files_dir.name, exc)
    return folders


Note = Callable[[str], Awaitable[None]]
"""Tells the owner (a session's feed) one sentence about a download that was not kept."""


async def collect_downloads(
    folders: BrowserFolders | None, files_dir: Path, quota_mb: int, note: Note | None = None
) -> list[Path]:
    """Move the slot's finished downloads into ``files_dir/downloads`` while the file area has room for them
    (``quota_mb``); ``note`` hears of each one refused. Return where they landed."""
    if folders is None:
        return []
    quota = AreaQuota.of(files_dir, quota_mb)
    try:
        moved = await asyncio.to_thread(move_files, folders.downloads, files_dir / DOWNLOADS, quota)
    except (OSError, FileRefused) as exc:
        logger.warning("Could not collect the downloads of %s: %s", files_dir.name, exc)
        return []
    for refused in moved.refused:
        text = f"The download {refused}"
        logger.warning("%s: %s", files_dir.name, text)
        if note is not None:
            await note(text)
    if moved.landed:
        logger.info("Collected %d download(s) into %s", len(moved.landed), files_dir / DOWNLOADS)
    return moved.landed
