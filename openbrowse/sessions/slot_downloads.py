"""A session's downloads: saved by Chromium in the slot's ``downloads/``, kept in the session's file area.

Chromium runs in the slot's sandbox and can write only under the slot's directory, so the agent's browser saves
downloads in the slot's ``downloads/`` (spec §24.6). What users list and the agent reads is the session's
``files/downloads`` (spec §22.2), so the finished files are moved there at the end of every turn and before
the slot is released (the slot's directory is wiped for the next run). Links, folders and partial downloads
are never moved: the sandbox could have put a link to a host file there.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Protocol

from openbrowse.agent.files.confined import FileRefused, move_files
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


async def collect_downloads(folders: BrowserFolders | None, files_dir: Path) -> list[Path]:
    """Move the slot's finished downloads into ``files_dir/downloads``; return where they landed."""
    if folders is None:
        return []
    try:
        moved = await asyncio.to_thread(move_files, folders.downloads, files_dir / DOWNLOADS)
    except (OSError, FileRefused) as exc:
        logger.warning("Could not collect the downloads of %s: %s", files_dir.name, exc)
        return []
    if moved:
        logger.info("Collected %d download(s) into %s", len(moved), files_dir / DOWNLOADS)
    return moved
