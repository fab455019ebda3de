"""The agent's file actions on the session's workspace (spec §27.2).

With a workspace attached, ``read_file``, ``write_file`` and ``replace_file`` take a path relative to the
workspace's root (``uploads/people.csv``): reads see what was uploaded or written by any session on it, and
writes land at the same relative path, atomically (a hidden name renamed into place), within
``WORKSPACE_MAX_MB``. Names that are no workspace path, or files the workspace does not have (for a read), go to
the stock actions as before (browser-use's own ``todo.md``, files found by our tools).

The workspace folder is the server's (no sandbox writes into it; downloads are copied in by the server), and every
open still goes through :mod:`~openbrowse.agent.files.workspace_tree`, which never follows a link.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult

from openbrowse.agent.files import workspace_tree as tree
from openbrowse.domain.workspaces import MAX_FILE_BYTES, is_relative_path
from openbrowse.upstream.registered_actions import ActionFunction, wrap_action

if TYPE_CHECKING:
    from browser_use import Tools

    from openbrowse.agent.tools.context import ToolContext

__all__ = ["WORKSPACE_PROMPT", "install_workspace_files"]

logger = logging.getLogger(__name__)

READ_LIMIT = 256 * 1024
"""The most of a file one read shows the model."""
MEMORY_CHARS = 1000
WORKSPACE_PROMPT = (
    "A workspace is attached to this session: read_file, write_file and replace_file take paths relative to it "
    "(for example uploads/data.csv). Files you write there are kept after the session; files uploaded by the user "
    "are under uploads/, the browser's downloads under downloads/."
)


def _text_of(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _read_result(path: str, data: bytes) -> ActionResult:
    text = _text_of(data[:READ_LIMIT])
    cut = "\n[... the rest of the file is not shown]" if len(data) > READ_LIMIT else ""
    memory = text if len(text) <= MEMORY_CHARS else text[:MEMORY_CHARS] + " ..."
    return ActionResult(
        extracted_content=f"Read from file {path}.\n<content>\n{text}{cut}\n</content>",
        long_term_memory=f"Read {path}: {memory}",
        include_extracted_content_only_once=True,
    )


def install_workspace_files(tools: Tools[Any], ctx: ToolContext) -> None:
    """Route the file actions' workspace paths to ``ctx.workspace_dir`` (nothing without a workspace)."""
    root = ctx.workspace_dir
    if root is None:
        return
    limit = ctx.workspace_limit_bytes
    wrap_action(tools, "read_file", lambda original: _reader(original, root))
    wrap_action(tools, "write_file", lambda original: _writer(original, root, limit))
    wrap_action(tools, "replace_file", lambda original: _replacer(original, root, limit))


def _reader(original: ActionFunction, root: Path) -> ActionFunction:
    async def workspace_read_file(params: Any, **context: Any) -> ActionResult:
        path = str(params.file_name).removeprefix("./")
        if is_relative_path(path):
            data = await asyncio.to_thread(tree.read_bytes, root, path, READ_LIMIT + 1)
            if data is not None:
                return _read_result(path, data)
        result: ActionResult = await original(params=params, **context)
        return result

    return workspace_read_file


async def _write(root: Path, path: str, data: bytes, limit: int) -> ActionResult:
    if len(data) > MAX_FILE_BYTES:
        return ActionResult(error=f"{path} was not written: a workspace file is at most 100 MiB.")
    try:
        written = await asyncio.to_thread(tree.write_bytes, root, path, data, limit)
    except tree.NoRoom as refusal:
        return ActionResult(error=str(refusal))
    except OSError as exc:
        logger.info("Workspace write of %s refused: %s", path, exc)
        return ActionResult(error=f"{path} could not be written: a part of the path is a file, not a folder.")
    message = f"Data written to file {path} in the workspace ({written.size} bytes)."
    return ActionResult(extracted_content=message, long_term_memory=message)


def _writer(original: ActionFunction, root: Path, limit: int) -> ActionFunction:
    async def workspace_write_file(params: Any, **context: Any) -> ActionResult:
        path = params.file_name
        if not is_relative_path(path):
            result: ActionResult = await original(params=params, **context)
            return result
        content = str(params.content)
        if getattr(params, "trailing_newline", True):
            content += "\n"
        if getattr(params, "leading_newline", False):
            content = "\n" + content
        data = content.encode("utf-8")
        if getattr(params, "append", False):
            existing = await asyncio.to_thread(tree.read_bytes, root, path, MAX_FILE_BYTES + 1)
            data = (existing or b"") + data
        return await _write(root, path, data, limit)

    return workspace_write_file


def _replacer(original: ActionFunction, root: Path, limit: int) -> ActionFunction:
    async def workspace_replace_file(params: Any, **context: Any) -> ActionResult:
        path = params.file_name
        existing = (
            await asyncio.to_thread(tree.read_bytes, root, path, MAX_FILE_BYTES + 1) if is_relative_path(path) else None
        )
        if existing is None:
            result: ActionResult = await original(params=params, **context)
            return result
        text = _text_of(existing)
        if params.old_str not in text:
            return ActionResult(error=f"The text to replace was not found in {path}.")
        return await _write(root, path, text.replace(params.old_str, params.new_str).encode("utf-8"), limit)

    return workspace_replace_file
