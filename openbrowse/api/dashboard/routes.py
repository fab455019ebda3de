"""The dashboard's routes: ``GET /`` and its sub-pages, and the static files they load (spec §19.4, §25.2).

Pages take the API key header, HTTP Basic with ``DASHBOARD_USER`` / ``DASHBOARD_PASSWORD`` (for scripts), or the
cookie the login form (``login.py``) sets; Basic and the cookie only from this server's own pages. A browser that
opens a page without credentials is sent to the login form; anything else gets the 401. Without ``API_KEY`` on
loopback the pages are open. The scripts then call the ``/v3`` API same-origin with the browser's cookie. Each
page is sent with a Content-Security-Policy allowing nothing but this origin (``pages.PAGE_HEADERS``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, NoReturn

from fastapi import APIRouter, Depends, FastAPI, Query, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection

from openbrowse.api.auth import AuthFailed, CrossSiteCredentials, is_navigation
from openbrowse.api.dashboard import login, pages
from openbrowse.api.dashboard.playback import Playback, chapters_of, playback_html
from openbrowse.api.deps import ManagerDep, authenticator_of
from openbrowse.api.recording_urls import recording_urls
from openbrowse.api.schemas import session_view
from openbrowse.domain.sessions import SessionRecord
from openbrowse.errors import NotFound
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.recordings import finished_recordings

__all__ = ["CONTENT_SECURITY_POLICY", "install_dashboard", "router"]

STATIC_DIR = Path(__file__).parent / "static"
PAGE_SIZE = 20
FEED_LIMIT = 5000
"""Feed entries read for an ended session's chapter marks (its first ones; a run has far fewer)."""
CONTENT_SECURITY_POLICY = pages.CONTENT_SECURITY_POLICY


async def require_dashboard(request: Request) -> None:
    auth = authenticator_of(request)
    if is_navigation(request) and auth.enabled and not auth.presents_credentials(request):
        _to_login(request)  # nothing to check, so nothing to count as a failed attempt
    try:
        auth.require_dashboard(request)
    except (AuthFailed, CrossSiteCredentials):
        if not is_navigation(request):
            raise
        _to_login(request)


def _to_login(request: Request) -> NoReturn:
    """A person opening a page: the login form, then back here (a link from another site lands here too, since it
    carries neither the SameSite=Strict cookie nor usable Basic credentials)."""
    raise HTTPException(303, "Sign in first", headers={"Location": login.login_redirect(request)})


router = APIRouter(include_in_schema=False, dependencies=[Depends(require_dashboard)])


def _page(request: Request, document: str, status_code: int = 200) -> HTMLResponse:
    auth = authenticator_of(request)
    csrf_token = auth.logins.csrf_token(auth.login_token(request))
    if csrf_token is not None:
        document = pages.with_logout(document, csrf_token)
    return login.page_response(document, status_code)


def _catalog(conn: HTTPConnection) -> tuple[Sequence[str], Sequence[str]]:
    models: Sequence[str] = conn.app.state.dashboard_models
    efforts: Sequence[str] = conn.app.state.dashboard_efforts
    return models, efforts


@router.get("/")
async def sessions(request: Request, manager: ManagerDep, page: Annotated[int, Query(ge=1)] = 1) -> HTMLResponse:
    records, total = await manager.page(page, PAGE_SIZE)
    views = [session_view(record) for record in records]
    return _page(request, pages.sessions_page(views, total=total, page=page, page_size=PAGE_SIZE))


@router.get("/sessions/{session_id}")
async def session(request: Request, session_id: str, manager: ManagerDep) -> HTMLResponse:
    try:
        record = await manager.get(session_id)
    except NotFound:
        return _page(request, pages.not_found_page(f"There is no session {session_id}."), status_code=404)
    return _page(request, pages.session_page(session_view(record), await _playback(request, manager, record)))


async def _playback(request: Request, manager: SessionManager, record: SessionRecord) -> str:
    """The recordings of a session whose browser is gone, with its feed's steps as chapter marks (spec §22.1)."""
    if record.browser_live:
        return ""
    found = await asyncio.to_thread(finished_recordings, request.app.state.settings.sessions_dir / record.id)
    if not found:
        return ""
    urls = recording_urls(request, "sessions", record.id)
    messages, _ = await manager.messages(record.id, after=None, before=None, limit=FEED_LIMIT)
    ends = [item.started_ms for item in found[1:]] + [None]
    items = [
        Playback(url, item, chapters_of(item, end, messages)) for url, item, end in zip(urls, found, ends, strict=False)
    ]
    return playback_html(items)


@router.get("/run")
async def run(request: Request) -> HTMLResponse:
    models, efforts = _catalog(request)
    return _page(request, pages.run_page(models, efforts))


@router.get("/profiles")
async def profiles(request: Request) -> HTMLResponse:
    return _page(request, pages.profiles_page())


@router.get("/browsers")
async def browsers(request: Request) -> HTMLResponse:
    return _page(request, pages.browsers_page())


@router.get("/dashboard/maintenance")
async def maintenance(request: Request) -> dict[str, int | None]:
    """``{endsAt}`` (ms since the epoch) while the server drains for maintenance, else ``{endsAt: null}``; every
    page polls it for its banner (spec §21.6)."""
    notice = request.app.state.maintenance.notice
    return {"endsAt": notice.ends_at_ms if notice is not None else None}


def install_dashboard(app: FastAPI, *, models: Sequence[str], efforts: Sequence[str]) -> None:
    """Serve the dashboard on ``app``; ``models`` and ``efforts`` fill the run form's choices."""
    app.state.dashboard_models = tuple(models)
    app.state.dashboard_efforts = tuple(efforts)
    app.include_router(login.router)
    app.include_router(router)
    app.mount(pages.STATIC, StaticFiles(directory=STATIC_DIR), name="dashboard-static")
