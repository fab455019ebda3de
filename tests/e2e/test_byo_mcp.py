"""Bring your own MCP server (spec §23.4): chrome-devtools-mcp and Playwright MCP attach to a raw browser's
``cdpUrl`` through port 8420 and read a fixture page.

Both servers come from the npm registry (pinned in ``tests/e2e/byo_mcp/package.json`` with its lock, test-only,
installed once into a cache outside the clone with the Node 24 they run under) and are driven over stdio by the
official ``mcp`` Python client, exactly as a desktop MCP host would start them. The flags are the ones the README's
recipes show. Playwright MCP gets an empty browsers directory and is told never to download one: the only browser
it can reach is ours, through the CDP endpoint. ``GET {cdp base}/json/version`` is exercised by the http forms:
Playwright's discovery sends the Bearer header (the answer names the socket without a token) and Puppeteer's (in
chrome-devtools-mcp's ``--browserUrl``) sends no header, so the token rides as ``?token=`` and stays in the answer.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult, TextContent

from tests.e2e.browser_support import cdp_evaluate, forwarded_for
from tests.e2e.servers import SHARED_API_KEY, server_fixture
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.display import needs_display
from tests.support.npm_clients import NODE, NpmClients
from tests.support.server import ServerProcess

# A cold install is ~70 MB (4 packages and Node); the cached one is a directory check.
pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(600)]

API_KEY = SHARED_API_KEY
PACKAGE_DIR = Path(__file__).parent / "byo_mcp"
CHROME_DEVTOOLS_MCP = Path("node_modules/chrome-devtools-mcp/build/src/bin/chrome-devtools-mcp.js")
PLAYWRIGHT_MCP = Path("node_modules/@playwright/mcp/cli.js")
INSTALL_TIMEOUT = 600.0
CALL_TIMEOUT = 60.0
HELLO = "Hello from the fixture site"


MCP_SERVERS = NpmClients("byo-mcp", PACKAGE_DIR, (CHROME_DEVTOOLS_MCP, PLAYWRIGHT_MCP), timeout=INSTALL_TIMEOUT)


@pytest.fixture(scope="session")
def mcp_servers() -> Path:
    """``node_modules`` with both MCP servers and Node (cached outside the clone, keyed by the lock file)."""
    return MCP_SERVERS.ensure()


# -- the server, the fixture site and one raw browser per test ------------------------------------------------
# one server for the raw-browser modules that need no fresh one, in this test process (tests/e2e/servers.py)
server = server_fixture({"API_KEY": API_KEY}, shared=True)


def socket_url(browser: dict[str, Any]) -> str:
    """``cdpUrl`` without its ``?token=``: the recipes pass the token as a header."""
    return str(browser["cdpUrl"]).split("?")[0]


def http_url(browser: dict[str, Any]) -> str:
    """The http form of ``cdpUrl`` (what discovery clients are given)."""
    return socket_url(browser).replace("ws://", "http://", 1)


# -- driving an MCP server over stdio -------------------------------------------------------------------------
def _node_env(install: Path, home: Path) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    return {
        "PATH": f"{(install / NODE).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(home),
        "NO_PROXY": no_proxy,
        "no_proxy": no_proxy,
    }


@asynccontextmanager
async def mcp_client(install: Path, script: Path, args: list[str], env: dict[str, str]) -> AsyncIterator[ClientSession]:
    home = Path(env["HOME"])
    # the servers write logs and snapshots under their working directory (Playwright MCP's .playwright-mcp/)
    params = StdioServerParameters(command=str(install / NODE), args=[str(install / script), *args], env=env, cwd=home)
    with (home / "server.stderr").open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text a tool answers; a tool error fails the test with its text."""
    result = await session.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
    assert isinstance(result, CallToolResult), result
    text = "\n".join(part.text for part in result.content if isinstance(part, TextContent))
    assert not result.is_error, f"{tool} failed: {text}"
    return text


def chrome_devtools_args(*connect: str) -> list[str]:
    return [*connect, "--no-usage-statistics", "--no-performance-crux"]


def chrome_devtools_env(install: Path, home: Path) -> dict[str, str]:
    return {
        **_node_env(install, home),
        "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS": "1",
        "CHROME_DEVTOOLS_MCP_NO_UPDATE_CHECKS": "1",
    }


def playwright_env(install: Path, home: Path) -> dict[str, str]:
    browsers = home / "no-browsers"  # empty: nothing to launch but what the CDP endpoint gives
    browsers.mkdir(parents=True, exist_ok=True)
    return {
        **_node_env(install, home),
        "PLAYWRIGHT_BROWSERS_PATH": str(browsers),
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    }


def assert_nothing_downloaded(home: Path) -> None:
    assert not any((home / "no-browsers").iterdir()), "Playwright MCP fetched a browser of its own"


def bearer(browser: dict[str, Any]) -> str:
    return f"Bearer {browser['token']}"


# -- chrome-devtools-mcp ---------------------------------------------------------------------------------------
async def open_and_snapshot(mcp: ClientSession, url: str) -> str:
    """Navigate the selected tab (``list_pages`` names it, e.g. ``1: about:blank [selected]``) and snapshot it."""
    listed = await call(mcp, "list_pages")
    selected = re.search(r"^(\d+): .*\[selected\]", listed, re.MULTILINE)
    assert selected is not None, listed
    page_id = int(selected.group(1))
    await call(mcp, "navigate_page", pageId=page_id, type="url", url=url)
    return await call(mcp, "take_snapshot", pageId=page_id)


async def test_chrome_devtools_mcp_snapshots_a_page_through_the_ws_endpoint(
    mcp_servers: Path, browser: dict[str, Any], pages: ThreadedServer, tmp_path: Path
) -> None:
    headers = json.dumps({"Authorization": bearer(browser)})
    args = chrome_devtools_args("--wsEndpoint", socket_url(browser), "--wsHeaders", headers)
    async with mcp_client(mcp_servers, CHROME_DEVTOOLS_MCP, args, chrome_devtools_env(mcp_servers, tmp_path)) as mcp:
        snapshot = await open_and_snapshot(mcp, f"{pages.url}/hello")
    assert HELLO in snapshot and "Hello fixture" in snapshot
    assert cdp_evaluate(browser["cdpUrl"], "location.href") == f"{pages.url}/hello"  # our browser, not its own


async def test_chrome_devtools_mcp_discovers_the_socket_from_the_http_form(
    mcp_servers: Path, server: ServerProcess, browser: dict[str, Any], pages: ThreadedServer, tmp_path: Path
) -> None:
    browser_url = f"{http_url(browser)}?token={browser['token']}"  # Puppeteer's discovery sends no headers
    discovered = loopback.get(f"{http_url(browser)}/json/version?token={browser['token']}").json()
    assert discovered["webSocketDebuggerUrl"] == browser["cdpUrl"]
    assert discovered["webSocketDebuggerUrl"].startswith(f"ws://127.0.0.1:{server.port}/v3/browsers/")
    args = chrome_devtools_args("--browserUrl", browser_url)
    async with mcp_client(mcp_servers, CHROME_DEVTOOLS_MCP, args, chrome_devtools_env(mcp_servers, tmp_path)) as mcp:
        assert HELLO in await open_and_snapshot(mcp, f"{pages.url}/hello")


# -- Playwright MCP --------------------------------------------------------------------------------------------
async def test_playwright_mcp_snapshots_a_page_through_the_ws_endpoint(
    mcp_servers: Path, browser: dict[str, Any], pages: ThreadedServer, tmp_path: Path
) -> None:
    args = ["--cdp-endpoint", socket_url(browser), "--cdp-header", f"Authorization: {bearer(browser)}"]
    async with mcp_client(mcp_servers, PLAYWRIGHT_MCP, args, playwright_env(mcp_servers, tmp_path)) as mcp:
        await call(mcp, "browser_navigate", url=f"{pages.url}/hello")
        snapshot = await call(mcp, "browser_snapshot")
    assert HELLO in snapshot
    assert cdp_evaluate(browser["cdpUrl"], "location.href") == f"{pages.url}/hello"
    assert_nothing_downloaded(tmp_path)


async def test_playwright_mcp_discovers_the_socket_with_its_header(
    mcp_servers: Path, browser: dict[str, Any], pages: ThreadedServer, tmp_path: Path
) -> None:
    discovered = loopback.get(f"{http_url(browser)}/json/version/", headers={"Authorization": bearer(browser)})
    assert discovered.json()["webSocketDebuggerUrl"] == socket_url(browser)  # no token in it: the header goes again
    args = ["--cdp-endpoint", http_url(browser), "--cdp-header", f"Authorization: {bearer(browser)}"]
    async with mcp_client(mcp_servers, PLAYWRIGHT_MCP, args, playwright_env(mcp_servers, tmp_path)) as mcp:
        await call(mcp, "browser_navigate", url=f"{pages.url}/hello")
        assert HELLO in await call(mcp, "browser_snapshot")
    assert_nothing_downloaded(tmp_path)


def test_discovery_without_a_token_is_refused(browser: dict[str, Any]) -> None:
    refused = loopback.get(f"{http_url(browser)}/json/version", headers=forwarded_for())
    assert refused.status_code == 401
    wrong = loopback.get(f"{http_url(browser)}/json/version", headers={**forwarded_for(), "Authorization": "Bearer x"})
    assert wrong.status_code == 401
