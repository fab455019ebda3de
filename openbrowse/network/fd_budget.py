"""One process-wide budget of file descriptors for what slots can make the server open (issue 31).

Every connection a slot or a client can cause costs the server descriptors: the egress enforcer's client and
upstream sockets, the host-side gates' sockets and splice pipes, the API's WebSocket bridges (the client's socket
and the upstream one, which is a gate connection in turn). A script that opens thousands of connections, or a
token holder who opens thousands of WebSockets, must not bring the server to ``EMFILE``, where uvicorn can no
longer accept ``/health`` and other slots' connections fail. So every acceptor asks :data:`FD_BUDGET` before it
keeps a connection: over budget, the new connection is refused at once (a gate or an enforcer closes it, a bridge
answers its handshake with a 503) and logged (once per burst), and nothing else notices.

The budget is part of the process's own limit (``RLIMIT_NOFILE``): what is left over is for the API's plain
requests, the database, the children's pipes and log files.
"""

from __future__ import annotations

import logging
import resource
import threading
import time

__all__ = ["FD_BUDGET", "GATE_FDS", "FdBudget", "default_budget"]

logger = logging.getLogger(__name__)

RESERVED_FDS = 512
"""Descriptors never handed to relays or enforcers (the API, the database, children's pipes, log files)."""
REFUSAL_LOG_INTERVAL = 10.0
GATE_FDS = 6
"""Descriptors one gate connection holds (``slots/gate.py``): the client, the upstream, and a pipe per direction."""


def default_budget() -> int:
    """Half of the soft ``RLIMIT_NOFILE``, keeping at least :data:`RESERVED_FDS` free (never below 64)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(64, min(soft // 2, soft - RESERVED_FDS))


class FdBudget:
    """A counter of descriptors held by slot-driven connections; thread-safe (gates count from their threads)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._used = 0
        self._refused = 0
        self._lock = threading.Lock()
        self._last_log = 0.0

    @property
    def used(self) -> int:
        return self._used

    @property
    def refused(self) -> int:
        """Connections turned away since start (for tests and diagnostics)."""
        return self._refused

    def try_acquire(self, count: int, what: str, *, keep_free: int = 0) -> bool:
        """Take ``count`` descriptors for ``what``; False (and a log line now and then) when over budget.

        ``keep_free``: refuse unless that many more would still be left, for a connection whose other end takes its
        own share right after (a bridge's upstream is a gate connection): admitting it without room for that end
        would only have the end refuse it."""
        with self._lock:
            if self._used + count + keep_free <= self.limit:
                self._used += count
                return True
            self._refused += 1
            now = time.monotonic()
            quiet = now - self._last_log < REFUSAL_LOG_INTERVAL
            if not quiet:
                self._last_log = now
            refused = self._refused
        if not quiet:
            logger.warning(
                "Refused a connection to %s: the descriptor budget (%d) is spent (%d refused so far)",
                what,
                self.limit,
                refused,
            )
        return False

    def release(self, count: int) -> None:
        with self._lock:
            self._used = max(0, self._used - count)


FD_BUDGET = FdBudget(default_budget())
"""The process's one budget."""
