"""``/v3/mcp``: MCP over streamable HTTP, served in-process by the official ``mcp`` SDK (spec §23.1).

The SDK is loaded on the first ``/v3/mcp`` request (:class:`McpEndpoint`, with ``api/mcp_server.py``), not at
start-up: it costs about 0.6 s of boot and 26 MiB of memory that a server no MCP client talks to would pay for
nothing. That first request waits for the load (once per server process); later ones do not.

Its session manager then runs until the app shuts down; requests reach the SDK's ASGI handler through
:class:`McpGate`, which asks for the same credentials as every ``/v3`` route (the API key as
``X-Browser-Use-API-Key`` or Bearer, through the same failure throttle). The Host and Origin rules of §2.2 are the
app-wide :class:`~openbrowse.api.origin_guard.BrowserGuard`'s, which runs before this gate; the SDK's own DNS
rebinding check is switched off rather than given a second allow-list that would refuse hosts ours allows
(``ALLOWED_HOSTS``, the bind address).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from fastapi import FastAPI
from starlette.requests import HTTPConnection
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openbrowse.api.auth import AuthFailed, AuthThrottled
from openbrowse.api.deps import authenticator_of
from openbrowse.api.errors import auth_refusal

if TYPE_CHECKING:
    from openbrowse.sessions.lazy_browser_tools import LazyBrowserTools

__all__ = ["MCP_PATH", "SESSION_HEADER", "McpEndpoint", "McpGate", "install_mcp", "mcp_lifespan"]

MCP_PATH = "/v3/mcp"
SESSION_HEADER = "mcp-session-id"
SDK_MODULE = "openbrowse.api.mcp_server"
"""Loaded on the first request; its ``build_mcp_server(app)`` gives a :class:`LoadedMcp`."""


class SdkSessions(Protocol):
    """The SDK's ``StreamableHTTPSessionManager``, as far as the endpoint uses it."""

    def run(self) -> AbstractAsyncContextManager[None]: ...


class LoadedMcp(Protocol):
    """What ``api/mcp_server.py`` builds: the SDK's session manager and the ASGI handler of its requests."""

    @property
    def sessions(self) -> SdkSessions: ...

    @property
    def handler(self) -> ASGIApp: ...


class McpGate:
    """The API key in front of the SDK's ASGI handler; 401/429 bodies as everywhere else. It also notes when each
    MCP session was last used, so the browser tools can release the context of a client that went away without
    ending its session (the SDK keeps such a session until the server stops)."""

    def __init__(self, app: FastAPI, inner: ASGIApp, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._app = app
        self._inner = inner
        self._clock = clock
        self._last_used: dict[str, float] = {}

    def used(self, session_id: str) -> None:
        self._last_used[session_id] = self._clock()

    def recently_used(self, within_s: float) -> list[str]:
        """The MCP sessions that made a request in the last ``within_s`` seconds (older ones are forgotten)."""
        horizon = self._clock() - within_s
        self._last_used = {sid: at for sid, at in self._last_used.items() if at >= horizon}
        return list(self._last_used)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._inner(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        try:
            authenticator_of(conn).require_api_key(conn)
        except (AuthFailed, AuthThrottled) as exc:
            await auth_refusal(exc)(scope, receive, send)
            return
        if used := conn.headers.get(SESSION_HEADER):
            self.used(used)
        ended = conn.headers.get(SESSION_HEADER) if scope["method"] == "DELETE" else None
        lazy: LazyBrowserTools | None = getattr(self._app.state, "browser_tools", None)
        tools = lazy.loaded if lazy is not None else None  # never built: no browser context to release
        if not ended or tools is None:
            await self._inner(scope, receive, send)
            return

        async def send_after_release(message: Message) -> None:
            # The client ended its MCP session: its browser context is closed before it hears so (spec §23.3).
            if message["type"] == "http.response.start":  # an empty answer is complete with its headers
                await tools.release(ended)
            await send(message)

        await self._inner(scope, receive, send_after_release)


class McpEndpoint:
    """The SDK's request handler, loaded and started by the first request and stopped with the app.

    The SDK's session manager is an anyio task group that must be entered and left by one task, so it runs in a
    task of this object's own (started by the first request, awaited by :meth:`aclose` at shutdown) rather than in
    the request that happened to load it.
    """

    def __init__(self, app: FastAPI) -> None:
        self._app = app
        self._stop = asyncio.Event()
        self._loading: asyncio.Task[LoadedMcp | None] | None = None
        self._loaded: LoadedMcp | None = None
        self._runner: asyncio.Task[None] | None = None

    @property
    def loaded(self) -> LoadedMcp | None:
        """The SDK's parts once a request has loaded them (``None`` before)."""
        return self._loaded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = await self._handler()
        if handler is None:
            refusal = JSONResponse({"detail": "The server is shutting down."}, status_code=503)
            await refusal(scope, receive, send)
            return
        await handler(scope, receive, send)

    async def _handler(self) -> ASGIApp | None:
        if self._loaded is not None:
            return self._loaded.handler
        if self._stop.is_set():
            return None
        if self._loading is None:
            # a task of ours, not the request's: a client that hangs up mid-load does not cancel it
            self._loading = asyncio.create_task(self._load(), name="mcp-load")
        loading = self._loading
        try:
            loaded = await asyncio.shield(loading)
        except Exception:
            if self._loading is loading and loading.done():
                self._loading = None  # the next request tries again
            raise
        return loaded.handler if loaded is not None else None

    async def _load(self) -> LoadedMcp | None:
        module = await asyncio.to_thread(importlib.import_module, SDK_MODULE)
        if self._stop.is_set():  # shut down while the SDK loaded
            return None
        loaded: LoadedMcp = module.build_mcp_server(self._app)
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._runner = asyncio.create_task(self._serve(loaded, started), name="mcp-sessions")
        await started
        self._loaded = loaded
        return loaded

    async def _serve(self, loaded: LoadedMcp, started: asyncio.Future[None]) -> None:
        try:
            async with loaded.sessions.run():
                started.set_result(None)
                await self._stop.wait()
        except Exception as exc:
            if started.done():
                raise
            started.set_exception(exc)  # the loading request reports it; a later one tries again

    async def aclose(self) -> None:
        """Stop the SDK's sessions if a request started them; later requests are refused with 503."""
        self._stop.set()
        if self._loading is not None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self._loading)
        if self._runner is not None:  # only read now: a load still running above may have started it
            with contextlib.suppress(Exception):
                await asyncio.shield(self._runner)


def install_mcp(app: FastAPI) -> McpEndpoint:
    """Serve ``/v3/mcp`` on ``app`` (the SDK loads on the first request); its tools use the services the lifespan
    puts on ``app.state``."""
    endpoint = app.state.mcp = McpEndpoint(app)
    gate = app.state.mcp_gate = McpGate(app, endpoint)  # an ASGI app: Starlette passes it the raw scope
    app.router.routes.append(Route(MCP_PATH, gate, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    return endpoint


@asynccontextmanager
async def mcp_lifespan(
    endpoint: McpEndpoint, browser_tools: LazyBrowserTools | None = None, gate: McpGate | None = None
) -> AsyncIterator[None]:
    """The MCP endpoint for the app's lifespan: its SDK sessions, if any were started, end when the app does."""
    if browser_tools is not None and gate is not None:
        # an MCP session silent for MCP_OWNER_IDLE_S (gone without ending it) has its browser context released;
        # its next call gets a fresh one
        browser_tools.recently_used = gate.recently_used
    try:
        yield
    finally:
        await endpoint.aclose()
