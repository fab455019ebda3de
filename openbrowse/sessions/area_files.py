"""Blocking file operations on a file area and a slot's shared folders, never following a link (spec §22.2, §22.3).

A slot's ``uploads/`` and ``downloads/`` are writable from inside its sandbox, so any name there may become a
symbolic link at any moment, and a folder itself may be swapped for one. Every folder is therefore opened with
``O_NOFOLLOW`` and checked to be where it should be, files are opened relative to it with ``O_NOFOLLOW`` and
checked to be regular after the open, and new files are written under a fresh hidden name and renamed into place
(a rename replaces a planted link itself, never what it points to).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from openbrowse.domain.file_listing import FileEntry, is_plain_name
from openbrowse.safe_files import CREATE_FLAGS, DIRECTORY_FLAGS, HiddenWrite, OpenedFile, open_regular

__all__ = [
    "PARTIAL_SUFFIX",
    "OpenedFile",
    "PendingFile",
    "copy_into",
    "list_folder",
    "open_in",
    "share_folder",
    "temp_name",
]

PARTIAL_SUFFIX = ".crdownload"  # Chromium's name for a download still being written
RECORDING_PART_SUFFIX = ".part"  # a recording still being written (sessions/recordings.py)
UNFINISHED_SUFFIXES = (PARTIAL_SUFFIX, RECORDING_PART_SUFFIX)
_DIRECTORY = DIRECTORY_FLAGS
_CREATE = CREATE_FLAGS
_CHUNK = 1 << 20


def temp_name() -> str:
    return f".partial-{secrets.token_hex(8)}"


@contextlib.contextmanager
def _folder(folder: Path, *, create: bool = False) -> Iterator[int | None]:
    """A descriptor of ``folder`` itself (never of a link in its place); None when it does not exist."""
    expected = os.path.join(os.path.realpath(folder.parent), folder.name)
    if create:
        os.makedirs(os.path.dirname(expected), mode=0o755, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(expected, 0o755)
    try:
        fd = os.open(expected, _DIRECTORY)
    except (FileNotFoundError, NotADirectoryError):
        yield None
        return
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: a link in the folder's place
            yield None
            return
        raise
    try:
        yield fd if os.readlink(f"/proc/self/fd/{fd}") == expected else None
    finally:
        os.close(fd)


def list_folder(folder: Path) -> list[FileEntry]:
    """The finished regular files of ``folder`` with plain names (no links, folders or partial downloads)."""
    with _folder(folder) as fd:
        if fd is None:
            return []
        names = set(os.listdir(fd))
        entries = []
        for name in names:
            if not is_plain_name(name) or name.endswith(UNFINISHED_SUFFIXES) or f"{name}{PARTIAL_SUFFIX}" in names:
                continue
            try:
                status = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(status.st_mode):
                entries.append(FileEntry(name, status.st_size, datetime.fromtimestamp(status.st_mtime, UTC)))
        return entries


def open_in(folder: Path, name: str) -> OpenedFile | None:
    """``folder/name`` opened for reading when it is a finished regular file reached without a link; else None.
    Files still being written (``*.part``: a recording, a download) are not served, as they are not listed."""
    if not is_plain_name(name) or name.endswith(UNFINISHED_SUFFIXES):
        return None
    with _folder(folder) as folder_fd:
        return None if folder_fd is None else open_regular(folder_fd, name)


def copy_into(source_fd: int, folder: Path, name: str) -> None:
    """Copy the open file ``source_fd`` (from its start) to ``folder/name``, replacing what is there; readable by
    the sandbox's uid whatever the server's umask."""
    with _folder(folder, create=True) as folder_fd:
        if folder_fd is None:
            raise FileNotFoundError(f"{folder} is not a usable folder")
        temp = temp_name()
        target = os.open(temp, _CREATE, 0o644, dir_fd=folder_fd)
        try:
            try:
                offset = 0
                while chunk := os.pread(source_fd, _CHUNK, offset):
                    os.write(target, chunk)
                    offset += len(chunk)
                os.fchmod(target, 0o644)
            finally:
                os.close(target)
            os.replace(temp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=folder_fd)
            raise


def share_folder(source: Path, target: Path) -> int:
    """Copy every file of ``source`` (a server-side folder) into ``target`` (a slot's folder); how many."""
    copied = 0
    for entry in list_folder(source):
        opened = open_in(source, entry.name)
        if opened is None:
            continue
        try:
            copy_into(opened.fd, target, entry.name)
            copied += 1
        finally:
            opened.close()
    return copied


class PendingFile(HiddenWrite):
    """A file being written under a hidden name in a server-side folder; :meth:`commit` renames it into place,
    :meth:`abort` removes it. Blocking calls: run them in a thread."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        super().__init__(os.open(folder, _DIRECTORY), temp_name(), 0o644)

    def commit(self, name: str) -> FileEntry:
        status = self.finish(name)
        return FileEntry(name, status.st_size, datetime.fromtimestamp(status.st_mtime, UTC))
