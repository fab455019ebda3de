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
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO must not hang the open
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20


class OpenedFile:
    """A regular file opened for reading; the descriptor is the caller's to close (:meth:`close`)."""

    def __init__(self, fd: int, status: os.stat_result) -> None:
        self.fd = fd
        self.status = status

    @property
    def proc_path(self) -> str:
        """A path that reopens this very file, whatever has been renamed or linked since."""
        return f"/proc/self/fd/{self.fd}"

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


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
        if folder_fd is None:
            return None
        try:
            fd = os.open(name, _READ, dir_fd=folder_fd)
        except OSError:
            return None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return OpenedFile(fd, status)


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


class PendingFile:
    """A file being written under a hidden name in a server-side folder; :meth:`commit` renames it into place,
    :meth:`abort` removes it. Blocking calls: run them in a thread."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._folder = folder
        self._folder_fd = os.open(folder, _DIRECTORY)
        self._temp = temp_name()
        try:
            self._fd: int | None = os.open(self._temp, _CREATE, 0o644, dir_fd=self._folder_fd)
        except BaseException:
            os.close(self._folder_fd)
            raise
        self.size = 0

    def write(self, data: bytes) -> None:
        assert self._fd is not None, "the file was committed or aborted"
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def commit(self, name: str) -> FileEntry:
        assert self._fd is not None, "the file was committed or aborted"
        fd, self._fd = self._fd, None
        try:
            os.fchmod(fd, 0o644)
            status = os.fstat(fd)
        finally:
            os.close(fd)
        try:
            os.replace(self._temp, name, src_dir_fd=self._folder_fd, dst_dir_fd=self._folder_fd)
        finally:
            os.close(self._folder_fd)
        return FileEntry(name, status.st_size, datetime.fromtimestamp(status.st_mtime, UTC))

    def abort(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(self._temp, dir_fd=self._folder_fd)
        os.close(self._folder_fd)
