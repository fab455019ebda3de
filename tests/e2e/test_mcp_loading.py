"""The MCP SDK loads with the first ``/v3/mcp`` request, not with the server (issue 24: boot time and memory).

A server that no MCP client talks to never starts the SDK's session manager; clients that arrive together all get
their answers from the one manager the first of them started, and it stops with the server.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.servers import running_server
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e]

API_KEY = "mcp-load-key"
STARTED = "StreamableHTTP session manager started"
STOPPED = "StreamableHTTP session manager shutting down"


async def _list_sessions(server: ServerProcess) -> types.CallToolResult:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=90)) as http,
        streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool("list_sessions", {})


async def test_the_first_clients_load_the_sdk_once_and_it_stops_with_the_server(tmp_path: Path) -> None:
    with running_server(tmp_path / "home", {"API_KEY": API_KEY}) as server:
        assert STARTED not in server.log()
        results = await asyncio.gather(*(_list_sessions(server) for _ in range(3)))
        assert [result.is_error for result in results] == [False, False, False], results
        assert server.log().count(STARTED) == 1
        assert STOPPED not in server.log()
    log = server.log()
    assert log.count(STOPPED) == 1 and "Application shutdown complete" in log, log[-3000:]
