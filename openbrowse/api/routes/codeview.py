"""``GET /codeview``: the code tab's static page (spec §11.3), without credentials.

Who loads it: the session's own Chromium, opened by the agent layer over CDP at
``http://127.0.0.1:<PORT>/codeview``. A plain navigation carries no API key, so the route is open like
``/health``; it is safe because the page is a constant with no data in it and a policy that lets it load and
send nothing (``codeview_page``). The Host/Origin guard still applies: the navigation names a loopback host and
sends no ``Origin``, so it passes, while a foreign site's cross-origin request is refused as everywhere else.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from openbrowse.api.codeview_page import CODEVIEW_HEADERS, CODEVIEW_HTML

router = APIRouter(tags=["live view"])


@router.get("/codeview", response_class=HTMLResponse)
async def codeview() -> HTMLResponse:
    """The code tab shown in a session's browser while the model writes a ``run_code_file`` script."""
    return HTMLResponse(CODEVIEW_HTML, headers=CODEVIEW_HEADERS)
