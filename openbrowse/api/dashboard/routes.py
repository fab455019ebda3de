"""The dashboard's routes: ``GET /`` and its sub-pages, and the static files they load (spec §19.4).

Pages take the same credentials as the API (the API key header, or HTTP Basic with ``DASHBOARD_USER`` /
``DASHBOARD_PASSWORD``, which the browser prompts for on the 401 challenge) and are open on loopback without
``API_KEY``. The scripts then call the ``/v3`` API same-origin with the browser's cached Basic credentials.
Each page is sent with a Content-Security-Policy allowing nothing but this origin: the feed shows text taken
from arbitrary web pages, and the pages render it as text, but the policy is the second line of defence.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Query
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.requests import HTTPConnection

from openbrowse.api.dashboard import pages
from openbrowse.api.deps import ManagerDep, authenticator_of
from openbrowse.api.schemas import session_view
from openbrowse.errors import NotFound

__all__ = ["CONTENT_SECURITY_POLICY", "install_dashboard", "router"]

STATIC_DIR = Path(__file__).parent / "static"
PAGE_SIZE = 20

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "frame-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'self'"
)
_PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "Referrer-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
}


async def require_dashboard(conn: HTTPConnection) -> None:
    authenticator_of(conn).require_dashboard(conn)


router = APIRouter(include_in_schema=False, dependencies=[Depends(require_dashboard)])


def _page(document: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(document, status_code=status_code, headers=_PAGE_HEADERS)


def _catalog(conn: HTTPConnection) -> tuple[Sequence[str], Sequence[str]]:
    models: Sequence[str] = conn.app.state.dashboard_models
    efforts: Sequence[str] = conn.app.state.dashboard_efforts
    return models, efforts


@router.get("/")
async def sessions(manager: ManagerDep, page: Annotated[int, Query(ge=1)] = 1) -> HTMLResponse:
    records, total = await manager.page(page, PAGE_SIZE)
    views = [session_view(record) for record in records]
    return _page(pages.sessions_page(views, total=total, page=page, page_size=PAGE_SIZE))


@router.get("/sessions/{session_id}")
async def session(session_id: str, manager: ManagerDep) -> HTMLResponse:
    try:
        record = await manager.get(session_id)
    except NotFound:
        return _page(pages.not_found_page(f"There is no session {session_id}."), status_code=404)
    return _page(pages.session_page(session_view(record)))


@router.get("/run")
async def run(conn: HTTPConnection) -> HTMLResponse:
    models, efforts = _catalog(conn)
    return _page(pages.run_page(models, efforts))


@router.get("/profiles")
async def profiles() -> HTMLResponse:
    return _page(pages.profiles_page())


@router.get("/browsers")
async def browsers() -> HTMLResponse:
    return _page(pages.browsers_page())


def install_dashboard(app: FastAPI, *, models: Sequence[str], efforts: Sequence[str]) -> None:
    """Serve the dashboard on ``app``; ``models`` and ``efforts`` fill the run form's choices."""
    app.state.dashboard_models = tuple(models)
    app.state.dashboard_efforts = tuple(efforts)
    app.include_router(router)
    app.mount(pages.STATIC, StaticFiles(directory=STATIC_DIR), name="dashboard-static")
