"""``/v3/mcp``: MCP over streamable HTTP, served in-process by the official ``mcp`` SDK (spec §23.1).

The SDK's session manager runs for the app's whole lifespan (entered by :func:`mcp_lifespan`); requests reach its
ASGI handler through :class:`McpGate`, which asks for the same credentials as every ``/v3`` route (the API key as
``X-Browser-Use-API-Key`` or Bearer, through the same failure throttle). The Host and Origin rules of §2.2 are the
app-wide :class:`~openbrowse.api.origin_guard.BrowserGuard`'s, which runs before this gate; the SDK's own DNS
rebinding check is switched off rather than given a second allow-list that would refuse hosts ours allows
(``ALLOWED_HOSTS``, the bind address).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import HTTPConnection
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from openbrowse import __version__
from openbrowse.api.auth import AuthFailed, AuthThrottled
from openbrowse.api.deps import authenticator_of
from openbrowse.api.errors import auth_refusal
from openbrowse.api.mcp_tools import register_session_tools
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.manager import SessionManager

__all__ = ["MCP_PATH", "McpGate", "install_mcp", "mcp_lifespan"]

MCP_PATH = "/v3/mcp"
INSTRUCTIONS = (
    "OpenBrowse runs browser-agent sessions on this machine. run_session (or run_task) starts one and answers at "
    "once with its id and liveUrl; wait_for_session waits for it to finish; send_task gives it a follow-up."
)


class McpGate:
    """The API key in front of the SDK's ASGI handler; 401/429 bodies as everywhere else."""

    def __init__(self, app: FastAPI, inner: ASGIApp) -> None:
        self._app = app
        self._inner = inner

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
        await self._inner(scope, receive, send)


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
    handler = StreamableHTTPASGIApp(_session_manager(server))
    gate = McpGate(app, handler)  # an ASGI app, not a request handler: Starlette passes it the raw scope
    app.router.routes.append(Route(MCP_PATH, gate, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    app.state.mcp = server
    return server


@asynccontextmanager
async def mcp_lifespan(server: MCPServer[Any]) -> AsyncIterator[None]:
    """The SDK's session manager, for the app's lifespan (it can be run once per manager)."""
    async with server.session_manager.run():
        yield
