"""The MCP browser tools, built on their first use rather than at start-up.

Their backend (:mod:`openbrowse.sessions.browser_tools`) needs Playwright, which a server no MCP client asks for a
browser tool never uses: loading it at boot cost memory and start-up time for nothing. This holder is entered in
the lifespan like the backend was; the first :meth:`get` imports the backend's modules on a thread, builds it and
enters it, and the holder closes it (if it was ever built) when the app shuts down.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Collection
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING

from openbrowse.config import Settings
from openbrowse.sessions.browsers import BrowserService
from openbrowse.slots.ledger import Ledger

if TYPE_CHECKING:
    from openbrowse.mcpbrowser.backend import BrowserToolsBackend

__all__ = ["LazyBrowserTools"]

BACKEND_MODULE = "openbrowse.sessions.browser_tools"

LiveOwners = Callable[[float], Collection[str]]
"""The MCP sessions used within the given idle time (the endpoint's gate knows them)."""


class LazyBrowserTools:
    """Owns the browser tools' backend once something asked for it; enter in the lifespan."""

    def __init__(self, settings: Settings, ledger: Ledger, browsers: BrowserService) -> None:
        self._settings = settings
        self._ledger = ledger
        self._browsers = browsers
        self._stack = AsyncExitStack()
        self._building = asyncio.Lock()
        self._backend: BrowserToolsBackend | None = None
        self._closed = False
        self.recently_used: LiveOwners | None = None
        """Set by the MCP endpoint: an MCP session silent for ``MCP_OWNER_IDLE_S`` has its context released."""

    @property
    def loaded(self) -> BrowserToolsBackend | None:
        """The backend if it was built (``None`` means no browser tool ever ran: nothing to release)."""
        return self._backend

    async def get(self) -> BrowserToolsBackend:
        """The backend, built and entered by the first caller."""
        if self._backend is not None:
            return self._backend
        async with self._building:
            if self._backend is None:
                if self._closed:
                    raise RuntimeError("The server is shutting down.")
                module = await asyncio.to_thread(importlib.import_module, BACKEND_MODULE)
                backend: BrowserToolsBackend = module.build_browser_tools(self._settings, self._ledger, self._browsers)
                recently_used, idle_s = self.recently_used, backend.handles.idle_s
                if recently_used is not None:
                    backend.live_owners = lambda: recently_used(idle_s)
                self._backend = await self._stack.enter_async_context(backend)
            return self._backend

    async def __aenter__(self) -> LazyBrowserTools:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        async with self._building:  # a build under way finishes first, then closes with the rest
            self._closed = True
        await asyncio.shield(self._stack.aclose())
