"""The browser tools of ``/v3/mcp`` (spec §23.3): chrome-devtools-mcp's catalog, one owner per MCP session.

Each catalog entry becomes one SDK tool whose signature is its argument model's fields, so ``tools/list`` shows the
model's JSON Schema and the SDK validates arguments before we run anything. The owner of a call is its MCP session
(``Mcp-Session-Id``); :func:`release_owner` ends that owner's browser context when the client ends the session.
A failure is raised as a tool error, which the SDK returns as an ``isError`` result with the sentence.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ImageContent, TextContent, ToolAnnotations

from openbrowse.api.mcp_endpoint import SESSION_HEADER
from openbrowse.mcpbrowser.backend import BrowserToolsBackend
from openbrowse.mcpbrowser.pages import ToolFailure
from openbrowse.mcpbrowser.tools import CATALOG, BrowserTool

__all__ = ["owner_of", "register_browser_tools"]

Backend = Callable[[], BrowserToolsBackend]
Content = list[TextContent | ImageContent]
"""A browser tool's reply (``mcpbrowser.tools`` makes it; the SDK reads this annotation at runtime)."""


class BrowserToolFailed(ToolError):
    """A browser tool that failed: the MCP result is ``isError`` with this sentence."""


def owner_of(ctx: Context[Any, Any]) -> str:
    """The MCP session a call belongs to; a client without sessions is one owner per connection object."""
    headers = ctx.headers or {}
    session_id = headers.get(SESSION_HEADER)
    return session_id if session_id else f"connection-{id(ctx.request_context.session)}"


def _handler(tool: BrowserTool, backend: Backend) -> Callable[..., Any]:
    async def run(ctx: Context[Any, Any], **arguments: Any) -> Content:
        try:
            return await backend().run(tool.name, owner_of(ctx), arguments)
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


def register_browser_tools(server: MCPServer[Any], backend: Backend) -> None:
    """Add every browser tool of the catalog to ``server`` (once per server)."""
    for tool in CATALOG:
        server.add_tool(
            _handler(tool, backend),
            name=tool.name,
            description=tool.description,
            annotations=ToolAnnotations(read_only_hint=tool.read_only, open_world_hint=True),
            structured_output=False,
        )
