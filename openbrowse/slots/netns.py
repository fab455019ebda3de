"""Reaching a slot's own loopback from the server: TCP sockets made inside the slot's network namespace.

Chromium's DevTools port and websockify listen on ``127.0.0.1`` of the slot's namespace. The server used to reach
them through socat relays and a Unix socket in a directory the slot could write, connecting by path for every new
connection: a script could swap the path for another slot's socket. Instead, the server opens the namespace once,
when the sandbox starts (``/proc/<holder>/ns/net``; the holder is our own child and nothing untrusted has run
yet), keeps that descriptor for the slot's life, and makes every socket it needs *inside* it. A socket keeps the
namespace it was made in, so it is then used from the event loop like any other. There is no path between the
server and the slot's ports any more, and the address is fixed: ``127.0.0.1:<port>`` of that namespace.

Python 3.11 has no ``os.setns``: libc's ``setns(fd, CLONE_NEWNET)`` is called through ctypes, and only ever from a
thread started for that purpose, which ends right after (a pooled thread never changes namespace).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Callable
from typing import TypeVar

from openbrowse.errors import OpenBrowseError

__all__ = ["CLONE_NEWNET", "SlotNetwork", "SlotUnreachable", "enter_namespace"]

CLONE_NEWNET = 0x40000000
CONNECT_TIMEOUT = 5.0

_libc = ctypes.CDLL(None, use_errno=True)
T = TypeVar("T")


class SlotUnreachable(OpenBrowseError):
    """A pinned endpoint inside a slot is gone (the slot ended, or what listened there exited)."""

    code = "slot_unreachable"


def enter_namespace(fd: int) -> None:
    """Move the *calling thread* into the network namespace ``fd``. Only for threads that end right after."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


class SlotNetwork:
    """The network namespace of one running sandbox; :meth:`open` it (blocking), :meth:`close` it at teardown."""

    def __init__(self, name: str, fd: int) -> None:
        self.name = name
        self._fd: int | None = fd
        self._lock = threading.Lock()

    @classmethod
    def open(cls, name: str, holder_pid: int, holder_alive: Callable[[], bool]) -> SlotNetwork:
        """The namespace of ``holder_pid``. ``holder_alive`` is asked after the open: while our child (bubblewrap)
        lives, its pid namespace's first process (the holder) has not been replaced by another."""
        fd = os.open(f"/proc/{holder_pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_ino == os.stat("/proc/self/ns/net").st_ino:
                raise OSError(f"{name}: the holder shares the server's network namespace")
            if not holder_alive():
                raise OSError(f"{name}: the sandbox ended while its namespace was being opened")
        except BaseException:
            os.close(fd)
            raise
        return cls(name, fd)

    @property
    def closed(self) -> bool:
        return self._fd is None

    def enter(self) -> None:
        """Move the calling thread into the namespace (see :func:`enter_namespace`)."""
        with self._lock:
            if self._fd is None:
                raise SlotUnreachable(f"{self.name} has ended")
            enter_namespace(self._fd)

    def connect_here(self, port: int, timeout: float = CONNECT_TIMEOUT) -> socket.socket:
        """Enter the namespace and connect to ``127.0.0.1:port`` there (blocking; for a dedicated thread only)."""
        self.enter()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(("127.0.0.1", port))
            sock.settimeout(None)
        except OSError as exc:
            sock.close()
            raise SlotUnreachable(f"nothing answers on port {port} inside {self.name} ({exc})") from exc
        return sock

    async def connect(self, port: int) -> socket.socket:
        """A socket connected to ``127.0.0.1:port`` inside the namespace (made by a dedicated thread)."""
        return await _in_dedicated_thread(lambda: self.connect_here(port), f"{self.name}-connect")

    async def open_connection(
        self, port: int, *, limit: int = 2**16
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """asyncio streams over :meth:`connect`."""
        sock = await self.connect(port)
        try:
            return await asyncio.open_connection(sock=sock, limit=limit)
        except BaseException:
            sock.close()
            raise

    def close(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


async def _in_dedicated_thread(work: Callable[[], T], name: str) -> T:
    """Run ``work`` in a new thread that ends with it (it may change namespace); await its result."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def fail(error: BaseException) -> None:
        if not done.done():
            done.set_exception(error)

    def succeed(result: T) -> None:
        if not done.done():
            done.set_result(result)
        elif isinstance(result, socket.socket):  # the caller went away: nobody else will close it
            result.close()

    def run() -> None:
        try:
            result = work()
        except BaseException as exc:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(fail, exc)
            return
        try:
            loop.call_soon_threadsafe(succeed, result)
        except RuntimeError:
            if isinstance(result, socket.socket):
                result.close()

    threading.Thread(target=run, name=name, daemon=True).start()
    return await done
