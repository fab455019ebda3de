"""WorkspaceService: the workspaces API's facade (spec §27.1) and the one place that knows where their files live.

Rows are in the store (both backends, spec §26.1); files are under ``OPENBROWSE_FILES_DIR/workspaces/<id>/``.
Uploads are planned (``upload_files``: declared sizes checked against the limits, one signed URL per file) and
then streamed by the signed PUT into a hidden name beside their target and renamed into place, so a listing never
shows half a file. A file is at most 100 MiB; a workspace at most ``WORKSPACE_MAX_MB``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from openbrowse.agent.files import workspace_tree as disk
from openbrowse.agent.files.workspace_tree import OpenedFile, WorkspaceFile
from openbrowse.config import Settings
from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.workspaces import (
    MAX_FILE_BYTES,
    WorkspaceRecord,
    is_workspace_id,
    new_workspace_id,
    require_path,
    require_prefix,
)
from openbrowse.errors import MalformedRequest, TooLarge, WorkspaceNotFound
from openbrowse.store.workspaces import WorkspaceRepo

__all__ = ["FilesPage", "PlannedUpload", "Usage", "WorkspaceService"]

logger = logging.getLogger(__name__)

MIB = 1024 * 1024
MAX_UPLOAD_FILES = 10
_WRITE_BATCH = 1 << 20
FILE_TOO_LARGE = "A workspace file is at most 100 MiB."


@dataclass(frozen=True, slots=True)
class FilesPage:
    files: list[WorkspaceFile]
    folders: list[str]
    next_cursor: str | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True, slots=True)
class PlannedUpload:
    name: str
    path: str
    size: int


@dataclass(frozen=True, slots=True)
class Usage:
    used_bytes: int
    file_count: int
    limit_bytes: int


def _encode_cursor(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode("utf-8")).decode("ascii").rstrip("=")


def _decode_cursor(cursor: str) -> str:
    try:
        path = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        path = ""
    if not path:
        raise MalformedRequest("The cursor is not one this server issued; pass the nextCursor of a previous page.")
    return path


class WorkspaceService:
    def __init__(self, settings: Settings, repo: WorkspaceRepo, clock: Clock = utc_now) -> None:
        self._repo = repo
        self._root = settings.workspaces_dir
        self.limit_bytes = settings.WORKSPACE_MAX_MB * MIB
        self._clock = clock

    # -- rows --------------------------------------------------------------------------------------------------
    async def create(self, name: str | None) -> WorkspaceRecord:
        now = self._clock()
        record = await self._repo.insert(WorkspaceRecord(new_workspace_id(), name, now, now))
        await asyncio.to_thread(self.root_of(record.id).mkdir, 0o755, True, True)
        return record

    async def get(self, workspace_id: str) -> WorkspaceRecord:
        record = await self._repo.find(workspace_id) if is_workspace_id(workspace_id) else None
        if record is None:
            raise WorkspaceNotFound()
        return record

    async def page(self, page: int, page_size: int) -> tuple[list[WorkspaceRecord], int]:
        return await self._repo.page(page, page_size)

    async def rename(self, workspace_id: str, name: str | None) -> WorkspaceRecord:
        await self.get(workspace_id)
        record = await self._repo.rename(workspace_id, name, self._clock())
        if record is None:
            raise WorkspaceNotFound()
        return record

    async def delete(self, workspace_id: str) -> None:
        await self.get(workspace_id)
        await self._repo.delete(workspace_id)
        await asyncio.to_thread(disk.remove_tree, self.root_of(workspace_id))
        logger.info("Deleted workspace %s and its files", workspace_id)

    def root_of(self, workspace_id: str) -> Path:
        """The folder of a workspace's files (its id was checked by :meth:`get`: a UUID, safe as a name)."""
        return self._root / workspace_id

    async def require_root(self, workspace_id: str) -> Path:
        """The folder of an existing workspace (created when missing); 404 for an unknown id."""
        await self.get(workspace_id)
        root = self.root_of(workspace_id)
        await asyncio.to_thread(root.mkdir, 0o755, True, True)
        return root

    # -- files -------------------------------------------------------------------------------------------------
    async def files(
        self, workspace_id: str, prefix: str | None, limit: int, cursor: str | None, *, shallow: bool = False
    ) -> FilesPage:
        """One page of the files whose path starts with ``prefix``, by path. ``shallow``: only those directly in the
        folder ``prefix`` names, with the names of its sub-folders."""
        root = await self.require_root(workspace_id)
        after = _decode_cursor(cursor) if cursor else None
        if shallow:  # the prefix names a folder
            folder = require_prefix(prefix)
            match = f"{folder}/" if folder else ""
        else:  # S3-like: any path that starts with the prefix, which may end mid-name
            head, _, tail = (prefix or "").rpartition("/")
            folder = require_prefix(head)
            if tail:
                require_path(tail)
            match = f"{folder}/{tail}" if folder else tail

        def collect() -> tuple[list[WorkspaceFile], list[str]]:
            entries = disk.walk(root, folder, recursive=not shallow)
            matching = [entry for entry in entries if entry.path.startswith(match)]
            return matching, disk.subfolders(root, folder) if shallow else []

        entries, folders = await asyncio.to_thread(collect)
        if after is not None:
            entries = [entry for entry in entries if entry.path > after]
        page = entries[:limit]
        next_cursor = _encode_cursor(page[-1].path) if len(entries) > limit else None
        return FilesPage(page, folders, next_cursor)

    async def open_file(self, workspace_id: str, path: str) -> OpenedFile | None:
        require_path(path)
        root = await self.require_root(workspace_id)
        return await asyncio.to_thread(disk.open_file, root, path)

    async def delete_file(self, workspace_id: str, path: str) -> bool:
        require_path(path)
        root = await self.require_root(workspace_id)
        return await asyncio.to_thread(disk.delete_file, root, path)

    async def usage(self, workspace_id: str) -> Usage:
        root = await self.require_root(workspace_id)
        entries = await asyncio.to_thread(disk.walk, root)
        return Usage(sum(entry.size for entry in entries), len(entries), self.limit_bytes)

    # -- uploads -----------------------------------------------------------------------------------------------
    async def plan_uploads(
        self, workspace_id: str, prefix: str | None, files: list[tuple[str, int]]
    ) -> list[PlannedUpload]:
        """Where each ``(name, declared size)`` will land; 413 when the declared sizes break a limit."""
        root = await self.require_root(workspace_id)
        folder = require_prefix(prefix if prefix is not None else "uploads") or "uploads"
        planned = [PlannedUpload(name, require_path(f"{folder}/{name}"), size) for name, size in files]
        if any(item.size > MAX_FILE_BYTES for item in planned):
            raise TooLarge(FILE_TOO_LARGE)

        def room() -> int:
            used = sum(entry.size for entry in disk.walk(root))
            freed = sum(disk.size_of(root, item.path) for item in planned)
            return self.limit_bytes - used + freed

        left = await asyncio.to_thread(room)
        if sum(item.size for item in planned) > left:
            raise TooLarge(self._full_message(left))
        return planned

    def _full_message(self, left: int) -> str:
        return (
            f"The files do not fit: the workspace is capped at {self.limit_bytes // MIB} MiB "
            f"and has {max(left, 0) / MIB:.1f} MiB left."
        )

    async def store_upload(
        self, workspace_id: str, path: str, declared_size: int, chunks: AsyncIterator[bytes]
    ) -> WorkspaceFile:
        """Stream ``chunks`` to ``path`` (replacing a file there); 413 past the declared size, 100 MiB or the room
        the workspace has left, keeping nothing."""
        require_path(path)
        root = await self.require_root(workspace_id)

        def room() -> int:
            return self.limit_bytes - sum(entry.size for entry in disk.walk(root)) + disk.size_of(root, path)

        left = await asyncio.to_thread(room)
        cap = min(declared_size, MAX_FILE_BYTES)
        try:
            pending = await asyncio.to_thread(disk.PendingWrite, root, path)
        except OSError as exc:
            raise MalformedRequest("The path crosses a file where a folder is needed; choose another path.") from exc
        try:
            batch = bytearray()
            async for chunk in chunks:
                total = pending.size + len(batch) + len(chunk)
                if total > cap:
                    raise TooLarge(
                        FILE_TOO_LARGE if total > MAX_FILE_BYTES else "The upload is larger than the size it declared."
                    )
                if total > left:
                    raise TooLarge(self._full_message(left))
                batch += chunk
                if len(batch) >= _WRITE_BATCH:
                    await asyncio.to_thread(pending.write, bytes(batch))
                    batch.clear()
            if batch:
                await asyncio.to_thread(pending.write, bytes(batch))
            written = await asyncio.to_thread(pending.commit)
        except BaseException:
            await asyncio.to_thread(pending.abort)
            raise
        logger.info("Stored a %d-byte file in workspace %s", written.size, workspace_id)
        return WorkspaceFile(path, written.size, written.modified_at)
