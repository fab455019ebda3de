"""A flood of WebSocket bridges is held by the process's descriptor budget (issue 31), through a real server with a
small open-files limit, a real Chromium and real WebSocket clients.

The per-browser cap is lifted out of the way (``CDP_MAX_CONNECTIONS_PER_BROWSER=1000``), as if the flood were spread
over many browsers and viewers: what stops it is the budget. Each bridge beyond it is refused before its handshake
with a 503 that says so, the bridges already open keep working, the server keeps answering ``/health`` and the
API, its descriptors stay far from its limit, and the budget comes back when the flood closes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.sync.connection import Connection

from openbrowse.api.bridge_admission import BUDGET_SPENT
from openbrowse.network.fd_budget import RESERVED_FDS
from tests.e2e.browser_support import needs_display
from tests.e2e.servers import api_client, raw_browser, running_server
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "bridge-budget-key-0123456789abcdef"
OPEN_FILES = 640
"""The server's soft limit: a budget of 128 descriptors (the rest is the reserve), i.e. about 16 CDP bridges."""
MOST_ATTEMPTS = 200
REFUSALS_WANTED = 10


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    settings = {"API_KEY": API_KEY, "CDP_MAX_CONNECTIONS_PER_BROWSER": "1000"}
    with running_server(tmp_path_factory.mktemp("budget-home"), settings, open_files=OPEN_FILES) as process:
        yield process


@pytest.fixture
def browser(server: ServerProcess) -> Iterator[dict[str, Any]]:
    with api_client(server) as http, raw_browser(http) as created:
        yield created


def browser_version(socket: Connection) -> str:
    socket.send(json.dumps({"id": 1, "method": "Browser.getVersion"}))
    while True:
        answer: dict[str, Any] = json.loads(socket.recv(timeout=60))
        if answer.get("id") == 1:
            return str(answer["result"]["product"])


def test_a_flood_of_cdp_sockets_is_refused_by_the_descriptor_budget(
    server: ServerProcess, browser: dict[str, Any]
) -> None:
    url = str(browser["cdpUrl"])
    held: list[ClientConnection] = []
    refusals: list[InvalidStatus] = []
    try:
        for _ in range(MOST_ATTEMPTS):
            try:
                held.append(connect(url, open_timeout=60))
            except InvalidStatus as exc:
                refusals.append(exc)
                if len(refusals) >= REFUSALS_WANTED:
                    break
        assert held and len(refusals) == REFUSALS_WANTED, (len(held), len(refusals))
        for refused in refusals:
            assert refused.response.status_code == 503
            assert json.loads(refused.response.body)["detail"] == BUDGET_SPENT
            assert refused.response.headers["Retry-After"].isdigit()
        # everything else still answers while the flood holds its sockets
        assert loopback.get(f"{server.base_url}/health", timeout=30).status_code == 200
        with api_client(server) as http:
            assert http.get(f"/v3/browsers/{browser['id']}").json()["status"] == "active"
        assert browser_version(held[0]).startswith(("HeadlessChrome", "Chrome"))
        assert browser_version(held[-1]).startswith(("HeadlessChrome", "Chrome"))
        assert server.open_fds() <= OPEN_FILES - RESERVED_FDS // 2, "the reserve stayed free for the rest"
    finally:
        for socket in held:
            socket.close()
    # the flood's share came back: a new client is admitted
    with connect(url, open_timeout=60) as again:
        assert browser_version(again).startswith(("HeadlessChrome", "Chrome"))
