"""``upload_file`` confined to the session's own files (spec §11, §24.6).

browser-use's stock action trusts any absolute path once the browser is remote (ours always is: it is attached
over ``cdp_url``), so a page could ask for ``.env`` or the database. Here the path must name a file of the
session's file area (a managed name such as ``report.csv`` is looked up there, in its ``uploads/`` and
``downloads/`` and in browser-use's file-system folder), of its workspace (``uploads/people.csv``, spec §27.2), or
one of the slot's own ``uploads/``/``downloads/``, with every link resolved. Chromium cannot see the session's file
area, so the file is copied into the slot's ``uploads/`` first and that copy is what the page receives. The stock
action then does the rest (finding the file input near the element, the CDP call).
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult

from openbrowse.agent.files.confined import FileRefused, open_confined, stage_copy
from openbrowse.domain.browser_folders import BrowserFolders, real_path_inside
from openbrowse.upstream.registered_actions import ActionFunction, wrap_action

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

__all__ = ["PRIVATE_ENTRIES", "install_confined_upload", "stage_upload"]

logger = logging.getLogger(__name__)

PRIVATE_ENTRIES = frozenset({"browser-use", "profile_base.json"})
"""Top-level entries of a session's file area that are the server's, not the agent's to hand to a page."""
_PRIVATE_PREFIXES = ("browser-use-", "browser_use_agent_", ".")


def _candidates(
    path: str, files_dir: Path, fs_dir: Path | None, folders: BrowserFolders | None, workspace: Path | None = None
) -> list[Path]:
    if os.path.isabs(path):
        found = [Path(path)]
        if folders is not None and real_path_inside(os.path.dirname(path), (folders.downloads,)):
            found.append(files_dir / "downloads" / os.path.basename(path))  # moved there at the end of a turn
        return found
    places = [files_dir, files_dir / "uploads", files_dir / "downloads"]
    if workspace is not None:  # a workspace path such as uploads/people.csv (spec §27.2)
        places.insert(0, workspace)
    if fs_dir is not None:
        places.append(fs_dir)
    if folders is not None:
        places += [folders.uploads, folders.downloads]
    return [place / path for place in places]


def _is_private(real: str, files_dir: Path) -> bool:
    root = os.path.realpath(files_dir)
    if not real.startswith(root + os.sep):
        return False
    first = real[len(root) + 1 :].split(os.sep, 1)[0]
    return first in PRIVATE_ENTRIES or first.startswith(_PRIVATE_PREFIXES)


def stage_upload(
    path: str, files_dir: Path, folders: BrowserFolders, fs_dir: Path | None = None, workspace: Path | None = None
) -> Path:
    """The copy of the session's file ``path`` in the slot's ``uploads/`` that Chromium can read (blocking).

    Raises :class:`FileRefused` with one sentence for the model when ``path`` is not one of the session's files.
    """
    if not path or "\x00" in path:
        raise FileRefused("Give the name of a file in the session's file area.")
    roots = (files_dir, folders.uploads, folders.downloads, *((workspace,) if workspace is not None else ()))
    for candidate in _candidates(path, files_dir, fs_dir, folders, workspace):
        real = real_path_inside(str(candidate.absolute()), roots)
        if real is None or not os.path.exists(real) or _is_private(real, files_dir):
            continue
        with open_confined(real, roots) as fd:
            if os.fstat(fd).st_size == 0:
                raise FileRefused(f"File {path} is empty (0 bytes).")
            return stage_copy(fd, folders.uploads, os.path.basename(real))
    raise FileRefused(
        f"File {path} is not in this session's files: upload only files saved or downloaded in this session, "
        "uploaded to it, or in its workspace."
    )


def install_confined_upload(tools: Tools[Any], ctx: ToolContext) -> None:
    """Wrap the stock ``upload_file``: confine and stage the path, then let it upload the staged copy."""
    folders = ctx.browser_folders

    def confine(original: ActionFunction) -> ActionFunction:
        async def confined_upload_file(params: Any, **context: Any) -> ActionResult:
            if folders is None:
                return ActionResult(error="Uploading files is not available in this session.")
            file_system = context.get("file_system")
            fs_dir = file_system.get_dir() if file_system is not None else None
            try:
                staged = await asyncio.to_thread(
                    stage_upload, params.path, ctx.files_dir, folders, fs_dir, ctx.workspace_dir
                )
            except FileRefused as refusal:
                logger.info("upload_file refused: %s", refusal)
                return ActionResult(error=str(refusal))
            context["available_file_paths"] = [str(staged)]
            staged_params = params.model_copy(update={"path": str(staged)})
            result: ActionResult = await original(params=staged_params, **context)
            return result

        return confined_upload_file

    wrap_action(tools, "upload_file", confine)
