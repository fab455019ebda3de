"""Moving bytes between two connected sockets in the kernel (``splice`` through a pipe), off the event loop.

A gate's connection is one dedicated thread per direction, each blocked in ``splice``: the bytes never enter
Python and the event loop never sees them (a CDP screenshot stream is megabytes a second). Either side closing
its half is passed on with ``shutdown(SHUT_WR)``; an error on either side ends both directions.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading

__all__ = ["SocketPair", "pump"]

CHUNK = 1 << 16


class SocketPair:
    """A client and its upstream, closed exactly once; :meth:`abort` may be called from any thread."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.upstream: socket.socket | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.aborted = False

    def attach(self, upstream: socket.socket) -> bool:
        """Keep ``upstream``; False (and it is closed) when the pair was aborted meanwhile."""
        with self._lock:
            if not self._closed and not self.aborted:
                self.upstream = upstream
                return True
        upstream.close()
        return False

    def abort(self) -> None:
        """Wake every thread blocked on either socket (they then end and :meth:`close`)."""
        with self._lock:
            self.aborted = True
            if self._closed:
                return
            for sock in (self.client, self.upstream):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for sock in (self.client, self.upstream):
                if sock is not None:
                    sock.close()


def _copy(source: socket.socket, sink: socket.socket, pair: SocketPair) -> None:
    read_end, write_end = os.pipe2(os.O_CLOEXEC)
    try:
        while True:
            moved = os.splice(source.fileno(), write_end, CHUNK)
            if moved == 0:
                with contextlib.suppress(OSError):
                    sink.shutdown(socket.SHUT_WR)
                return
            while moved:
                moved -= os.splice(read_end, sink.fileno(), moved)
    except OSError:
        pair.abort()
    finally:
        os.close(read_end)
        os.close(write_end)


def pump(pair: SocketPair) -> None:
    """Copy both ways until both directions ended, then close the pair (blocking; in the connection's thread)."""
    assert pair.upstream is not None
    upstream = pair.upstream
    for sock in (pair.client, upstream):
        sock.setblocking(True)
        # a relay must not hold a small CDP message back for an ACK (Nagle against delayed ACKs: 40 ms stalls)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    back = threading.Thread(target=_copy, args=(upstream, pair.client, pair), name="gate-back", daemon=True)
    back.start()
    try:
        _copy(pair.client, upstream, pair)
    finally:
        back.join()
        pair.close()
