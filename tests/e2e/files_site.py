"""A fixture site for the file routes' end-to-end tests: a page of download links and an upload form.

``/downloads`` links to ``/file/{name}``, which answers deterministic binary bytes (:func:`file_bytes`) as an
attachment. ``/form`` has a file input; choosing a file makes the page POST its bytes to ``/got``, which records
them in :class:`Received`, so a test sees exactly what reached the page.
"""

from __future__ import annotations

import hashlib
import html

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

__all__ = ["DOWNLOAD_NAMES", "Received", "file_bytes", "files_site"]

DOWNLOAD_NAMES = ("alpha.bin", "beta.bin", "gamma.bin")

FORM = (
    "<!doctype html><html><head><title>Upload form</title></head><body>"
    '<h1>Send your file</h1><input type="file" id="f" aria-label="Resume upload" title="Resume upload">'
    "<script>document.getElementById('f').addEventListener('change', async (event) => {"
    "  for (const file of event.target.files) {"
    "    await fetch('/got', {method: 'POST', headers: {'x-name': file.name}, body: await file.arrayBuffer()});"
    "  }"
    "});</script></body></html>"
)


def file_bytes(name: str, size: int = 300_000) -> bytes:
    """``size`` bytes that depend on ``name`` only, with every byte value in them (not text)."""
    out = bytearray()
    counter = 0
    while len(out) < size:
        out += hashlib.sha256(f"{name}:{counter}".encode()).digest()
        counter += 1
    return bytes(out[:size])


class Received:
    """What the form page posted: (file name, bytes), in order."""

    def __init__(self) -> None:
        self.files: list[tuple[str, bytes]] = []
        self.fetched: list[str] = []
        """The names ``/file/{name}`` was asked for, in order."""


def _links() -> str:
    items = "".join(
        f'<li><a id="{html.escape(name.split(".")[0])}" href="/file/{html.escape(name)}">'
        f"Download {html.escape(name)}</a></li>"
        for name in DOWNLOAD_NAMES
    )
    return f"<!doctype html><html><head><title>Downloads</title></head><body><ul>{items}</ul></body></html>"


def files_site(received: Received) -> Starlette:
    async def downloads(_: Request) -> HTMLResponse:
        return HTMLResponse(_links())

    async def one_file(request: Request) -> Response:
        name = request.path_params["name"]
        received.fetched.append(name)
        return Response(
            file_bytes(name),
            media_type="application/octet-stream",
            headers={"Content-Disposition": f'attachment; filename="{name}"'},
        )

    async def form(_: Request) -> HTMLResponse:
        return HTMLResponse(FORM)

    async def got(request: Request) -> Response:
        received.files.append((request.headers.get("x-name", ""), await request.body()))
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/downloads", downloads),
            Route("/file/{name}", one_file),
            Route("/form", form),
            Route("/got", got, methods=["POST"]),
        ]
    )
