"""``/v3/mcp`` session tools (spec §23.1, §23.2) through the official ``mcp`` Python client, on a real server.

The client lists the tools, calls each, runs a task to completion with the fake model provider and
``wait_for_session`` (progress notifications included), and is refused without the key or from a foreign Origin.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.agent_support import agent_steps, token
from tests.e2e.servers import SHARED_API_KEY, agent_env, server_fixture
from tests.fakes.llm_script import done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.display import needs_display
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = SHARED_API_KEY
AUTH = {"Authorization": f"Bearer {API_KEY}"}
BU_TOOLS = {
    "run_session",
    "get_session",
    "send_task",
    "stop_session",
    "get_session_messages",
    "list_sessions",
    "list_browser_profiles",
}
SEED_TOOLS = {"create_session", "run_task", "get_session", "list_sessions", "stop_session"}


# one server for the control, files and MCP-session modules of this test process (tests/e2e/servers.py)
server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY), slots=2, shared=True)


@asynccontextmanager
async def mcp_session(server: ServerProcess, headers: dict[str, str] = AUTH) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=90)) as http,
        streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def payload(result: Any) -> dict[str, Any]:
    assert isinstance(result, types.CallToolResult), result
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = next(block.text for block in result.content if isinstance(block, types.TextContent))
    data: dict[str, Any] = json.loads(text)
    return data


def error_text(result: Any) -> str:
    assert isinstance(result, types.CallToolResult) and result.is_error, result
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_the_client_lists_every_tool_and_runs_a_task_to_the_end(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("MCP")
    fake.script(
        marker,
        [navigate(f"{site.url}/product/green"), done("The Green Gizmo costs 8.25 EUR."), done("Still 8.25 EUR.")],
        when=agent_steps,
    )
    progress_seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        progress_seen.append(progress)

    async with mcp_session(server) as mcp:
        listed = {tool.name for tool in (await mcp.list_tools()).tools}
        assert BU_TOOLS | SEED_TOOLS | {"wait_for_session"} <= listed
        started = payload(
            await mcp.call_tool(
                "run_session", {"task": f"{marker} Price of the green product on {site.url}/", "keep_alive": True}
            )
        )
        assert started["status"] in {"created", "running"} and started["id"]
        finished = payload(
            await mcp.call_tool(
                "wait_for_session", {"session_id": started["id"], "timeout_seconds": 55}, progress_callback=on_progress
            )
        )
        assert finished["status"] == "idle" and finished["output"] == "The Green Gizmo costs 8.25 EUR."
        assert finished["liveUrl"], "a parked session's result carries its liveUrl"
        assert progress_seen, "wait_for_session sent progress notifications while the task ran"

        sent = payload(
            await mcp.call_tool("send_task", {"session_id": started["id"], "task": f"{marker} again: and now?"})
        )
        assert sent["id"] == started["id"]
        again = payload(await mcp.call_tool("wait_for_session", {"session_id": started["id"]}))
        assert again["output"] == "Still 8.25 EUR."

        feed = payload(await mcp.call_tool("get_session_messages", {"session_id": started["id"]}))
        assert any(marker in m["summary"] for m in feed["messages"]) and feed["hasMore"] is False
        listed_sessions = payload(await mcp.call_tool("list_sessions", {}))
        assert started["id"] in {s["id"] for s in listed_sessions["sessions"]}
        assert payload(await mcp.call_tool("get_session", {"session_id": started["id"]}))["status"] == "idle"
        assert "profiles" in payload(await mcp.call_tool("list_browser_profiles", {}))
        stopped = payload(await mcp.call_tool("stop_session", {"session_id": started["id"], "strategy": "session"}))
        assert stopped["status"] == "stopped"


async def test_seed_aliases_and_refusals_are_tool_results(server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("SEED")
    fake.script(marker, [done("ran once")], when=agent_steps)
    async with mcp_session(server) as mcp:
        shell = payload(await mcp.call_tool("create_session", {}))
        assert shell["status"] == "created"
        ran = payload(await mcp.call_tool("run_task", {"task": f"{marker} Say it."}))
        closed = payload(await mcp.call_tool("wait_for_session", {"session_id": ran["id"]}))
        assert closed["status"] == "stopped" and closed["output"] == "ran once", "run_task closes after its task"

        missing = await mcp.call_tool("get_session", {"session_id": "00000000-0000-4000-8000-000000000000"})
        assert "Session not found" in error_text(missing)
        bad_model = await mcp.call_tool("run_session", {"task": "x", "model": "no-such-model"})
        assert "no-such-model" in error_text(bad_model)
        bad_strategy = await mcp.call_tool("stop_session", {"session_id": shell["id"], "strategy": "later"})
        assert "strategy" in error_text(bad_strategy)


def test_the_endpoint_takes_the_api_key_and_refuses_foreign_origins(server: ServerProcess) -> None:
    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    accept = {"Accept": "application/json, text/event-stream"}
    assert loopback.post(f"{server.base_url}/v3/mcp", json=hello, headers=accept).status_code == 401
    foreign = loopback.post(
        f"{server.base_url}/v3/mcp", json=hello, headers={**AUTH, **accept, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403 and foreign.json() == {"detail": "Origin not allowed"}
