"""``/v3/mcp``: MCP over streamable HTTP, served in-process by the official ``mcp`` SDK (spec §23.1).

The SDK's session manager runs for the app's whole lifespan (entered by :func:`mcp_lifespan`); requests reach its
ASGI handler through :class:`McpGate`, which asks for the same credentials as every ``/v3`` route (the API key as
``X-Browser-Use-API-Key`` or Bearer, through the same failure throttle). The Host and Origin rules of §2.2 are the
app-wide :class:`~openbrowse.api.origin_guard.BrowserGuard`'s, which runs before this gate; the SDK's own DNS
rebinding check is switched off rather than given a second allow-list that would refuse hosts ours allows
(``ALLOWED_HOSTS``, the bind address).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from openbrowse import __version__
from openbrowse.api.auth import AuthFailed, AuthThrottled
from openbrowse.api.deps import authenticator_of
from openbrowse.api.errors import auth_refusal
from openbrowse.api.mcp_browser_tools import SESSION_HEADER, register_browser_tools
from openbrowse.api.mcp_tools import register_session_tools
from openbrowse.mcpbrowser.backend import BrowserToolsBackend
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.manager import SessionManager

__all__ = ["MCP_PATH", "McpGate", "install_mcp", "mcp_lifespan"]

MCP_PATH = "/v3/mcp"
OWNER_IDLE_S = 30 * 60
"""An MCP client silent this long has its private browser context closed; its next call gets a fresh one."""
INSTRUCTIONS = (
    "OpenBrowse runs browser-agent sessions on this machine. run_session (or run_task) starts one and answers at "
    "once with its id and liveUrl; wait_for_session waits for it to finish; send_task gives it a follow-up. "
    "The browser tools (list_pages, navigate_page, take_snapshot, click, fill, …) drive a browser of your own, "
    "private to this MCP session, or a raw browser given by browserId."
)


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
        tools: BrowserToolsBackend | None = getattr(self._app.state, "browser_tools", None)
        if not ended or tools is None:
            await self._inner(scope, receive, send)
            return

        async def send_after_release(message: Message) -> None:
            # The client ended its MCP session: its browser context is closed before it hears so (spec §23.3).
            if message["type"] == "http.response.start":  # an empty answer is complete with its headers
                await tools.release(ended)
            await send(message)

        await self._inner(scope, receive, send_after_release)


def _session_manager(server: MCPServer[Any]) -> StreamableHTTPSessionManager:
    # Building the SDK's Starlette app creates its session manager; only the manager and its handler are used.
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager


def install_mcp(app: FastAPI) -> MCPServer[Any]:
    """Serve ``/v3/mcp`` on ``app``; its tools use the services the lifespan puts on ``app.state``."""
    server: MCPServer[Any] = MCPServer("OpenBrowse", version=__version__, instructions=INSTRUCTIONS)

    def services() -> tuple[SessionManager, ProfileService]:
        return app.state.manager, app.state.profiles

    register_session_tools(server, services)
    register_browser_tools(server, lambda: app.state.browser_tools)
    handler = StreamableHTTPASGIApp(_session_manager(server))
    gate = app.state.mcp_gate = McpGate(app, handler)  # an ASGI app: Starlette passes it the raw scope
    app.router.routes.append(Route(MCP_PATH, gate, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    app.state.mcp = server
    return server


@asynccontextmanager
async def mcp_lifespan(
    server: MCPServer[Any], browser_tools: BrowserToolsBackend | None = None, gate: McpGate | None = None
) -> AsyncIterator[None]:
    """The SDK's session manager, for the app's lifespan (it can be run once per manager)."""
    if browser_tools is not None and gate is not None:
        # an owner whose client has been silent for OWNER_IDLE_S (gone without ending its session) is released
        browser_tools.live_owners = lambda: gate.recently_used(OWNER_IDLE_S)
    async with server.session_manager.run():
        yield
