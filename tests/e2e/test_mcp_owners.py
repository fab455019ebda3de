"""Who owns a browser context on ``/v3/mcp`` under both MCP revisions (spec §23.3), with the official Python SDK.

* The stateless revision (2026-07-28): the SDK's high-level ``Client`` sends ``server/discover`` and then requests
  without a session. It opens a context with ``open_browser_context`` and passes its ``contextId`` to every browser
  tool; the pages it logged in on are still there on its next call, from another connection too; another handle
  sees only its own cookie; ``close_browser_context`` ends it; a call without a context is told how to get one.
* The session-based revision (``ClientSession`` after ``initialize``): the session stays an owner as before, and a
  handle it opens is a further owner beside it.
* An idle handle expires: its pages close, and a later call with it says it expired.

``test_mcp_browser_tools.py`` covers the tools themselves; ``test_byo_mcp.py`` the Node clients.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import httpx2
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.servers import running_server, server_fixture
from tests.e2e.test_mcp_browser_tools import login_site, shared_targets, uid_of
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(240)]

API_KEY = "mcp-owners-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
CONTEXTS_EXTENSION = "dev.openbrowse/browser-contexts"


class Caller(Protocol):
    """Both client styles call tools the same way."""

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult: ...


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with ThreadedServer(login_site()) as served:
        yield served.url


server = server_fixture({"API_KEY": API_KEY})


@asynccontextmanager
async def stateless_client(server: ServerProcess) -> AsyncIterator[Client]:
    """The SDK's high-level client as a user writes it: it picks the newest revision the server speaks."""
    async with (
        httpx2.AsyncClient(headers=AUTH, timeout=httpx2.Timeout(30, read=90)) as http,
        Client(streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http)) as client,
    ):
        yield client


@asynccontextmanager
async def session_client(server: ServerProcess) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=AUTH, timeout=httpx2.Timeout(30, read=90)) as http,
        streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def call(client: Caller, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    return text_of(result)


async def refused(client: Caller, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result
    return text_of(result)


async def open_context(client: Caller) -> str:
    opened = await client.call_tool("open_browser_context", {})
    assert not opened.is_error, text_of(opened)
    assert opened.structured_content is not None, opened
    handle = opened.structured_content["contextId"]
    assert isinstance(handle, str) and handle and handle in text_of(opened)
    return handle


async def log_in(client: Caller, site: str, user: str, **context: str) -> str:
    await call(client, "navigate_page", type="url", url=f"{site}/login", **context)
    snapshot = await call(client, "take_snapshot", **context)
    await call(client, "fill", uid=uid_of(snapshot, "textbox", "Name"), value=user, **context)
    await call(client, "click", uid=uid_of(snapshot, "button", "Log in"), **context)
    return await call(client, "wait_for", text=f"Welcome {user}", **context)


async def cookie(client: Caller, **context: str) -> str:
    return await call(client, "evaluate_script", function="() => document.cookie", **context)


async def test_a_stateless_client_keeps_its_pages_through_a_context_handle(server: ServerProcess, site: str) -> None:
    async with stateless_client(server) as client:
        assert client.protocol_version == "2026-07-28"  # no initialize, no Mcp-Session-Id
        advertised = (client.server_capabilities.extensions or {}).get(CONTEXTS_EXTENSION)
        assert advertised is not None and advertised["argument"] == "contextId", client.server_capabilities
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {"open_browser_context", "close_browser_context"} <= set(listed)
        assert "contextId" in listed["navigate_page"].input_schema["properties"]

        lost = await refused(client, "navigate_page", type="url", url=f"{site}/login")
        assert "open_browser_context" in lost

        ada = await open_context(client)
        assert "Welcome ada" in await log_in(client, site, "ada", contextId=ada)
        pages = await call(client, "list_pages", contextId=ada)
        assert f"{site}/me [selected]" in pages, pages
        assert "Welcome ada" in await call(client, "take_snapshot", contextId=ada)

        bob = await open_context(client)
        assert bob != ada
        await log_in(client, site, "bob", contextId=bob)
        assert '"who=bob"' in await cookie(client, contextId=bob)
        assert '"who=ada"' in await cookie(client, contextId=ada)  # each handle its own cookies

    async with stateless_client(server) as again:  # a new connection, the same handle: the same pages
        assert f"{site}/me [selected]" in await call(again, "list_pages", contextId=ada)
        assert '"who=ada"' in await cookie(again, contextId=ada)
        closed = await again.call_tool("close_browser_context", {"contextId": ada})
        assert not closed.is_error, text_of(closed)
        assert "was closed" in await refused(again, "list_pages", contextId=ada)
        assert "was closed" in await refused(again, "close_browser_context", contextId=ada)
        assert "no browser context" in await refused(again, "list_pages", contextId="ctx_made-up")
        assert '"who=bob"' in await cookie(again, contextId=bob)  # closing one leaves the other
        await call(again, "close_browser_context", contextId=bob)


async def test_a_session_stays_an_owner_and_may_open_a_further_context(server: ServerProcess, site: str) -> None:
    async with session_client(server) as session:
        assert "open_browser_context" in {tool.name for tool in (await session.list_tools()).tools}
        await log_in(session, site, "carol")
        assert '"who=carol"' in await cookie(session)  # the session's own context, no handle needed
        extra = await open_context(session)
        await log_in(session, site, "dave", contextId=extra)
        assert '"who=dave"' in await cookie(session, contextId=extra)
        assert '"who=carol"' in await cookie(session)
        await call(session, "close_browser_context", contextId=extra)
        assert f"{site}/me [selected]" in await call(session, "list_pages")


async def test_an_idle_handle_expires_and_says_so(tmp_path: Path, site: str) -> None:
    with running_server(tmp_path / "idle-home", {"API_KEY": API_KEY, "MCP_OWNER_IDLE_S": "2"}) as idle_server:
        async with stateless_client(idle_server) as client:
            handle = await open_context(client)
            await call(client, "navigate_page", type="url", url=f"{site}/me?idle", contextId=handle)

            def page_closed() -> bool:
                return not [t for t in shared_targets(idle_server) if t["url"].endswith("/me?idle")]

            await asyncio.to_thread(wait_until, page_closed, 60, what="the idle handle's pages to close")
            assert "expired" in await refused(client, "list_pages", contextId=handle)
