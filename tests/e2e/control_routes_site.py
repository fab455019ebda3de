"""The fixture site of the control-route end-to-end tests (``test_control_routes*.py``), and their shared helpers.

Two origins: ``ControlSite.url`` serves the pages below, ``ControlSite.other_url`` the page its ``/frame`` embeds
(so the iframe is genuinely cross-origin). Everything the browser sends back lands in :class:`SiteLog`, so a test
can assert what the site received rather than what the API answered.

Pages: ``/form`` (a contact form and one gadget per ``/act`` kind), ``/dialogs`` (alert, confirm, prompt), ``/files``
(download links: one served at once, one held until the test releases it), ``/slow-link`` (a link to a
page held the same way), ``/upload`` (a file input that posts the
chosen file's content back), ``/frame`` (the cross-origin iframe with a button), ``/noisy`` (console errors and an
uncaught error), ``/fetcher`` (fetch requests, one with an ``Authorization`` header), ``/echo`` (what the site saw
of this request), ``/private`` (HTTP basic auth), ``/article`` (text for ``/extract``).
"""

from __future__ import annotations

import asyncio
import base64
import html
import threading
from dataclasses import dataclass, field
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer

REPORT = b"id,amount\r\n1,42.00\r\n2,17.50\r\n\x00\xff binary tail"
SLOW_REPORT = b"the report that took its time\n" * 50
SECRET_BEARER = "Bearer sekrit-fixture-token"
BASIC_USER, BASIC_PASSWORD = "ada", "open-sesame"


def page(title: str, body: str) -> HTMLResponse:
    return HTMLResponse(
        f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title></head>"
        f"<body style='font:16px sans-serif;margin:20px'>{body}</body></html>"
    )


FORM = """<h1>Contact</h1>
<form method="post" action="/form">
  <label>Your name <input name="name"></label>
  <label>Email <input name="email" type="email"></label>
  <label>Topic <select name="topic"><option>General</option><option>Billing</option></select></label>
  <label><input type="checkbox" name="subscribe" value="yes"> Subscribe</label>
  <button type="submit">Send message</button>
</form>
<p id="status">idle</p>
<script>function say(text) { document.getElementById('status').textContent = text; }</script>
<button onclick="const b = document.createElement('button'); b.textContent = 'Fresh button';
  document.body.append(b)">Add a button</button>
<button ondblclick="say('double clicked')">Double me</button>
<button disabled>Never enabled</button>
<input aria-label="Keys" onkeydown="say('key ' + event.key)">
<div role="button" tabindex="0" aria-label="Hover zone" onmouseenter="say('hovered')">Hover zone</div>
<div role="button" tabindex="0" aria-label="Drag source" style="width:90px;height:30px;background:#ccc"
  onmousedown="window.dragFrom = 'source'">Drag source</div>
<div role="button" tabindex="0" aria-label="Drop target" style="width:90px;height:30px;background:#eee"
  onmouseup="if (window.dragFrom === 'source') say('dropped')">Drop target</div>
<button style="position:fixed;left:600px;top:10px;width:100px;height:40px" onclick="say('spot hit')">Spot</button>
<button style="margin-top:3000px;display:block" onclick="say('far clicked')">Far away</button>"""

DIALOGS = """<h1>Dialogs</h1>
<button onclick="alert('Heads up'); say('alert closed')">Alert</button>
<button onclick="say('confirmed ' + confirm('Are you sure?'))">Confirm</button>
<button onclick="say('Hello, ' + prompt('Your name?', 'nobody'))">Prompt</button>
<p id="status">none</p>
<script>function say(text) { document.getElementById('status').textContent = text; }</script>"""

FILES = """<h1>Reports</h1>
<p><a href="/report.csv">Get the report</a></p>
<p><a href="/slow-report.csv" download>Get the slow report</a></p>"""

UPLOAD = """<h1>Send a file</h1>
<input type="file" id="f" aria-label="Attachment">
<button onclick="document.getElementById('f').click()">Choose a file</button>
<p id="status">nothing sent</p>
<script>document.getElementById('f').addEventListener('change', async (event) => {
  for (const file of event.target.files) {
    await fetch('/got', {method: 'POST', headers: {'x-name': file.name}, body: await file.text()});
  }
  document.getElementById('status').textContent = 'sent ' + event.target.files.length;
});</script>"""

NOISY = """<h1>Noisy</h1>
<script>
console.log('just saying hello');
console.error('boom in the console');
setTimeout(() => { throw new Error('boom uncaught'); }, 0);
</script>"""

FETCHER = """<h1>Fetcher</h1><p id="status">loading</p>
<script>(async () => {
  const data = await (await fetch('/api/data', {headers: {'Authorization': '__BEARER__'}})).json();
  await fetch('/api/ping?n=1');
  document.getElementById('status').textContent = 'loaded ' + data.value;
})();</script>""".replace("__BEARER__", SECRET_BEARER)

ARTICLE = """<main><h1>Widget catalogue</h1>
<p>The Blue Widget costs 42 EUR and ships in 3 days.</p>
<aside class="ads">Buy the sponsored Red Gadget now!</aside>
</main><footer>Imprint and legal text</footer>"""

INNER = """<h2>Inner panel</h2>
<button onclick="this.textContent = 'Inner pressed'">Inner button</button>"""


@dataclass
class SiteLog:
    submissions: list[dict[str, str]] = field(default_factory=list)
    uploads: list[tuple[str, str]] = field(default_factory=list)
    echoes: list[dict[str, Any]] = field(default_factory=list)
    private_hits: list[str | None] = field(default_factory=list)
    slow_release: threading.Event = field(default_factory=threading.Event)
    slow_requested: threading.Event = field(default_factory=threading.Event)
    slow_page_hits: int = 0
    slow_page_release: threading.Event = field(default_factory=threading.Event)


def main_app(log: SiteLog, other_url: str) -> Starlette:
    async def form(_: Request) -> Response:
        return page("Contact form", FORM)

    async def form_sent(request: Request) -> Response:
        submitted = {key: str(value) for key, value in (await request.form()).items()}
        log.submissions.append(submitted)
        return page("Sent", f"<h1>Thanks {html.escape(submitted.get('name', ''))}</h1>")

    async def report(_: Request) -> Response:
        return Response(
            REPORT,
            media_type="application/octet-stream",
            headers={"Content-Disposition": 'attachment; filename="report.csv"'},
        )

    async def slow_report(_: Request) -> Response:
        log.slow_requested.set()
        await asyncio.to_thread(log.slow_release.wait, 60)
        return Response(
            SLOW_REPORT,
            media_type="application/octet-stream",
            headers={"Content-Disposition": 'attachment; filename="slow-report.csv"'},
        )

    async def slow_page(_: Request) -> Response:
        log.slow_page_hits += 1
        await asyncio.to_thread(log.slow_page_release.wait, 60)
        return page("Slow page", "<h1>The slow page arrived</h1>")

    async def got(request: Request) -> Response:
        log.uploads.append((request.headers.get("x-name", ""), (await request.body()).decode(errors="replace")))
        return PlainTextResponse("ok")

    async def api_data(_: Request) -> Response:
        return JSONResponse({"value": "data-42"})

    async def api_ping(_: Request) -> Response:
        return PlainTextResponse("pong")

    async def echo(request: Request) -> Response:
        seen = {"headers": dict(request.headers), "cookies": dict(request.cookies)}
        log.echoes.append(seen)
        rows = "".join(f"<li>{html.escape(k)}={html.escape(v)}</li>" for k, v in sorted(request.cookies.items()))
        return page("Echo", f"<h1>Echo</h1><ul id='cookies'>{rows}</ul>")

    async def private(request: Request) -> Response:
        given = request.headers.get("authorization")
        log.private_hits.append(given)
        expected = "Basic " + base64.b64encode(f"{BASIC_USER}:{BASIC_PASSWORD}".encode()).decode()
        if given != expected:
            return PlainTextResponse("who are you?", 401, headers={"WWW-Authenticate": 'Basic realm="fixture"'})
        return page("Members only", "<h1>Welcome, member</h1>")

    async def frame(_: Request) -> Response:
        return page(
            "Frame host",
            f'<h1>Outer page</h1><iframe id="panel" title="Inner panel" src="{other_url}/inner"'
            ' width="500" height="200"></iframe>',
        )

    def static(title: str, body: str) -> Any:
        async def serve(_: Request) -> Response:
            return page(title, body)

        return serve

    return Starlette(
        routes=[
            Route("/form", form),
            Route("/form", form_sent, methods=["POST"]),
            Route("/dialogs", static("Dialogs", DIALOGS)),
            Route("/files", static("Reports", FILES)),
            Route("/report.csv", report),
            Route("/slow-report.csv", slow_report),
            Route("/slow-link", static("Slow link", '<a href="/slow-page">Open the slow page</a>')),
            Route("/slow-page", slow_page),
            Route("/upload", static("Upload", UPLOAD)),
            Route("/got", got, methods=["POST"]),
            Route("/noisy", static("Noisy", NOISY)),
            Route("/fetcher", static("Fetcher", FETCHER)),
            Route("/api/data", api_data),
            Route("/api/ping", api_ping),
            Route("/echo", echo),
            Route("/private", private),
            Route("/frame", frame),
            Route("/article", static("Article", ARTICLE)),
            Route("/blank", static("Blank", "<h1>Blank page</h1>")),
        ]
    )


class ControlSite:
    """``with ControlSite() as site``: the main site and the second origin, both on loopback."""

    def __init__(self) -> None:
        self.log = SiteLog()
        self._other = ThreadedServer(Starlette(routes=[Route("/inner", self._inner)]))
        self._main: ThreadedServer | None = None

    @staticmethod
    async def _inner(_: Request) -> Response:
        return page("Inner", INNER)

    @property
    def url(self) -> str:
        assert self._main is not None
        return self._main.url

    @property
    def other_url(self) -> str:
        return self._other.url

    def __enter__(self) -> ControlSite:
        self._other.start()
        self._main = ThreadedServer(main_app(self.log, self._other.url)).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.log.slow_release.set()
        self.log.slow_page_release.set()
        if self._main is not None:
            self._main.close()
        self._other.close()


# -- helpers shared by the test files -----------------------------------------------------------------------------
def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, f"{response.request.url}: {response.status_code} {response.text}"
    body: dict[str, Any] = response.json()
    return body


def refused(response: httpx.Response, status: int, code: str | None) -> dict[str, Any]:
    assert response.status_code == status, f"{response.request.url}: {response.status_code} {response.text}"
    body: dict[str, Any] = response.json()
    assert body.get("code") == code and body["error"] and body["detail"], body
    return body


def ref_of(snapshot: dict[str, Any], role: str, name: str) -> str:
    """The snapshot's ref for the element with this role and accessible name."""
    for ref, described in snapshot["refs"].items():
        if described.get("role") == role and described.get("name") == name:
            return str(ref)
    raise AssertionError(f"no {role} {name!r} among {snapshot['refs']}")


class Browser:
    """One raw browser's control base, driven through the server's HTTP API."""

    def __init__(self, http: httpx.Client, browser_id: str) -> None:
        self.http = http
        self.id = browser_id
        self.base = f"/v3/browsers/{browser_id}/browser"

    def get(self, path: str, **params: Any) -> httpx.Response:
        return self.http.get(f"{self.base}{path}", params=params)

    def post(self, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        return self.http.post(f"{self.base}{path}", json=body or {})

    def act(self, **action: Any) -> dict[str, Any]:
        return ok(self.post("/act", action))

    def evaluate(self, fn: str) -> Any:
        return self.act(kind="evaluate", fn=fn).get("result")

    def goto(self, url: str) -> dict[str, Any]:
        return ok(self.post("/navigate", {"url": url}))

    def snapshot(self, **params: Any) -> dict[str, Any]:
        return ok(self.get("/snapshot", **params))

    def status_text(self) -> str:
        return str(self.evaluate("() => document.getElementById('status').textContent"))

    def fetch(self, url: str) -> bytes:
        """A file the API answered with, fetched over HTTP through its ``url``."""
        served = self.http.get(url)
        assert served.status_code == 200, f"{url}: {served.status_code} {served.text[:300]}"
        return served.content
