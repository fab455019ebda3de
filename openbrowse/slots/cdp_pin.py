"""What the CDP gate of a sandboxed slot serves: the pinned ``/json/version`` and WebSocket upgrades, nothing else.

Chromium's ``/json/version`` names the browser's socket (``/devtools/browser/<guid>``). It is read once, right
after Chromium starts and before anything untrusted ran in the slot, and kept. Every later ``/json/version`` on
the host-side gate (Playwright's ``connect_over_cdp``, browser-use, the API's discovery) is answered from that copy,
so nothing the slot says later decides where the server connects. The target list (``GET /json`` and
``/json/list``) is passed on one request per connection; every other ``/json/*`` request (``new``, ``close``,
``activate``, ...) is refused. The server's own start-up and hand-over checks speak to Chromium through the
namespace directly.
"""

from __future__ import annotations

import json
from typing import Any

from openbrowse.slots.gate import HeadScreen, HeadVerdict

__all__ = ["cdp_screen"]

_VERSION_PATHS = frozenset({"/json/version", "/json/version/"})
_LIST_PATHS = frozenset({"/json", "/json/", "/json/list", "/json/list/"})


def _response(status: str, body: bytes, content_type: str) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    return head.encode("ascii") + b"\r\n" + body


def cdp_screen(version: dict[str, Any], port: int) -> HeadScreen:
    """The screen for the CDP gate on ``port`` whose browser answered ``version`` at its start."""
    host = f"127.0.0.1:{port}"
    pinned = _response("200 OK", json.dumps(version, indent=3).encode(), "application/json; charset=UTF-8")
    refused = _response("404 Not Found", b"Only /json/version and /devtools/ sockets are served here.\n", "text/plain")

    def screen(head: bytes) -> HeadVerdict:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            return HeadVerdict(reply=refused)
        method, target = parts[0], parts[1].decode("latin-1")
        path = target.split("?", 1)[0]
        if method == b"GET" and path in _VERSION_PATHS:
            return HeadVerdict(reply=pinned)
        if method == b"GET" and path in _LIST_PATHS:
            return HeadVerdict(forward=f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode(), one_shot=True)
        upgrade = any(
            name.strip().lower() == b"upgrade" and value.strip().lower() == b"websocket"
            for name, _, value in (line.partition(b":") for line in lines[1:])
        )
        if method == b"GET" and upgrade and path.startswith("/devtools/"):
            return HeadVerdict(forward=head)
        return HeadVerdict(reply=refused)

    return screen
