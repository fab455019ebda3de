"""browser-use's ``read_file`` of an outside path, confined (spec §24.6).

The stock action reads any path listed in ``available_file_paths`` by name; browser-use lists every download
there, and downloads live in the slot's ``downloads/``, which the sandbox can write: a link put there in place
of a download would make the server read a host file for the model. Here such a path must resolve inside the
session's file area or the slot's folders; the file is opened without following links, copied to a private
folder of the session, read from there by the stock action, and the copy removed. Names of the agent's own
files (no path) go to browser-use's in-memory file system as before: it keeps only a base name, so neither
``..`` nor an absolute path leaves its folder.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult

from openbrowse.agent.files.confined import FileRefused, open_confined, stage_copy
from openbrowse.agent.files.quota import AreaQuota
from openbrowse.upstream.registered_actions import ActionFunction, wrap_action

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

__all__ = ["PRIVATE_COPIES", "install_confined_read"]

PRIVATE_COPIES = ".external"


def _private_copy(path: str, roots: tuple[Path, ...], files_dir: Path, quota: AreaQuota) -> Path:
    with open_confined(path, roots) as fd:
        return stage_copy(fd, files_dir / PRIVATE_COPIES, Path(path).name, quota)


def install_confined_read(tools: Tools[Any], ctx: ToolContext) -> None:
    """Wrap the stock ``read_file`` so an outside path is read only from a confined private copy."""
    folders = ctx.browser_folders
    roots = (ctx.files_dir, *(folders.file_input_roots if folders is not None else ()))

    def confine(original: ActionFunction) -> ActionFunction:
        async def confined_read_file(params: Any, **context: Any) -> ActionResult:
            name = params.file_name
            if name not in (context.get("available_file_paths") or ()):
                result: ActionResult = await original(params=params, **context)
                return result
            try:
                copy = await asyncio.to_thread(_private_copy, name, roots, ctx.files_dir, ctx.file_quota)
            except FileRefused as refusal:
                return ActionResult(error=str(refusal))
            try:
                context["available_file_paths"] = [str(copy)]
                copied = params.model_copy(update={"file_name": str(copy)})
                read: ActionResult = await original(params=copied, **context)
                return read
            finally:
                await asyncio.to_thread(shutil.rmtree, copy.parent, True)

        return confined_read_file

    wrap_action(tools, "read_file", confine)
