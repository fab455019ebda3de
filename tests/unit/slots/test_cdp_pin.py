"""The CDP gate's screen: the pinned /json/version, the target list one request at a time, sockets, nothing else."""

from __future__ import annotations

import json

from openbrowse.slots.cdp_pin import cdp_screen

VERSION = {"Browser": "Chrome/1", "webSocketDebuggerUrl": "ws://127.0.0.1:9222/devtools/browser/pinned"}


def _head(line: str, *headers: str) -> bytes:
    return "\r\n".join([line, "Host: 127.0.0.1:9222", *headers]).encode() + b"\r\n\r\n"


def test_json_version_is_answered_from_the_pinned_copy() -> None:
    screen = cdp_screen(VERSION, 9222)
    for path in ("/json/version", "/json/version/"):
        verdict = screen(_head(f"GET {path} HTTP/1.1"))
        assert verdict.reply is not None
        head, _, body = verdict.reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"Connection: close" in head
        assert json.loads(body)["webSocketDebuggerUrl"] == VERSION["webSocketDebuggerUrl"]


def test_websocket_upgrades_to_devtools_are_forwarded_as_they_are() -> None:
    head = _head("GET /devtools/browser/pinned HTTP/1.1", "Upgrade: websocket", "Connection: Upgrade")
    verdict = cdp_screen(VERSION, 9222)(head)
    assert verdict.reply is None and verdict.forward == head and not verdict.one_shot


def test_the_target_list_is_one_request_per_connection() -> None:
    verdict = cdp_screen(VERSION, 9222)(_head("GET /json/list HTTP/1.1", "Connection: keep-alive"))
    assert verdict.one_shot and verdict.forward == b"GET /json/list HTTP/1.1\r\nHost: 127.0.0.1:9222\r\n\r\n"


def test_everything_else_is_refused() -> None:
    screen = cdp_screen(VERSION, 9222)
    for line in (
        "PUT /json/new?http://x/ HTTP/1.1",
        "GET /json/close/1 HTTP/1.1",
        "GET /devtools/page/1 HTTP/1.1",
        "x",
    ):
        verdict = screen(_head(line))
        assert verdict.reply is not None and verdict.reply.startswith(b"HTTP/1.1 404"), line
