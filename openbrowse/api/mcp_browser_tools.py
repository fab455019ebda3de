"""The browser tools of ``/v3/mcp`` (spec §23.3): chrome-devtools-mcp's catalog, one owner per MCP session or
per browser-context handle.

Each catalog entry becomes one SDK tool whose signature is its argument model's fields, so ``tools/list`` shows the
model's JSON Schema and the SDK validates arguments before we run anything. The owner of a call is the handle in its
``contextId`` argument, else its MCP session (``Mcp-Session-Id``, session-based revision only). A client of the
stateless revision (2026-07-28) has no session: it calls ``open_browser_context`` for a handle and passes it to
every browser tool, and ``close_browser_context`` ends it. A session's context ends with the session (the
endpoint's gate); a handle's when it is closed or expires. A failure is raised as a tool error, which the SDK
returns as an ``isError`` result with the sentence.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent, ToolAnnotations

from openbrowse.api.mcp_endpoint import SESSION_HEADER
from openbrowse.mcpbrowser.backend import BrowserToolsBackend
from openbrowse.mcpbrowser.pages import ToolFailure
from openbrowse.mcpbrowser.tools import CATALOG, BrowserTool

__all__ = ["owner_of", "register_browser_tools"]

Backend = Callable[[], Awaitable[BrowserToolsBackend]]
"""The browser tools' backend, built on the first call (``LazyBrowserTools.get``)."""
Content = list[TextContent | ImageContent]
"""A browser tool's reply (``mcpbrowser.tools`` makes it; the SDK reads this annotation at runtime)."""


class BrowserToolFailed(ToolError):
    """A browser tool that failed: the MCP result is ``isError`` with this sentence."""


def owner_of(ctx: Context[Any, Any]) -> str | None:
    """The MCP session a call belongs to; None for a call of the stateless revision (it has no session)."""
    headers = ctx.headers or {}
    return headers.get(SESSION_HEADER) or None


def _handler(tool: BrowserTool, backend: Backend) -> Callable[..., Any]:
    async def run(ctx: Context[Any, Any], **arguments: Any) -> Content:
        try:
            return await (await backend()).run(tool.name, owner_of(ctx), arguments)
        except ToolFailure as exc:
            raise BrowserToolFailed(str(exc)) from exc

    # The SDK reads a tool's parameters from its signature: give it the argument model's fields.
    parameters = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    for name, field in tool.arguments.model_fields.items():
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        annotation = Annotated[field.annotation, field]  # type: ignore[name-defined]
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        )
    run.__signature__ = inspect.Signature(parameters, return_annotation=Any)  # type: ignore[attr-defined]
    run.__name__ = tool.name
    return run


def _register_context_tools(server: MCPServer[Any], backend: Backend) -> None:
    @server.tool(
        description="Open a browser context of your own in the shared browser (private pages, cookies and storage) "
        "and get its contextId; pass contextId to every browser tool to use it. Clients without an MCP session need "
        "one; in a session it opens a further context beside the session's own. It closes with "
        "close_browser_context, or after a while without calls.",
        annotations=ToolAnnotations(read_only_hint=False, open_world_hint=False),
        structured_output=True,
    )
    async def open_browser_context() -> dict[str, Any]:
        tools = await backend()
        return {"contextId": tools.open_context(), "idleTimeoutSeconds": tools.handles.idle_s}

    @server.tool(
        description="Close a browser context opened with open_browser_context: its pages close and its contextId "
        "stops working.",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False),
        structured_output=True,
    )
    async def close_browser_context(contextId: str) -> dict[str, Any]:
        try:
            await (await backend()).close_context(contextId)
        except ToolFailure as exc:
            raise BrowserToolFailed(str(exc)) from exc
        return {"closed": True, "contextId": contextId}


def register_browser_tools(server: MCPServer[Any], backend: Backend) -> None:
    """Add every browser tool of the catalog, and the tools that open and close a context, to ``server`` (once per
    server)."""
    _register_context_tools(server, backend)
    for tool in CATALOG:
        server.add_tool(
            _handler(tool, backend),
            name=tool.name,
            description=tool.description,
            annotations=ToolAnnotations(read_only_hint=tool.read_only, open_world_hint=True),
            structured_output=False,
        )
