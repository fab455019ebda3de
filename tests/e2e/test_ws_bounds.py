"""The WebSocket bridges hold a bounded amount for any client (issue 31), through a real server, a real Chromium
and real WebSocket clients:

* one CDP connection more than ``CDP_MAX_CONNECTIONS_PER_BROWSER`` (one live view more than
  ``LIVE_VIEW_MAX_CONNECTIONS``) is refused with a 429 that names the setting;
* a client frame over ``CDP_MAX_FRAME_FROM_CLIENT_MB``, or a browser frame over ``CDP_MAX_FRAME_FROM_BROWSER_MB``,
  closes that connection (1009) and no other;
* a client that never reads makes the bridge stop reading from Chromium: ``/metrics`` shows the bridge paused with
  at most one frame held and one queued, however much the client asked for; then it reads everything, in order.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection, connect

from tests.e2e.servers import api_client, raw_browser, server_fixture
from tests.support.display import needs_display
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "bridge-bounds-key-0123456789abcdef"
CDP_CAP = 2
MIB = 1 << 20
ANSWER_CHARS = 512 * 1024
ASKED = 80  # 40 MiB of answers: far more than sockets and the client's own queue absorb


server = server_fixture(
    {
        "API_KEY": API_KEY,
        "CDP_MAX_CONNECTIONS_PER_BROWSER": str(CDP_CAP),
        "CDP_MAX_FRAME_FROM_CLIENT_MB": "1",
        "CDP_MAX_FRAME_FROM_BROWSER_MB": "1",
        "LIVE_VIEW_MAX_CONNECTIONS": "1",
    }
)


@pytest.fixture
def browser(server: ServerProcess) -> Iterator[dict[str, Any]]:
    with api_client(server) as http, raw_browser(http) as created:
        yield created


class Cdp:
    """A flat-mode CDP client on one socket; ``max_queue=1``: it reads ahead at most one frame itself."""

    def __init__(self, url: str) -> None:
        self.socket: ClientConnection = connect(url, max_size=None, max_queue=1, open_timeout=30)
        self._ids = itertools.count(1)

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        call_id = next(self._ids)
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.socket.send(json.dumps(message))
        return call_id

    def reply(self, call_id: int) -> dict[str, Any]:
        while True:
            answer: dict[str, Any] = json.loads(self.socket.recv(timeout=60))
            if answer.get("id") == call_id:
                return answer

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        return self.reply(self.send(method, params, session)).get("result", {})

    def page_session(self) -> str:
        page = next(t for t in self.call("Target.getTargets")["targetInfos"] if t["type"] == "page")
        return str(self.call("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"])

    def evaluate(self, expression: str, session: str) -> Any:
        return self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)

    def close_code(self) -> int | None:
        """Read until the server closes; the code it closed with."""
        try:
            while True:
                self.socket.recv(timeout=60)
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd else None


def cdp_url(browser: dict[str, Any]) -> str:
    return str(browser["cdpUrl"])


def refusal_of(url: str) -> InvalidStatus:
    with pytest.raises(InvalidStatus) as refused:
        connect(url, open_timeout=30).close()
    return refused.value


def gauge(server: ServerProcess, name: str) -> float:
    text = httpx.get(f"{server.base_url}/metrics", headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30).text
    return next(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and sample.labels.get("kind") == "cdp"
    )


def test_one_cdp_connection_over_the_cap_is_refused(browser: dict[str, Any]) -> None:
    first, second = Cdp(cdp_url(browser)), Cdp(cdp_url(browser))
    try:
        refused = refusal_of(cdp_url(browser))
        assert refused.response.status_code == 429
        assert json.loads(refused.response.body)["detail"] == (
            f"This browser already has {CDP_CAP} connections open, the most allowed "
            "(CDP_MAX_CONNECTIONS_PER_BROWSER); close one first."
        )
        assert first.call("Browser.getVersion")["product"].startswith(("HeadlessChrome", "Chrome"))
    finally:
        first.socket.close()
    wait_until(lambda: _connects(cdp_url(browser)), 30, what="a freed place to be taken")
    second.socket.close()


def _connects(url: str) -> bool:
    try:
        connect(url, open_timeout=30).close()
    except InvalidStatus:
        return False
    return True


def test_an_oversized_client_frame_closes_that_connection_only(browser: dict[str, Any]) -> None:
    sender, bystander = Cdp(cdp_url(browser)), Cdp(cdp_url(browser))
    try:
        sender.socket.send(json.dumps({"id": 1, "method": "Runtime.evaluate", "params": {"expression": "1" * MIB}}))
        assert sender.close_code() == 1009
        session = bystander.page_session()
        assert bystander.evaluate("6 * 7", session)["result"]["value"] == 42
    finally:
        bystander.socket.close()


def test_an_oversized_browser_frame_closes_that_connection_only(browser: dict[str, Any]) -> None:
    asker, bystander = Cdp(cdp_url(browser)), Cdp(cdp_url(browser))
    try:
        session = asker.page_session()
        asker.send("Runtime.evaluate", {"expression": f"'x'.repeat({2 * MIB})", "returnByValue": True}, session)
        assert asker.close_code() == 1009
        other = bystander.page_session()
        assert bystander.evaluate("'still here'", other)["result"]["value"] == "still here"
    finally:
        bystander.socket.close()


def test_a_client_that_never_reads_pauses_the_bridge_with_little_held(
    server: ServerProcess, browser: dict[str, Any]
) -> None:
    reader = Cdp(cdp_url(browser))
    try:
        session = reader.page_session()
        expression = f"'y'.repeat({ANSWER_CHARS})"
        ids = [reader.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)]
        ids += [
            reader.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
            for _ in range(ASKED - 1)
        ]
        wait_until(lambda: gauge(server, "openbrowse_ws_bridge_upstream_paused") >= 1, 120, what="the bridge to pause")
        assert gauge(server, "openbrowse_ws_bridge_held_frames") <= 1
        assert gauge(server, "openbrowse_ws_bridge_held_bytes") <= ANSWER_CHARS + 4096
        assert gauge(server, "openbrowse_ws_bridge_upstream_queued_frames") <= 2
        answers = [reader.reply(call_id) for call_id in ids]  # nothing was dropped: all arrive, in order
        assert all(len(answer["result"]["result"]["value"]) == ANSWER_CHARS for answer in answers)
    finally:
        reader.socket.close()


def test_one_live_view_over_the_cap_is_refused(server: ServerProcess, browser: dict[str, Any]) -> None:
    live = urlsplit(browser["liveUrl"])
    token = parse_qs(live.query)["token"][0]
    url = f"ws://127.0.0.1:{server.port}/vnc/{browser['id']}/websockify?token={token}"
    viewer = connect(url, subprotocols=["binary"], open_timeout=60)  # type: ignore[list-item]
    try:
        refused = refusal_of(url)
        assert refused.response.status_code == 429
        assert "(LIVE_VIEW_MAX_CONNECTIONS)" in json.loads(refused.response.body)["detail"]
    finally:
        viewer.close()
