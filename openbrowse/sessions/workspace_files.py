"""A session's workspace during its runs (spec §27.2): where it is, and the browser's downloads copied into it.

The agent's file actions work on the workspace folder directly (``agent/tools/workspace_files.py``). Chromium never
sees it: its downloads land in the slot's ``downloads/`` as for any session, move into the session's file area at
the turn's end (``slot_downloads.collect_downloads``), and from there, a file the server already holds, are copied
into the workspace's ``downloads/`` by an atomic rename, so another session on the workspace sees them once whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from openbrowse.agent.files import workspace_tree as tree
from openbrowse.config import Settings
from openbrowse.domain.sessions import SessionRecord

__all__ = ["copy_downloads", "workspace_limit", "workspace_root"]

logger = logging.getLogger(__name__)

MIB = 1 << 20
DOWNLOADS = "downloads"


def workspace_limit(settings: Settings) -> int:
    return settings.WORKSPACE_MAX_MB * MIB


async def workspace_root(settings: Settings, record: SessionRecord) -> Path | None:
    """The folder of the session's workspace, or None without one (or once the workspace was deleted)."""
    if record.workspace_id is None:
        return None
    root = settings.workspaces_dir / record.workspace_id
    return root if await asyncio.to_thread(root.is_dir) else None


def _copy_all(root: Path, landed: list[Path], limit: int) -> list[str]:
    refused: list[str] = []
    for source in landed:
        try:
            fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            tree.copy_in(root, f"{DOWNLOADS}/{source.name}", fd, limit)
        except tree.NoRoom as refusal:
            refused.append(str(refusal))
        except OSError as exc:
            logger.warning("Could not copy download %s into the workspace: %s", source.name, exc)
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return refused


async def copy_downloads(
    root: Path | None, landed: list[Path], limit: int, note: Callable[[str], Awaitable[None]]
) -> None:
    """Copy the downloads that landed in the session's file area into the workspace's ``downloads/``."""
    if root is None or not landed:
        return
    for refusal in await asyncio.to_thread(_copy_all, root, landed, limit):
        await note(f"The download {refusal}")
