"""Fixture pages for the control engine's tests: a form, a page of gadgets, a cross-origin iframe, a dialog.

Two servers are started (two ports on 127.0.0.1 are two origins), so ``/frame`` on the first embeds ``/inner``
from the second as a cross-origin iframe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from openbrowse.control.call import ControlCall
from openbrowse.control.catalog import all_routes
from openbrowse.control.engine import ControlEngine
from tests.support.asgi_thread import ThreadedServer

FORM = """<!doctype html><title>Form</title><body>
<h1>Sign up</h1>
<form action="/done" method="get">
  <label>Name <input name="name" id="name"></label>
  <label>Colour <select name="colour" id="colour">
    <option>red</option><option>green</option><option>blue</option></select></label>
  <label><input type="checkbox" name="agree" id="agree"> Agree</label>
  <button type="submit">Send</button>
</form>
<button id="late" onclick="setTimeout(() => { const p = document.createElement('p'); p.id = 'later';
  p.textContent = 'Arrived later'; document.body.append(p); }, 150)">Later</button>
<button id="go1" onclick="document.body.dataset.clicked = 'first'">Go</button>
<button id="go2" onclick="document.body.dataset.clicked = 'second'">Go</button>
<a href="/done?name=link">Finish</a>
</body>"""

GADGETS = """<!doctype html><title>Gadgets</title>
<style>#far { margin-top: 3000px; }</style><body>
<div id="hover" role="button" tabindex="0" aria-label="Hover me"
  onmouseenter="this.dataset.hovered = 'yes'">Hover me</div>
<div id="source" role="button" aria-label="Drag source" tabindex="0" style="width:80px;height:40px;background:#ccc"
  onmousedown="window.dragFrom = 'source'">Drag source</div>
<div id="target" role="button" aria-label="Drop target" tabindex="0" style="width:80px;height:40px;background:#eee"
  onmouseup="if (window.dragFrom === 'source') document.body.dataset.dropped = 'yes'">Drop target</div>
<input id="keys" aria-label="Keys" onkeydown="this.dataset.last = event.key">
<button id="spot" style="position:fixed;left:300px;top:20px;width:60px;height:30px"
  onclick="document.body.dataset.spot = 'hit'">Spot</button>
<button id="alert" onclick="document.body.dataset.answer = String(confirm('Sure?'))">Ask</button>
<button id="far" onclick="document.body.dataset.far = 'clicked'">Far away</button>
</body>"""

INNER = """<!doctype html><title>Inner</title><body>
<button onclick="document.body.dataset.pressed = 'yes'; this.textContent = 'Pressed'">Inner button</button>
</body>"""


def _done(request: Request) -> HTMLResponse:
    name = request.query_params.get("name", "")
    return HTMLResponse(f"<!doctype html><title>Done</title><body><p id='result'>Hello {name}</p></body>")


@dataclass(frozen=True, slots=True)
class Sites:
    main: str
    other: str
    """The second origin (serves ``/inner``)."""


@contextmanager
def serve_sites() -> Iterator[Sites]:
    other_app = Starlette(routes=[Route("/inner", lambda _: HTMLResponse(INNER))])
    with ThreadedServer(other_app) as other:
        frame = f"""<!doctype html><title>Frame</title><body><h1>Outer</h1>
<button onclick="document.body.dataset.outer = 'yes'">Outer button</button>
<iframe id="inner" src="{other.url}/inner" width="400" height="200"></iframe></body>"""
        app = Starlette(
            routes=[
                Route("/form", lambda _: HTMLResponse(FORM)),
                Route("/gadgets", lambda _: HTMLResponse(GADGETS)),
                Route("/frame", lambda _: HTMLResponse(frame)),
                Route("/done", _done),
            ]
        )
        with ThreadedServer(app) as main:
            yield Sites(main.url, other.url)


def handler(method: str, path: str) -> Callable[[ControlCall], Any]:
    """The registered handler of a control route."""
    for entry in all_routes():
        if entry.method == method and entry.path == path:
            return entry.handler
    raise LookupError(f"{method} {path} is not registered")


async def call(
    engine: ControlEngine, method: str, path: str, body: dict[str, Any] | None = None, **query: str
) -> dict[str, Any]:
    """Serve one control call the way the API layer would (path parameters come as ``path_<name>=``)."""
    params = {key[5:]: value for key, value in query.items() if key.startswith("path_")}
    plain = {key: value for key, value in query.items() if not key.startswith("path_")}
    result: dict[str, Any] = await handler(method, path)(
        ControlCall(engine=engine, query=plain, body=body or {}, path=params)
    )
    return result
