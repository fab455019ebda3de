"""Opening and writing files inside a folder that someone else may write too, never following a link.

A slot's shared folders (spec §22.2) and a workspace (spec §27.2) can be written from inside a sandbox, so any name
in them may become a symbolic link at any moment. The file areas (``sessions/area_files.py``) and the workspace
tree (``agent/files/workspace_tree.py``) both build on what is here: folders opened with ``O_NOFOLLOW |
O_DIRECTORY``, files opened relative to them with ``O_NOFOLLOW`` and checked to be regular after the open, and new
files written under a hidden name and renamed into place (a rename replaces a planted link itself, never what it
points to), so no reader ever sees half a file.
"""

from __future__ import annotations

import contextlib
import os
import stat

DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # NONBLOCK: a FIFO must not hang the open
CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


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


def open_regular(folder_fd: int, name: str) -> OpenedFile | None:
    """``name`` in the open folder, opened for reading when it is a regular file reached without a link; else
    None."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=folder_fd)
    except OSError:
        return None
    status = os.fstat(fd)
    if not stat.S_ISREG(status.st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return OpenedFile(fd, status)


class HiddenWrite:
    """A file being written under the hidden name ``temp`` in an open folder, which this object owns from then on
    (``folder_fd`` is closed by :meth:`finish` or :meth:`abort`). Blocking calls: run them in a thread."""

    def __init__(self, folder_fd: int, temp: str, mode: int) -> None:
        self._folder = folder_fd
        self._temp = temp
        self._mode = mode
        try:
            self._fd: int | None = os.open(temp, CREATE_FLAGS, mode, dir_fd=folder_fd)
        except BaseException:
            os.close(folder_fd)
            raise
        self.size = 0

    def write(self, data: bytes) -> None:
        assert self._fd is not None, "the file was committed or aborted"
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self.size += len(data)

    def finish(self, name: str, *, sync: bool = False) -> os.stat_result:
        """Rename the file to ``name`` in its folder (an atomic replace); return its status."""
        assert self._fd is not None, "the file was committed or aborted"
        fd, self._fd = self._fd, None
        try:
            os.fchmod(fd, self._mode)  # whatever the server's umask
            if sync:
                os.fsync(fd)
            status = os.fstat(fd)
        finally:
            os.close(fd)
        try:
            os.replace(self._temp, name, src_dir_fd=self._folder, dst_dir_fd=self._folder)
        finally:
            os.close(self._folder)
        return status

    def abort(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(self._temp, dir_fd=self._folder)
        os.close(self._folder)
