"""The ``mcp`` SDK's side of ``/v3/mcp`` (spec §23.1): the server with every tool, and its streamable-HTTP handler.

Imported on the first ``/v3/mcp`` request, not at start-up (:class:`~openbrowse.api.mcp_endpoint.McpEndpoint`):
the SDK and its protocol types take about 0.6 s and 26 MiB to load, which every server paid whether or not any
MCP client ever came.

Both protocol revisions are served on the one endpoint: the session-based one (``initialize``, ``Mcp-Session-Id``)
and the stateless 2026-07-28 one (``server/discover``, then requests that each carry their own ``_meta``). The SDK
routes each request by its revision; what differs for us is who owns a browser context (``mcp_browser_tools``), and
``server/discover`` (like ``initialize``) advertises our browser-context handles as the extension
:data:`CONTEXTS_EXTENSION`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from mcp.server.extension import Extension
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from openbrowse import __version__
from openbrowse.api.mcp_browser_tools import register_browser_tools
from openbrowse.api.mcp_endpoint import MCP_PATH
from openbrowse.api.mcp_tools import register_session_tools
from openbrowse.profiles.service import ProfileService
from openbrowse.sessions.manager import SessionManager

__all__ = ["CONTEXTS_EXTENSION", "BrowserContexts", "McpServerParts", "build_mcp_server"]

CONTEXTS_EXTENSION = "dev.openbrowse/browser-contexts"
INSTRUCTIONS = (
    "OpenBrowse runs browser-agent sessions on this machine. run_session (or run_task) starts one and answers at "
    "once with its id and liveUrl; wait_for_session waits for it to finish; send_task gives it a follow-up. "
    "The browser tools (list_pages, navigate_page, take_snapshot, click, fill, …) drive a browser context of your "
    "own, or a raw browser given by browserId. Your context is your MCP session's; without a session (the stateless "
    "protocol), call open_browser_context once and pass its contextId to every browser tool, then "
    "close_browser_context."
)


class BrowserContexts(Extension):
    """Advertises the browser-context handles (spec §23.3) in ``server/discover`` and ``initialize``: which tools
    open and close one, the argument that carries it, and how long an unused one lives."""

    identifier = CONTEXTS_EXTENSION

    def __init__(self, idle_s: float) -> None:
        self._idle_s = idle_s

    def settings(self) -> dict[str, Any]:
        return {
            "open": "open_browser_context",
            "close": "close_browser_context",
            "argument": "contextId",
            "idleTimeoutSeconds": self._idle_s,
        }


@dataclass(frozen=True)
class McpServerParts:
    """The SDK server's session manager (run once, for as long as the app runs) and the ASGI handler of its
    requests: a :class:`~openbrowse.api.mcp_endpoint.LoadedMcp`."""

    sessions: StreamableHTTPSessionManager
    handler: ASGIApp


def _session_manager(server: MCPServer[Any]) -> StreamableHTTPSessionManager:
    # Building the SDK's Starlette app creates its session manager; only the manager and its handler are used.
    # The SDK's DNS-rebinding check is off: the app-wide BrowserGuard applies our Host and Origin rules (§2.2).
    server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager


def build_mcp_server(app: FastAPI) -> McpServerParts:
    """The MCP server of ``app``; its tools use the services the lifespan put on ``app.state``."""
    contexts = BrowserContexts(app.state.settings.MCP_OWNER_IDLE_S)
    server: MCPServer[Any] = MCPServer(
        "OpenBrowse", version=__version__, instructions=INSTRUCTIONS, extensions=[contexts]
    )

    def services() -> tuple[SessionManager, ProfileService]:
        return app.state.manager, app.state.profiles

    register_session_tools(server, services)
    register_browser_tools(server, lambda: app.state.browser_tools.get())
    sessions = _session_manager(server)
    return McpServerParts(sessions, StreamableHTTPASGIApp(sessions))
