"""Blocking file operations inside one workspace's folder, never following a link (spec §27.1).

A session's sandbox may write into its workspace (spec §27.2), so any name in it may be a symbolic link. Every
folder on a path is opened relative to its parent with ``O_NOFOLLOW | O_DIRECTORY``, every file with
``O_NOFOLLOW`` and checked to be regular after the open. New files are written under a hidden name in their target
folder and renamed into place, so a listing (which skips hidden names) never shows half a file, and a reader
never sees one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from openbrowse.domain.file_listing import is_plain_name
from openbrowse.safe_files import DIRECTORY_FLAGS, HiddenWrite, OpenedFile, open_regular

__all__ = [
    "NoRoom",
    "OpenedFile",
    "PendingWrite",
    "WorkspaceFile",
    "copy_in",
    "delete_file",
    "open_file",
    "read_bytes",
    "remove_tree",
    "size_of",
    "subfolders",
    "used_bytes",
    "walk",
    "write_bytes",
]

_DIRECTORY = DIRECTORY_FLAGS
FOLDER_MODE = 0o755
FILE_MODE = 0o644
UNFINISHED_SUFFIXES = (".crdownload", ".part")  # a download or a recording still being written


@dataclass(frozen=True, slots=True)
class WorkspaceFile:
    path: str
    size: int
    modified_at: datetime


@contextlib.contextmanager
def _opened_folder(root: Path, parts: list[str], *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of ``root/parts…`` reached without a link (None when a part is missing or is not a folder)."""
    if create:
        root.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    try:
        fd = os.open(root, _DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    try:
        for part in parts:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, FOLDER_MODE, dir_fd=fd)
            try:
                child = os.open(part, _DIRECTORY, dir_fd=fd)
            except OSError:
                yield None
                return
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _finished(name: str) -> bool:
    return is_plain_name(name) and not name.endswith(UNFINISHED_SUFFIXES)


def _walk_fd(fd: int, prefix: str, out: list[WorkspaceFile], recursive: bool) -> None:
    for name in sorted(os.listdir(fd)):
        if not _finished(name):
            continue
        try:
            status = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        path = f"{prefix}{name}"
        if stat.S_ISREG(status.st_mode):
            out.append(WorkspaceFile(path, status.st_size, datetime.fromtimestamp(status.st_mtime, UTC)))
        elif stat.S_ISDIR(status.st_mode) and recursive:
            try:
                child = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError:
                continue
            try:
                _walk_fd(child, f"{path}/", out, recursive)
            finally:
                os.close(child)


def walk(root: Path, folder: str = "", *, recursive: bool = True) -> list[WorkspaceFile]:
    """The finished regular files under ``folder`` ('' for all), by path, with paths relative to ``root``."""
    parts = folder.split("/") if folder else []
    out: list[WorkspaceFile] = []
    with _opened_folder(root, parts) as fd:
        if fd is not None:
            _walk_fd(fd, f"{folder}/" if folder else "", out, recursive)
    out.sort(key=lambda entry: entry.path)
    return out


def subfolders(root: Path, folder: str) -> list[str]:
    """The names of the folders directly in ``folder`` (no links)."""
    with _opened_folder(root, folder.split("/") if folder else []) as fd:
        if fd is None:
            return []
        names = []
        for name in sorted(os.listdir(fd)):
            with contextlib.suppress(OSError):
                if _finished(name) and stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                    names.append(name)
        return names


def _split(path: str) -> tuple[list[str], str]:
    *parents, name = path.split("/")
    return parents, name


def open_file(root: Path, path: str) -> OpenedFile | None:
    """``root/path`` opened for reading when it is a finished regular file reached without a link; else None."""
    parents, name = _split(path)
    if not _finished(name):
        return None
    with _opened_folder(root, parents) as folder:
        return None if folder is None else open_regular(folder, name)


def size_of(root: Path, path: str) -> int:
    """The size of the regular file at ``path`` (0 when there is none): what a replacement of it frees."""
    opened = open_file(root, path)
    if opened is None:
        return 0
    try:
        return opened.status.st_size
    finally:
        opened.close()


def delete_file(root: Path, path: str) -> bool:
    parents, name = _split(path)
    with _opened_folder(root, parents) as folder:
        if folder is None:
            return False
        try:
            if stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                return False
            os.unlink(name, dir_fd=folder)
        except OSError:
            return False
        return True


def remove_tree(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)  # rmtree never follows links (it unlinks them)


class PendingWrite(HiddenWrite):
    """A file being written under a hidden name in its target folder; :meth:`commit` renames it to its path (an
    atomic replace), :meth:`abort` removes it. Blocking calls: run them in a thread."""

    def __init__(self, root: Path, path: str) -> None:
        parents, self._name = _split(path)
        with _opened_folder(root, parents, create=True) as folder:
            if folder is None:
                raise NotADirectoryError(f"{path} cannot be written: a part of it is not a folder")
            folder_fd = os.dup(folder)
        super().__init__(folder_fd, f".partial-{secrets.token_hex(8)}", FILE_MODE)

    def commit(self) -> WorkspaceFile:
        status = self.finish(self._name, sync=True)
        return WorkspaceFile(self._name, status.st_size, datetime.fromtimestamp(status.st_mtime, UTC))


def used_bytes(root: Path) -> int:
    return sum(entry.size for entry in walk(root))


def read_bytes(root: Path, path: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the file at ``path`` (None when there is none)."""
    opened = open_file(root, path)
    if opened is None:
        return None
    try:
        return os.pread(opened.fd, limit, 0)
    finally:
        opened.close()


def write_bytes(root: Path, path: str, data: bytes, limit_bytes: int) -> WorkspaceFile:
    """Write ``data`` to ``path`` atomically (replacing a file there); :class:`NoRoom` when the workspace would
    go over ``limit_bytes`` with it."""
    room = limit_bytes - used_bytes(root) + size_of(root, path)
    if len(data) > room:
        raise NoRoom(f"{path} was not written: the workspace has {max(room, 0) / (1 << 20):.1f} MiB left.")
    pending = PendingWrite(root, path)
    try:
        pending.write(data)
        written = pending.commit()
    except BaseException:
        pending.abort()
        raise
    return WorkspaceFile(path, written.size, written.modified_at)


class NoRoom(Exception):
    """A write that would take a workspace over its limit; the message is one sentence, nothing was written."""


def copy_in(root: Path, path: str, source_fd: int, limit_bytes: int) -> WorkspaceFile:
    """Copy the open file ``source_fd`` (from its start, its size as ``fstat`` says) to ``path`` atomically;
    :class:`NoRoom` when the workspace would go over ``limit_bytes`` with it."""
    size = os.fstat(source_fd).st_size
    room = limit_bytes - used_bytes(root) + size_of(root, path)
    if size > room:
        raise NoRoom(f"{path} was not kept: the workspace has {max(room, 0) / (1 << 20):.1f} MiB left.")
    pending = PendingWrite(root, path)
    try:
        offset = 0
        while offset < size and (chunk := os.pread(source_fd, min(1 << 20, size - offset), offset)):
            pending.write(chunk)
            offset += len(chunk)
        written = pending.commit()
    except BaseException:
        pending.abort()
        raise
    return WorkspaceFile(path, written.size, written.modified_at)
