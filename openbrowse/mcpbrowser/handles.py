"""Browser-context handles: owners of the shared browser that outlive a single MCP request (spec §23.3).

Under the stateless MCP revision (2026-07-28) there is no session to own a browser context: every request stands
alone. State that spans calls is a handle the server mints: ``open_browser_context`` answers a ``contextId``, every
browser tool takes it as an argument, ``close_browser_context`` releases it. Clients of the session-based revision
may open handles too (each one a further owner beside their session).

A handle is a random secret; the owner it names in the shared browser (and in logs) is a digest of it, so neither
a log line nor a page name gives the handle away. A handle unused for ``idle_s`` seconds (counted from the end of
its last call; never during one) expires like an idle session: its owner is no longer live (the backend's sweep
closes its context), and a later call with it is told that it expired rather than that it never existed.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from openbrowse.mcpbrowser.pages import ToolFailure

__all__ = ["HANDLE_PREFIX", "ContextHandles", "owner_of_handle"]

HANDLE_PREFIX = "ctx_"
_REMEMBERED_ENDS = 4096  # ended handles kept to tell "expired" or "closed" from "unknown"; the oldest are forgotten


def owner_of_handle(handle: str) -> str:
    """The shared browser's owner id of a handle: a digest, never the secret itself."""
    return "context-" + hashlib.sha256(handle.encode()).hexdigest()[:20]


class ContextHandles:
    """The live handles and when each was last used. One per app; the event loop's thread only."""

    def __init__(self, idle_s: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s = idle_s
        self._clock = clock
        self._last_used: dict[str, float] = {}
        self._in_calls: Counter[str] = Counter()
        self._ended: OrderedDict[str, str] = OrderedDict()
        """Handles that ended, with why ("expired" or "closed"), newest last."""

    def __len__(self) -> int:
        return len(self._last_used)

    def open(self) -> str:
        """Mint a new handle (its context is created by its first browser tool call)."""
        handle = HANDLE_PREFIX + secrets.token_urlsafe(24)
        self._last_used[handle] = self._clock()
        return handle

    @contextmanager
    def use(self, handle: str) -> Iterator[str]:
        """The owner a call with ``handle`` runs as, for the length of the call (which counts as use: the handle
        does not expire during it); :class:`ToolFailure` if the handle is not live, saying whether it expired, was
        closed or never existed."""
        self._expire()
        if handle not in self._last_used:
            raise ToolFailure(self._not_live(handle))
        self._in_calls[handle] += 1
        try:
            yield owner_of_handle(handle)
        finally:
            self._in_calls[handle] -= 1
            if self._in_calls[handle] <= 0:
                del self._in_calls[handle]
            if handle in self._last_used:
                self._last_used[handle] = self._clock()

    def close(self, handle: str) -> str:
        """End ``handle``; the owner whose context the caller must release. :class:`ToolFailure` if not live."""
        self._expire()
        if self._last_used.pop(handle, None) is None:
            raise ToolFailure(self._not_live(handle))
        self._remember(handle, "closed")
        return owner_of_handle(handle)

    def live_owners(self) -> list[str]:
        """The owners of the handles still live (idle ones expire now)."""
        self._expire()
        return [owner_of_handle(handle) for handle in self._last_used]

    def _expire(self) -> None:
        horizon = self._clock() - self.idle_s
        idle = [handle for handle, at in self._last_used.items() if at < horizon and handle not in self._in_calls]
        for handle in idle:
            del self._last_used[handle]
            self._remember(handle, "expired")

    def _remember(self, handle: str, why: str) -> None:
        self._ended[handle] = why
        self._ended.move_to_end(handle)
        while len(self._ended) > _REMEMBERED_ENDS:
            self._ended.popitem(last=False)

    def _not_live(self, handle: str) -> str:
        why = self._ended.get(handle)
        if why == "expired":
            minutes = self.idle_s / 60
            idle = f"{minutes:g} minutes" if minutes >= 1 else f"{self.idle_s:g} seconds"
            return (
                f"The browser context {handle} expired after {idle} without a call, and its pages are closed; "
                "call open_browser_context for a new one."
            )
        if why == "closed":
            return f"The browser context {handle} was closed; call open_browser_context for a new one."
        return f"There is no browser context {handle}; call open_browser_context for one and pass its contextId."
