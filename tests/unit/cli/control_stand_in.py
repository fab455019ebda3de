"""A stand-in for the server's browser control API (spec §20) at the wire, for the CLI's tests.

It records every request and answers with bodies shaped as §20.2 says: ``b1`` is a raw browser, ``s1`` an agent
session, any other id is unknown (404, as §2.3). A test can set the answer of one route with :meth:`answer`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from click.testing import Result
from starlette.requests import Request
from starlette.responses import JSONResponse

Openbrowse = Callable[..., Result]
"""``openbrowse("b1", "tabs", api_key=None, input=None)`` runs ``openbrowse browser b1 tabs`` against the stand-in."""

TAB = {
    "targetId": "9F2C",
    "tabId": "t1",
    "suggestedTargetId": "t1",
    "title": "Example Domain",
    "url": "https://example.com/",
}
LABELLED = {**TAB, "targetId": "77AB", "tabId": "t2", "suggestedTargetId": "research", "label": "research"}
SNAPSHOT_TEXT = '- heading "Example Domain" [ref=e1]\n- link "More information..." [ref=e2]'
DEFAULT_ANSWERS: dict[tuple[str, str], Any] = {
    ("GET", ""): {
        "running": True,
        "engine": "playwright",
        "attached": True,
        "controllable": True,
        "reason": None,
        "activeTargetId": "9F2C",
        "tabs": [TAB],
    },
    ("GET", "/tabs"): {"running": True, "tabs": [TAB, LABELLED]},
    ("POST", "/tabs/open"): {**TAB, "tabId": "t3", "url": "https://example.org/"},
    ("GET", "/snapshot"): {
        "ok": True,
        "format": "ai",
        "targetId": "9F2C",
        "url": TAB["url"],
        "snapshot": SNAPSHOT_TEXT,
        "refs": {"e1": {"role": "heading", "name": "Example Domain"}},
        "stats": {"lines": 2, "chars": 70, "refs": 2, "interactive": 1},
    },
    ("POST", "/screenshot"): {
        "ok": True,
        "path": "/data/browsers/b1/screenshots/shot-1.png",
        "targetId": "9F2C",
        "url": "/v3/browsers/b1/files/screenshots/shot-1.png",
        "mimeType": "image/png",
    },
    ("GET", "/console"): {
        "ok": True,
        "entries": [
            {"type": "error", "text": "boom", "location": {"url": "https://example.com/app.js", "lineNumber": 3}}
        ],
    },
    ("GET", "/cookies"): {
        "ok": True,
        "targetId": "9F2C",
        "cookies": [{"name": "sid", "value": "abc123", "domain": "example.com", "path": "/"}],
    },
    ("GET", "/storage/local"): {"ok": True, "origin": "https://example.com", "items": {"theme": "dark"}},
}


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    authorization: str | None


class ControlStandIn:
    """Records requests; answers lookups of ``b1``/``s1`` and every control route, or what a test set up."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.answers: dict[tuple[str, str], tuple[int, Any]] = {}

    def answer(self, method: str, route: str, body: Any, status: int = 200) -> None:
        self.answers[(method, route)] = (status, body)

    def control_calls(self) -> list[Recorded]:
        """The requests past the id lookups: those under ``…/{id}/browser``."""
        return [request for request in self.requests if request.path.split("/")[4:5] == ["browser"]]

    async def handle(self, request: Request) -> JSONResponse:
        raw = await request.body()
        path = request.url.path
        recorded = Recorded(
            request.method,
            path,
            dict(request.query_params),
            json.loads(raw) if raw else None,
            request.headers.get("authorization"),
        )
        self.requests.append(recorded)
        _, _, kind, target, *rest = path.split("/")
        if (kind, target) not in (("browsers", "b1"), ("sessions", "s1")):
            return JSONResponse({"detail": f"{kind[:-1].title()} not found"}, status_code=404)
        if not rest:
            return JSONResponse({"id": target, "status": "active"})
        route = "".join(f"/{part}" for part in rest[1:])
        status, body = self.answers.get((request.method, route), (200, DEFAULT_ANSWERS.get((request.method, route))))
        return JSONResponse(body if body is not None else {"ok": True, "targetId": "9F2C"}, status_code=status)
