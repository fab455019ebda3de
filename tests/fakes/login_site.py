"""A login fixture site for profile tests: pages that store a login and a page that reports what it sees.

* ``/set?cookie=N&value=V&local=K&session=S`` — answers with ``Set-Cookie: N=V`` (persistent) and, on load,
  sets ``localStorage[K] = V`` and ``sessionStorage[S] = V``.
* ``/forget?cookie=N`` — deletes cookie ``N``.
* ``/whoami?tag=T`` — records the cookies the request carried, and on load posts what the page's
  ``document.cookie``, ``localStorage`` and ``sessionStorage`` hold; both land in ``LoginState`` under ``T``.
"""

from __future__ import annotations

import html
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer

COOKIE_AGE = 86400


@dataclass
class LoginState:
    requests: dict[str, dict[str, str]] = field(default_factory=dict)
    reports: dict[str, dict[str, Any]] = field(default_factory=dict)
    stored: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_report(self, tag: str, timeout: float = 60.0) -> dict[str, Any]:
        """What ``/whoami?tag=T`` saw: ``{"requestCookies", "documentCookie", "local", "session"}``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if tag in self.reports and tag in self.requests:
                    return {"requestCookies": self.requests[tag], **self.reports[tag]}
            time.sleep(0.05)
        raise TimeoutError(f"no /whoami report tagged {tag}")


def _page(title: str, body: str, script: str = "") -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1>{body}<script>{script}</script></body></html>"
    )


def login_app(state: LoginState) -> Starlette:
    async def set_login(request: Request) -> Response:
        query = request.query_params
        value = query.get("value", "")
        steps = []
        if query.get("local"):
            steps.append(f"localStorage.setItem({json.dumps(query['local'])}, {json.dumps(value)});")
        if query.get("session"):
            steps.append(f"sessionStorage.setItem({json.dumps(query['session'])}, {json.dumps(value)});")
        response = _page("Logged in", f"<p>Stored {html.escape(value)}.</p>", "".join(steps))
        if query.get("cookie"):
            response.set_cookie(query["cookie"], value, max_age=COOKIE_AGE, path="/")
        with state.lock:
            state.stored.append(value)
        return response

    async def forget(request: Request) -> Response:
        response = _page("Forgotten", "<p>Cookie removed.</p>")
        response.delete_cookie(request.query_params.get("cookie", ""), path="/")
        return response

    async def whoami(request: Request) -> Response:
        tag = request.query_params.get("tag", "")
        with state.lock:
            state.requests[tag] = dict(request.cookies)
        script = (
            "const dump = (a) => Object.fromEntries(Array.from({length: a.length}, (_, i) => [a.key(i), "
            "a.getItem(a.key(i))]));"
            "const seen = {documentCookie: document.cookie, local: dump(localStorage), session: dump(sessionStorage)};"
            "document.getElementById('seen').textContent = JSON.stringify(seen);"
            f"fetch('/report?tag={tag}', {{method: 'POST', body: JSON.stringify(seen)}});"
        )
        return _page("Who am I", '<pre id="seen"></pre>', script)

    async def report(request: Request) -> Response:
        with state.lock:
            state.reports[request.query_params.get("tag", "")] = json.loads(await request.body())
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/set", set_login),
            Route("/forget", forget),
            Route("/whoami", whoami),
            Route("/report", report, methods=["POST"]),
        ]
    )


class LoginSite:
    def __init__(self) -> None:
        self.state = LoginState()
        self._server = ThreadedServer(login_app(self.state))

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> LoginSite:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.close()
