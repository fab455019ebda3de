"""Copying files across the sandbox line without following a link anywhere else (spec §24.6).

A slot's ``uploads/`` and ``downloads/`` are writable from inside its sandbox (Chromium, the script host), so
anything there may be swapped for a symbolic link at any moment. The server (which may run as root) therefore
never opens a path there by name alone: a file is opened with ``O_NOFOLLOW``, checked to be a regular file, and
the place the open actually reached (``/proc/self/fd``) is checked against the allowed folders; folders are
opened the same way and files created inside them relative to the folder's descriptor with ``O_EXCL``.

What a copy brings into an owner's file area is checked against its :class:`~.quota.AreaQuota` first: the size is
the ``fstat`` of the descriptor actually opened (its apparent size, so a sparse file counts in full), and a file that
does not fit is refused with :class:`OverQuota`, never cut short; no more than that size is ever read, however the
file grows meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openbrowse.agent.files.quota import MIB, AreaQuota
from openbrowse.domain.browser_folders import real_path_inside

__all__ = ["FileRefused", "Moved", "OverQuota", "move_files", "open_confined", "stage_copy"]

logger = logging.getLogger(__name__)

_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO must not hang the open
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20
PARTIAL_SUFFIX = ".crdownload"  # Chromium's name for a download still being written


class FileRefused(Exception):
    """A path that is not an allowed regular file; the message is one sentence for the model or client."""


class OverQuota(FileRefused):
    """A file that does not fit in the room left in an owner's file area; nothing of it was copied."""

    def __init__(self, name: str, size: int, room: int, limit: int) -> None:
        super().__init__(
            f"{name} ({_mib(size)}) was not kept: the file area is capped at {_mib(limit)} and has {_mib(room)} left."
        )
        self.name = name
        self.size = size
        self.room = room
        self.limit = limit


def _mib(size: int) -> str:
    return f"{size / MIB:.1f} MiB"


def _check_room(name: str, size: int, quota: AreaQuota | None, room: int | None = None) -> None:
    """Raise :class:`OverQuota` when ``size`` bytes do not fit (``room``: known already, else measured)."""
    if quota is None:
        return
    room = quota.room() if room is None else room
    if size > room:
        raise OverQuota(name, size, room, quota.limit)


def _opened_path(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@contextlib.contextmanager
def open_confined(path: str | os.PathLike[str], roots: Sequence[Path]) -> Iterator[int]:
    """A read descriptor of the regular file ``path``, which must resolve inside one of ``roots``."""
    shown = os.fspath(path)
    real = real_path_inside(shown, roots)
    if real is None:
        raise FileRefused(f"{shown} is outside the allowed folders.")
    try:
        fd = os.open(real, _READ)
    except OSError as exc:
        raise FileRefused(f"{shown} cannot be opened ({exc.strerror}).") from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{shown} is not a regular file.")
        if real_path_inside(_opened_path(fd), roots) is None:  # a folder on the way was swapped meanwhile
            raise FileRefused(f"{shown} is outside the allowed folders.")
        os.set_blocking(fd, True)
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _open_folder(folder: Path, *, create: bool) -> Iterator[int]:
    """A descriptor of ``folder`` itself (never of a link put in its place), created if asked and missing."""
    expected = os.path.join(os.path.realpath(folder.parent), folder.name)
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(expected, 0o755)
    try:
        fd = os.open(expected, _DIRECTORY)
    except OSError as exc:
        raise FileRefused(f"{folder} is not a usable folder ({exc.strerror}).") from exc
    try:
        if _opened_path(fd) != expected:
            raise FileRefused(f"{folder} is not a usable folder.")
        yield fd
    finally:
        os.close(fd)


def _copy(source: int, folder_fd: int, name: str, size: int) -> None:
    """Copy at most ``size`` bytes (the source's size when it was checked) of ``source`` into ``name``."""
    target = os.open(name, _CREATE, 0o644, dir_fd=folder_fd)
    try:
        left = size
        while left > 0 and (chunk := os.read(source, min(_CHUNK, left))):
            os.write(target, chunk)
            left -= len(chunk)
        os.fchmod(target, 0o644)  # readable by the sandbox's uid whatever the server's umask
    finally:
        os.close(target)


def stage_copy(source: int, folder: Path, name: str, quota: AreaQuota | None = None) -> Path:
    """Copy the open file ``source`` to ``folder/<fresh dir>/<name>`` (the name a page sees); return that path.
    With ``quota`` (the copy lands in an owner's file area) a file that does not fit raises :class:`OverQuota`."""
    if not name or name in {".", ".."} or "/" in name or "\x00" in name:
        raise FileRefused(f"{name!r} is not a plain file name.")
    size = os.fstat(source).st_size
    _check_room(name, size, quota)
    with _open_folder(folder, create=True) as folder_fd:
        token = secrets.token_hex(8)
        os.mkdir(token, 0o755, dir_fd=folder_fd)
        inner = os.open(token, _DIRECTORY, dir_fd=folder_fd)
        try:
            os.fchmod(inner, 0o755)
            _copy(source, inner, name, size)
        finally:
            os.close(inner)
    return folder / token / name


def _free_name(taken: set[str], name: str) -> str:
    if name not in taken:
        return name
    stem, dot, extension = name.rpartition(".")
    if not dot or not stem:
        stem, extension = name, ""
    counter = 1
    while True:
        candidate = f"{stem} ({counter}).{extension}" if extension else f"{stem} ({counter})"
        if candidate not in taken:
            return candidate
        counter += 1


@dataclass(slots=True)
class Moved:
    """What :func:`move_files` did: where files landed, and the files refused for want of room (left in place)."""

    landed: list[Path] = field(default_factory=list)
    refused: list[OverQuota] = field(default_factory=list)


def move_files(source: Path, target: Path, quota: AreaQuota | None = None) -> Moved:
    """Move the finished regular files of ``source`` (not links, folders or partial downloads) into ``target``,
    renaming on a clash as browsers do (``name (1).ext``); with ``quota``, a file with no room left for it is
    refused and left where it is (blocking)."""
    moved = Moved()
    if not os.path.isdir(source):
        return moved
    target.mkdir(parents=True, exist_ok=True)
    room = quota.room() if quota is not None else 0
    with _open_folder(source, create=False) as source_fd, _open_folder(target, create=False) as target_fd:
        taken = set(os.listdir(target_fd))
        for name in sorted(os.listdir(source_fd)):
            if name.startswith(".") or name.endswith(PARTIAL_SUFFIX):
                continue
            if not stat.S_ISREG(os.stat(name, dir_fd=source_fd, follow_symlinks=False).st_mode):
                logger.info("Left %s in %s: not a regular file", name, source)
                continue
            try:
                fd = os.open(name, _READ, dir_fd=source_fd)
            except OSError as exc:
                logger.info("Left %s in %s: %s", name, source, exc.strerror)
                continue
            try:
                found = os.fstat(fd)
                if not stat.S_ISREG(found.st_mode):
                    continue
                try:
                    _check_room(name, found.st_size, quota, room)
                except OverQuota as refused:
                    logger.warning("Left %s in %s: %s", name, source, refused)
                    moved.refused.append(refused)
                    continue
                os.set_blocking(fd, True)
                landed = _free_name(taken, name)
                _copy(fd, target_fd, landed, found.st_size)
                room -= found.st_size
                taken.add(landed)
            finally:
                os.close(fd)
            os.unlink(name, dir_fd=source_fd)
            moved.landed.append(target / landed)
    return moved
