"""The host-side door to a port inside a slot: a loopback listener that only the server's own uid may use.

Browser-use's CDP client, Playwright's Node driver and the API's WebSocket bridges need a ``ws://`` URL over TCP,
so a sandboxed slot's DevTools and websockify ports still appear on the host loopback (``layout.py``). They used to
be socat forwarders that answered any local user. A :class:`LoopbackGate` is ours, in this process:

* each accepted connection first takes its descriptors from the process's budget (:mod:`openbrowse.network.
  fd_budget`); over budget it is closed at once;
* then, in a thread of its own, the kernel is asked who owns the client socket (:mod:`.tcp_peer`); anyone but
  the server's uid is disconnected without a byte;
* a ``screen`` may look at the first request head (the CDP gate answers ``/json/version`` itself from the
  document pinned at the start, and forwards only WebSocket upgrades to ``/devtools/``);
* the thread then enters the slot's network namespace, connects to ``127.0.0.1:<port>`` there (pinned: no path,
  no rediscovery), and the bytes flow through ``splice`` (:mod:`.splice_pump`), never through the event loop.

Only ``accept`` runs on the loop. :meth:`LoopbackGate.aclose` wakes and joins every connection's threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from openbrowse.network.fd_budget import FD_BUDGET, GATE_FDS, FdBudget
from openbrowse.slots.netns import SlotNetwork, SlotUnreachable
from openbrowse.slots.splice_pump import SocketPair, pump
from openbrowse.slots.tcp_peer import loopback_peer_uid

__all__ = ["GATE_FDS", "HeadVerdict", "LoopbackGate"]

logger = logging.getLogger(__name__)

HEAD_TIMEOUT = 10.0
MAX_HEAD = 16 * 1024
MAX_ONE_SHOT_BODY = 8 * 1024 * 1024
JOIN_TIMEOUT = 8.0
ACCEPTS_PER_WAKEUP = 64
ACCEPT_RETRY_DELAY = 1.0


@dataclass(frozen=True, slots=True)
class HeadVerdict:
    """A screen's answer to a request head: ``reply`` is sent and the connection closed; else ``forward`` goes
    upstream (the head itself, usually). ``one_shot``: upstream answers that one request (with a
    ``Content-Length``), the answer is passed on and the connection closed, so no second request on it is heard."""

    forward: bytes = b""
    reply: bytes | None = None
    one_shot: bool = False


HeadScreen = Callable[[bytes], HeadVerdict]


def _read_head(sock: socket.socket) -> bytes | None:
    sock.settimeout(HEAD_TIMEOUT)
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > MAX_HEAD:
            return None
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


class LoopbackGate:
    """``127.0.0.1:<port>`` on the host → ``127.0.0.1:<port>`` in ``network``, for ``allowed_uids`` only."""

    def __init__(
        self,
        name: str,
        port: int,
        network: SlotNetwork,
        *,
        screen: HeadScreen | None = None,
        allowed_uids: frozenset[int] | None = None,
        budget: FdBudget = FD_BUDGET,
    ) -> None:
        self.name = name
        self.port = port
        self.network = network
        self.screen = screen
        self.allowed_uids = allowed_uids if allowed_uids is not None else frozenset({os.geteuid()})
        self.budget = budget
        self._listener: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pairs: set[SocketPair] = set()
        self._threads: set[threading.Thread] = set()
        self._lock = threading.Lock()
        self._closed = False
        self.refused_peers = 0

    def open(self) -> None:
        """Listen (on the running loop; the bind is immediate). Raises ``OSError`` when the port is taken."""
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", self.port))
            listener.listen(128)
            listener.setblocking(False)
        except BaseException:
            listener.close()
            raise
        self._loop = asyncio.get_running_loop()
        self._listener = listener
        self._loop.add_reader(listener.fileno(), self._accept)

    # -- on the loop ----------------------------------------------------------------------------------------
    def _accept(self) -> None:
        listener = self._listener
        if listener is None:
            return
        for _ in range(ACCEPTS_PER_WAKEUP):
            try:
                client, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    # the backlog stays readable: pause accepting for a moment instead of spinning (as asyncio does)
                    logger.warning("%s could not accept: %s", self.name, exc)
                    self._pause_accepting()
                return
            if self._closed or not self.budget.try_acquire(GATE_FDS, self.name):
                client.close()
                continue
            pair = SocketPair(client)
            thread = threading.Thread(target=self._serve, args=(pair,), name=f"{self.name}-conn", daemon=True)
            with self._lock:
                self._pairs.add(pair)
                self._threads.add(thread)
            try:
                thread.start()
            except RuntimeError:  # no thread to be had: this connection is refused like one over budget
                with self._lock:
                    self._pairs.discard(pair)
                    self._threads.discard(thread)
                pair.close()
                self.budget.release(GATE_FDS)

    def _pause_accepting(self) -> None:
        listener, loop = self._listener, self._loop
        if listener is None or loop is None:
            return
        loop.remove_reader(listener.fileno())

        def resume() -> None:
            if self._listener is listener and not self._closed:
                loop.add_reader(listener.fileno(), self._accept)

        loop.call_later(ACCEPT_RETRY_DELAY, resume)

    # -- in the connection's own thread ---------------------------------------------------------------------
    def _serve(self, pair: SocketPair) -> None:
        try:
            self._serve_pair(pair)
        except OSError as exc:
            logger.debug("%s connection ended: %r", self.name, exc)
        except Exception:
            logger.exception("%s connection failed", self.name)
        finally:
            pair.close()
            self.budget.release(GATE_FDS)
            with self._lock:
                self._pairs.discard(pair)
                self._threads.discard(threading.current_thread())

    def _serve_pair(self, pair: SocketPair) -> None:
        uid = loopback_peer_uid(pair.client)  # before entering the slot's namespace: the table asked is the host's
        if uid not in self.allowed_uids:
            self.refused_peers += 1
            if self.refused_peers == 1 or self.refused_peers % 100 == 0:  # a stranger's flood must not flood the log
                logger.warning(
                    "%s refused a connection from uid %s (only the server's own uid may connect; %d refused)",
                    self.name,
                    uid,
                    self.refused_peers,
                )
            return
        forward = b""
        one_shot = False
        if self.screen is not None:
            head = _read_head(pair.client)
            if head is None:
                return
            verdict = self.screen(head)
            if verdict.reply is not None:
                pair.client.sendall(verdict.reply)
                with contextlib.suppress(OSError):
                    pair.client.shutdown(socket.SHUT_WR)
                return
            forward, one_shot = verdict.forward, verdict.one_shot
        try:
            upstream = self.network.connect_here(self.port)  # this thread stays in the slot's namespace and ends
        except SlotUnreachable as exc:
            logger.info("%s: %s", self.name, exc)
            if self.screen is not None:
                pair.client.sendall(_UNAVAILABLE)
            return
        if not pair.attach(upstream):
            return
        if forward:
            upstream.sendall(forward)
        if one_shot:
            try:
                answer = _one_answer(upstream)
            except OSError:  # accepted by a listener on its way out, then reset
                answer = _UNAVAILABLE
            pair.client.sendall(answer)
            return
        pump(pair)

    # -- teardown -------------------------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Stop accepting, end every connection and wait for its threads (idempotent)."""
        self._closed = True
        listener, self._listener = self._listener, None
        if listener is not None:
            if self._loop is not None:
                self._loop.remove_reader(listener.fileno())
            listener.close()
        with self._lock:
            pairs = list(self._pairs)
            threads = list(self._threads)
        for pair in pairs:
            pair.abort()
        if threads:
            await asyncio.to_thread(_join_all, threads, JOIN_TIMEOUT)


_UNAVAILABLE = (
    b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: 31\r\n\r\n"
    b"The slot's endpoint is not up.\n"
)


def _one_answer(upstream: socket.socket) -> bytes:
    """One HTTP answer from ``upstream`` (head and ``Content-Length`` body), or a 502 when it is not one."""
    data = _read_head(upstream)
    if data is None:
        return _UNAVAILABLE
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    try:
        length = int(lengths[0]) if lengths else -1
    except ValueError:
        length = -1
    if not 0 <= length <= MAX_ONE_SHOT_BODY:
        return _UNAVAILABLE
    while len(body) < length:
        chunk = upstream.recv(min(65536, length - len(body)))
        if not chunk:
            return _UNAVAILABLE
        body += chunk
    kept = [line for line in head.split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join([*kept, b"Connection: close"]) + b"\r\n\r\n" + body[:length]


def _join_all(threads: list[threading.Thread], within: float) -> None:
    for thread in threads:
        thread.join(within)
