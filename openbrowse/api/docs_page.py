"""``/docs``: Swagger UI for the OpenAPI document, served from local files under a strict CSP (spec §25.2).

FastAPI's own ``/docs`` (and ``/redoc``) load their scripts from a CDN, on the API's own origin and without an
integrity check, and render nothing offline. Here the Swagger UI bundle comes from the ``fastapi-offline`` package
(its copy of ``swagger-ui-dist`` 5, MIT) and is served by this app under ``/docs/assets/``; the page's start-up
code is a file of ours too (``/docs/init.js``), so the policy allows scripts from this origin only, no inline
script. ``DOCS_ENABLED`` decides whether the routes exist at all; by default they do only on a loopback bind.
``/openapi.json`` stays available either way: it holds no secret and generated clients read it.
"""

from __future__ import annotations

import html
from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

__all__ = ["DOCS_HEADERS", "DOCS_PATH", "install_docs"]

DOCS_PATH = "/docs"
ASSETS_PATH = f"{DOCS_PATH}/assets"
SWAGGER_UI_DIR = Path(str(files("fastapi_offline") / "static"))

DOCS_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'none'"
    ),
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}
"""Scripts, styles, the document and "Try it out" calls from this origin only; icons are ``data:`` images."""

_INIT_SCRIPT = """\
// Swagger UI's start-up, kept out of the page so the page's policy needs no inline script.
window.ui = SwaggerUIBundle({
  url: document.body.dataset.openapiUrl,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
"""


def _page(title: str, openapi_url: str) -> str:
    return (
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)} · API docs</title>"
        f'<link rel="icon" href="{ASSETS_PATH}/favicon.png">'
        f'<link rel="stylesheet" href="{ASSETS_PATH}/swagger-ui.css"></head>\n'
        f'<body data-openapi-url="{html.escape(openapi_url, quote=True)}"><div id="swagger-ui"></div>'
        f'<script src="{ASSETS_PATH}/swagger-ui-bundle.js"></script>'
        f'<script src="{DOCS_PATH}/init.js"></script></body></html>\n'
    )


def install_docs(app: FastAPI, *, enabled: bool) -> None:
    """Serve ``/docs`` from local files on ``app`` when ``enabled`` (construct the app with ``docs_url=None`` and
    ``redoc_url=None``, so FastAPI's CDN pages are not there as well)."""
    if not enabled:
        return
    document = _page(app.title, app.openapi_url or "/openapi.json")

    async def docs() -> HTMLResponse:
        return HTMLResponse(document, headers=DOCS_HEADERS)

    async def init_script() -> Response:
        return Response(_INIT_SCRIPT, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    app.add_api_route(DOCS_PATH, docs, methods=["GET"], include_in_schema=False)
    app.add_api_route(f"{DOCS_PATH}/init.js", init_script, methods=["GET"], include_in_schema=False)
    app.mount(ASSETS_PATH, StaticFiles(directory=SWAGGER_UI_DIR), name="docs-assets")
