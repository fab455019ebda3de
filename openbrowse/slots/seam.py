"""The seam directory of a sandboxed slot: where the server puts what a slot may use but never change (issue 31).

The server creates every file a slot reads from it here, and the sandbox sees the directory read-only: the egress
enforcer's socket, websockify's token file, and the ``passwd``/``group`` files bubblewrap binds onto ``/etc``.
Nothing a slot can write is ever opened, chmodded or chowned by the server by path; this directory is why.

* It lives under ``/run/openbrowse/<instance>/<index>`` (``/run`` is root's; a sandboxed server runs as root), each
  level created and then opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the one above and checked to be ours
  and writable by nobody else, so a planted link or a stranger's directory is refused, never followed.
* The slot's own directory is ``root:<slot gid>``, mode ``0750``, set on its descriptor: the slot's processes may
  look in and ``connect()`` to the socket (a read-only bind does not stop a connect), other slots and local users
  may not even traverse it.
* Files are created through the directory's descriptor (``openat``) with ``O_NOFOLLOW | O_NONBLOCK``, their modes
  set with ``fchmod``/``fchown`` on the open file; a socket's through an ``O_PATH`` descriptor of its inode.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path

from openbrowse.slots.ledger import instance_id

__all__ = ["SEAM_ROOT", "SeamDir", "seam_dir"]

SEAM_ROOT = Path("/run/openbrowse")
_MAX_SOCKET_PATH = 107  # sun_path holds 108 bytes with the terminating NUL
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def seam_dir(run_dir: Path, index: int) -> Path:
    """The seam directory of slot ``index`` of the instance that owns ``run_dir`` (short: sockets live there)."""
    return SEAM_ROOT / instance_id(run_dir) / str(index)


def _open_checked(parent_fd: int | None, name: str, *, create_mode: int = 0o755) -> int:
    """Open (creating it first if missing) the directory ``name`` below ``parent_fd``, refusing anything that is not
    a directory of this uid writable by nobody else."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, create_mode, dir_fd=parent_fd)
    fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    info = os.fstat(fd)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        os.close(fd)
        raise PermissionError(f"{name} is not a directory of this user that only it may write; refusing it")
    return fd


class SeamDir:
    """One slot's seam directory. :meth:`open` (blocking) before use, :meth:`close` (blocking) after."""

    def __init__(self, path: Path, gid: int) -> None:
        self.path = path
        self.gid = gid
        self._fd: int | None = None

    @property
    def fd(self) -> int:
        if self._fd is None:
            raise RuntimeError(f"the seam directory {self.path} is not open")
        return self._fd

    def socket_path(self, name: str) -> Path:
        path = self.path / name
        if len(str(path).encode()) > _MAX_SOCKET_PATH:
            raise ValueError(f"{path} is too long for a Unix socket")
        return path

    def open(self) -> None:
        """Create the chain of directories (checked at each level), give the last one to ``root:<gid>`` 0750 and
        empty it of what an earlier run left."""
        if self._fd is not None:
            return
        parts = self.path.parts
        fd = os.open("/", _DIR_FLAGS)
        try:
            for name in parts[1:-1]:
                below = _open_checked(fd, name)
                os.close(fd)
                fd = below
            leaf = _open_checked(fd, parts[-1], create_mode=0o700)
        finally:
            os.close(fd)
        try:
            os.fchown(leaf, os.geteuid(), self.gid)
            os.fchmod(leaf, 0o750)
            for entry in os.listdir(leaf):
                _remove(leaf, entry)
        except BaseException:
            os.close(leaf)
            raise
        self._fd = leaf

    def write_file(self, name: str, data: bytes, *, mode: int, group: bool = False) -> Path:
        """Write ``name`` afresh (``mode``; owned by root, by the slot's group when ``group``); return its path."""
        self.unlink(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(name, flags, 0o600, dir_fd=self.fd)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{self.path / name} is not a regular file")
            os.fchown(fd, os.geteuid(), self.gid if group else os.getegid())
            os.fchmod(fd, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return self.path / name

    def bind_socket(self, name: str) -> socket.socket:
        """A Unix stream socket bound at ``name`` (not yet listening), ``root:<gid>`` 0660: the slot may connect."""
        path = self.socket_path(name)
        self.unlink(name)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(path))  # the directory is root's alone: nobody can have put anything in the way
            handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
            try:
                if not stat.S_ISSOCK(os.fstat(handle).st_mode):
                    raise OSError(f"{path} is not the socket just bound")
                # chmod/chown of /proc/self/fd/N act on the inode the descriptor holds, not on a path
                os.chown(f"/proc/self/fd/{handle}", os.geteuid(), self.gid)
                os.chmod(f"/proc/self/fd/{handle}", 0o660)
            finally:
                os.close(handle)
        except BaseException:
            sock.close()
            raise
        return sock

    def unlink(self, name: str) -> None:
        """Remove ``name`` if it is there (nothing once the directory is closed: it went with it)."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            _remove(self._fd, name)

    def close(self) -> None:
        """Empty and remove the directory (blocking; idempotent)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            for entry in os.listdir(fd):
                _remove(fd, entry)
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.rmdir(self.path)


def _remove(dir_fd: int, name: str) -> None:
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        sub = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            for entry in os.listdir(sub):
                _remove(sub, entry)
        finally:
            os.close(sub)
        os.rmdir(name, dir_fd=dir_fd)
    else:
        os.unlink(name, dir_fd=dir_fd)
