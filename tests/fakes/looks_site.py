"""The fixture page of spec §28.2: what a page sees of the browser, with BotD's verdict, reported back to the site.

``GET /probe/{run}`` serves a page that runs ``looks_probe.js`` and ``@fingerprintjs/botd`` (from the test-only
npm install, ``tests/e2e/botd``; BotD's usage ping is off) and POSTs the result to ``/report/{run}``, with the
``Accept-Language`` header of the page's own request added by the site. A test or bench opens the page in a
browser by any means (an agent's ``navigate``, Playwright over ``cdpUrl``, a stock Playwright launch) and waits
for the report of its ``run``: no client has to read the page, so an agent session needs no extra access.
"""

from __future__ import annotations

import html
import json
import threading
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, Response
from starlette.routing import Route

from tests.support.asgi_thread import ThreadedServer

__all__ = ["BOTD_PACKAGE_DIR", "BOTD_SCRIPT", "LooksSite"]

BOTD_PACKAGE_DIR = Path(__file__).parents[1] / "e2e" / "botd"
BOTD_SCRIPT = Path("node_modules/@fingerprintjs/botd/dist/botd.esm.js")
PROBE_SCRIPT = Path(__file__).with_name("looks_probe.js")

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Browser looks</title></head>
<body><h1>Browser looks</h1><pre id="result">running</pre>
<script type="module">
import {{ load }} from '/botd.esm.js';
import {{ probe }} from '/looks_probe.js';
const seen = await probe();
try {{
  const detector = await load({{ monitoring: false }});
  seen.botd = detector.detect();
  seen.botdDetections = Object.entries(detector.getDetections()).filter(([, v]) => v.bot).map(([name]) => name);
}} catch (error) {{
  seen.botd = {{ error: String(error) }};
}}
seen.acceptLanguage = {accept_language};
document.getElementById('result').textContent = JSON.stringify(seen, null, 1);
await fetch('/report/{run}', {{ method: 'POST', body: JSON.stringify(seen) }});
document.title = 'Browser looks: reported';
</script></body></html>
"""


class LooksSite:
    """``with LooksSite(botd_install) as site: site.url_for(run)``; ``site.report(run)`` waits for that run."""

    def __init__(self, botd_install: Path) -> None:
        self._botd = botd_install / BOTD_SCRIPT
        self._reports: dict[str, dict[str, Any]] = {}
        self._arrived = threading.Condition()
        app = Starlette(
            routes=[
                Route("/probe/{run}", self._page),
                Route("/botd.esm.js", self._botd_script),
                Route("/looks_probe.js", self._probe_script),
                Route("/report/{run}", self._report, methods=["POST"]),
            ]
        )
        self._server = ThreadedServer(app)

    @property
    def url(self) -> str:
        return self._server.url

    def url_for(self, run: str) -> str:
        return f"{self.url}/probe/{run}"

    def report(self, run: str, timeout: float = 120.0) -> dict[str, Any]:
        """What the page of ``run`` reported, once it has (``TimeoutError`` if it never does)."""
        with self._arrived:
            if not self._arrived.wait_for(lambda: run in self._reports, timeout):
                raise TimeoutError(f"the probe page of {run!r} reported nothing within {timeout:.0f} s")
            return self._reports[run]

    async def _page(self, request: Request) -> HTMLResponse:
        run = html.escape(request.path_params["run"], quote=True)
        accept_language = json.dumps(request.headers.get("accept-language"))
        return HTMLResponse(PAGE.format(run=run, accept_language=accept_language))

    async def _botd_script(self, _: Request) -> FileResponse:
        return FileResponse(self._botd, media_type="text/javascript")

    async def _probe_script(self, _: Request) -> FileResponse:
        return FileResponse(PROBE_SCRIPT, media_type="text/javascript")

    async def _report(self, request: Request) -> Response:
        seen = json.loads(await request.body())
        with self._arrived:
            self._reports[request.path_params["run"]] = seen
            self._arrived.notify_all()
        return Response(status_code=204)

    def __enter__(self) -> LooksSite:
        self._server.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.close()
