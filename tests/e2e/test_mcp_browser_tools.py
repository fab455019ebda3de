"""``/v3/mcp`` browser tools (spec §23.3) through the official ``mcp`` Python client, on a real server.

The client drives a fixture page through the tools (navigate, snapshot, fill and click by uid, evaluate, console
and network lists with credentials redacted, screenshots confined to the owner's area); two concurrent MCP
sessions each log in to the fixture site and see only their own cookie; ending one leaves the other's pages open;
a SIGKILLed shared Chromium is relaunched on the next call; ``browserId`` drives a raw browser instead; the shared
browser starts on first use and stops after ``SHARED_BROWSER_IDLE_S`` without owners.
"""

from __future__ import annotations

import asyncio
import html
import re
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import psutil
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.e2e.browser_support import create_browser
from tests.e2e.servers import api_client, running_server, server_fixture
from tests.support.asgi_thread import ThreadedServer
from tests.support.devtools_catalog import CHROME_DEVTOOLS_NAMES
from tests.support.display import needs_display
from tests.support.local_user import ask_as_nobody
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(240)]

API_KEY = "mcp-browser-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
BROWSER_TOOLS = CHROME_DEVTOOLS_NAMES


def _page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>")


PROBES: list[str] = []
"""Requests that reached the fixture site's ``/probe``."""


def login_site() -> Starlette:
    async def login(_: Request) -> Response:
        return _page(
            "Log in",
            '<form method="post" action="/login"><label>Name <input name="user"></label>'
            '<button type="submit">Log in</button></form><script>console.log("login page ready")</script>',
        )

    async def logged_in(request: Request) -> Response:
        user = str((await request.form()).get("user", ""))
        response = RedirectResponse("/me", status_code=303)
        response.set_cookie("who", user, httponly=False)
        return response

    async def me(request: Request) -> Response:
        who = html.escape(request.cookies.get("who", "nobody"))
        fetcher = "<script>fetch('/ping', {headers: {'Authorization': 'Bearer page-secret'}})</script>"
        return _page("Me", f"<h1>Welcome {who}</h1>{fetcher}")

    async def ping(_: Request) -> Response:
        return Response("pong")

    async def probe(request: Request) -> Response:
        PROBES.append(request.url.path)
        return Response("probed")

    async def ask(_: Request) -> Response:
        return _page("Ask", """<button onclick="document.title = confirm('Sure?') ? 'yes' : 'no'">Ask</button>""")

    return Starlette(
        routes=[
            Route("/login", login),
            Route("/login", logged_in, methods=["POST"]),
            Route("/me", me),
            Route("/ping", ping),
            Route("/ask", ask),
            Route("/probe", probe),
        ]
    )


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with ThreadedServer(login_site()) as served:
        yield served.url


server = server_fixture({"API_KEY": API_KEY})


@asynccontextmanager
async def mcp_session(server: ServerProcess) -> AsyncIterator[ClientSession]:
    async with (
        httpx2.AsyncClient(headers=AUTH, timeout=httpx2.Timeout(30, read=90)) as http,
        streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult), result
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    assert not result.is_error, text
    return text


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult) and result.is_error, result
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


def uid_of(snapshot: str, role: str, name: str) -> str:
    found = re.search(rf'{role} "{re.escape(name)}".*?\[uid=(\w+)\]', snapshot)
    assert found, snapshot
    return found.group(1)


async def log_in(session: ClientSession, site: str, user: str) -> str:
    await call(session, "navigate_page", type="url", url=f"{site}/login")
    snapshot = await call(session, "take_snapshot")
    await call(session, "fill", uid=uid_of(snapshot, "textbox", "Name"), value=user)
    await call(session, "click", uid=uid_of(snapshot, "button", "Log in"))
    return await call(session, "wait_for", text=f"Welcome {user}")


def shared_chromium(server: ServerProcess) -> list[psutil.Process]:
    """The shared browser's main Chromium process (its slot is the one after the pool's single slot)."""
    marker = f"slot-{server.slot_base + 1}"
    found = []
    for proc in server.children():
        try:
            name, line = proc.name(), proc.cmdline()
        except psutil.Error:  # it exited meanwhile
            continue
        if name == "chromium" and any(marker in a for a in line) and not any(a.startswith("--type=") for a in line):
            found.append(proc)
    return found


def shared_targets(server: ServerProcess) -> list[dict[str, Any]]:
    """The shared browser's CDP targets (``/json/list``): the owners' pages and any page Chromium made itself."""
    [chromium] = shared_chromium(server)
    port = next(a.split("=", 1)[1] for a in chromium.cmdline() if a.startswith("--remote-debugging-port="))
    targets: list[dict[str, Any]] = httpx2.get(f"http://127.0.0.1:{port}/json/list", timeout=10).json()
    return targets


async def test_the_client_drives_a_fixture_page_through_the_browser_tools(server: ServerProcess, site: str) -> None:
    async with mcp_session(server) as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(listed) >= BROWSER_TOOLS
        assert listed["click"].input_schema["required"] == ["uid"]
        assert "browserId" in listed["navigate_page"].input_schema["properties"]

        first = await call(session, "list_pages")
        assert re.search(r"^1: about:blank \[selected\]$", first, re.M), first
        # the shared browser's DevTools port answers the server, and no other local user (issue 31)
        [chromium] = shared_chromium(server)
        port = int(next(a.split("=", 1)[1] for a in chromium.cmdline() if a.startswith("--remote-debugging-port=")))
        stranger = await asyncio.to_thread(ask_as_nobody, port, "GET /json/version")
        assert "webSocketDebuggerUrl" not in stranger and "HTTP/1.1" not in stranger, stranger
        welcome = await log_in(session, site, "ada")
        assert 'heading "Welcome ada"' in welcome
        cookie = await call(session, "evaluate_script", function="() => document.cookie")
        assert '"who=ada"' in cookie

        heading = uid_of(await call(session, "take_snapshot"), "heading", "Welcome ada")
        text = await call(session, "evaluate_script", function="(el) => el.textContent", args=[{"uid": heading}])
        assert '"Welcome ada"' in text

        assert "login page ready" not in await call(session, "list_console_messages")  # an earlier document's
        console = await call(session, "list_console_messages", includePreservedMessages=True)
        assert "login page ready" in console
        requests = await call(session, "list_network_requests", resourceTypes=["fetch"])
        assert f"{site}/ping" in requests and "page-secret" not in requests and "[redacted]" in requests

        shot = await session.call_tool("take_screenshot", {})
        assert any(isinstance(block, types.ImageContent) for block in shot.content)
        saved = await call(session, "take_screenshot", filePath="me.png")
        path = Path(re.search(r"Saved screenshot to (\S+?)\.$", saved, re.M).group(1))  # type: ignore[union-attr]
        assert path.is_file() and path.parent.parent == server.home / "data" / "mcp"
        assert "plain file name" in await refused(session, "take_screenshot", filePath="../../escape.png")
        assert "plain file name" in await refused(session, "take_screenshot", filePath="/tmp/escape.png")

        await call(session, "navigate_page", type="url", url=f"{site}/login")
        assert "older snapshot" in await refused(session, "click", uid=heading)
        assert "Only http(s)" in await refused(session, "navigate_page", type="url", url="file:///etc/passwd")
        assert "No page has id 9" in await refused(session, "select_page", pageId=9)
        assert "last open page" in await refused(session, "close_page", pageId=1)
        pages = await call(session, "new_page", url=f"{site}/me")
        assert re.search(rf"^2: {re.escape(site)}/me \[selected\]$", pages, re.M), pages
        assert "uid" in await refused(session, "click")  # a missing argument is an isError result too

        await call(session, "navigate_page", type="url", url=f"{site}/ask")
        clicked = await call(session, "click", uid=uid_of(await call(session, "take_snapshot"), "button", "Ask"))
        assert 'confirm dialog: "Sure?"' in clicked
        assert "Open dialog" in await call(session, "take_snapshot")
        await call(session, "handle_dialog", action="accept")
        assert '"yes"' in await call(session, "evaluate_script", function="() => document.title")
        assert "No open dialog" in await refused(session, "handle_dialog", action="dismiss")
    assert not path.exists()  # the owner's file area goes with its session


async def test_two_sessions_see_only_their_own_cookie_and_ending_one_leaves_the_other(
    server: ServerProcess, site: str
) -> None:
    async with mcp_session(server) as bob:
        async with mcp_session(server) as eve:
            bob_page, eve_page = await asyncio.gather(log_in(bob, site, "bob"), log_in(eve, site, "eve"))
            assert "Welcome bob" in bob_page and "Welcome eve" in eve_page
            assert '"who=bob"' in await call(bob, "evaluate_script", function="() => document.cookie")
            assert '"who=eve"' in await call(eve, "evaluate_script", function="() => document.cookie")
            await call(eve, "navigate_page", type="reload")
            assert "Welcome eve" in await call(eve, "take_snapshot")
            eve_pages = await call(eve, "list_pages")
            assert eve_pages.count(f"{site}/me") == 1
            # An owner's window holds its pages only: no omnibox-popup WebUI (a renderer more per owner) beside them
            targets = await asyncio.to_thread(shared_targets, server)
            assert [t["url"] for t in targets if t["type"] == "page"].count(f"{site}/me") == 2, targets
            assert not [t for t in targets if t["url"].startswith("chrome://")], targets
        # eve's MCP session ended (the client sent DELETE): bob's page is still open, still bob's
        listing = await call(bob, "list_pages")
        assert re.search(rf"^1: {re.escape(site)}/me \[selected\]$", listing, re.M), listing
        assert "Welcome bob" in await call(bob, "take_snapshot")


async def test_a_killed_shared_chromium_is_relaunched_on_the_next_call(server: ServerProcess, site: str) -> None:
    async with mcp_session(server) as session:
        await call(session, "navigate_page", type="url", url=f"{site}/login")
        [victim] = shared_chromium(server)
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        after = await call(session, "navigate_page", type="url", url=f"{site}/me")
        assert f"{site}/me" in after
        [relaunched] = shared_chromium(server)
        assert relaunched.pid != victim.pid


async def test_browser_id_drives_a_raw_browser_instead(server: ServerProcess, site: str) -> None:
    with api_client(server) as http:
        raw = create_browser(http)
        try:
            async with mcp_session(server) as session:
                await call(session, "navigate_page", type="url", url=f"{site}/login", browserId=raw["id"])
                snapshot = await call(session, "take_snapshot", browserId=raw["id"])
                assert 'button "Log in"' in snapshot
                assert f"{site}/login [selected]" in await call(session, "list_pages", browserId=raw["id"])
                assert f"{site}/login" not in await call(session, "list_pages")  # its own page is elsewhere
                assert "Browser not found" in await refused(session, "list_pages", browserId="nope")
            stopped = http.patch(f"/v3/browsers/{raw['id']}", json={"action": "stop"})
            assert stopped.status_code == 200
            async with mcp_session(server) as session:
                assert "stopped" in await refused(session, "list_pages", browserId=raw["id"])
        finally:
            http.patch(f"/v3/browsers/{raw['id']}", json={"action": "stop"})


async def test_the_shared_browser_obeys_the_network_policy_stops_when_idle_and_starts_again(
    tmp_path: Path, site: str
) -> None:
    env = {"SHARED_BROWSER_IDLE_S": "1", "NETWORK_POLICY": "public-only"}
    with running_server(tmp_path / "idle-home", {**env, "API_KEY": API_KEY}) as idle_server:
        assert shared_chromium(idle_server) == []  # started on first use, not with the server
        async with mcp_session(idle_server) as session:
            refusal = await refused(session, "navigate_page", type="url", url=f"{site}/login")
            assert "network policy" in refusal
            [first] = shared_chromium(idle_server)
            # the page's own requests meet the sandbox's egress enforcer, not only our URL check
            probe = f"async () => (await fetch('{site}/probe', {{mode: 'no-cors'}})).type"
            await call(session, "evaluate_script", function=probe)
            assert PROBES == []
        await asyncio.to_thread(wait_until, lambda: not shared_chromium(idle_server), 30, what="the idle stop")
        async with mcp_session(idle_server) as session:
            assert "1: about:blank [selected]" in await call(session, "list_pages")
            [second] = shared_chromium(idle_server)
        assert second.pid != first.pid
