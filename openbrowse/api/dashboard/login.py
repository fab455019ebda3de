"""The dashboard's login form and logout (spec §25.2): ``/dashboard/login`` and ``/dashboard/logout``.

A successful login sets an ``HttpOnly; SameSite=Strict`` cookie holding a random token (``login_sessions``),
``Secure`` when the request came over https. The token then counts as the dashboard's credentials on every route
that takes them, from this server's own pages only, like Basic (``auth.py``). Both forms are ``POST`` and are
refused (403) unless the request comes from this server's own page, on top of the Origin check in front of every
route: a foreign page can neither sign a browser in to an account of its choosing nor sign it out. A wrong
password counts as a failed attempt in the same throttle as the API key.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.exceptions import HTTPException

from openbrowse.api.auth import AuthThrottled, from_own_pages
from openbrowse.api.dashboard import pages
from openbrowse.api.deps import authenticator_of
from openbrowse.api.login_sessions import login_cookie, logout_cookie

__all__ = ["LOGIN_PATH", "LOGOUT_PATH", "login_redirect", "page_response", "router", "safe_next"]

LOGIN_PATH = "/dashboard/login"
LOGOUT_PATH = "/dashboard/logout"
MAX_FORM_BYTES = 8 * 1024
NOT_FROM_HERE = "This form only works from this server's own login page"
WRONG_PASSWORD = "Wrong user or password."

router = APIRouter(include_in_schema=False)


def page_response(document: str, status_code: int = 200) -> HTMLResponse:
    return HTMLResponse(document, status_code=status_code, headers=pages.PAGE_HEADERS)


def safe_next(value: str | None) -> str:
    """A path on this server to go to after the login; anything else (another host, ``//x``, ``/\\x``) is ``/``."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")) or any(c in value for c in "\r\n\\"):
        return "/"
    return value


def login_redirect(request: Request) -> str:
    """``/dashboard/login?next=<this page>``."""
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return f"{LOGIN_PATH}?next={quote(safe_next(here), safe='')}"


def _from_elsewhere(request: Request) -> bool:
    return request.headers.get("sec-fetch-site") in {"cross-site", "same-site"}


@router.get(LOGIN_PATH)
async def login_form(request: Request, next_path: Annotated[str | None, Query(alias="next")] = None) -> Response:
    auth = authenticator_of(request)
    target = safe_next(next_path)
    if not auth.enabled or (from_own_pages(request) and auth.signed_in_by_cookie(request)):
        return RedirectResponse(target, status_code=303)
    page = pages.login_page(
        next_path=target, available=auth.login_available, arrived_from_elsewhere=_from_elsewhere(request)
    )
    return page_response(page)


async def _read_form(request: Request) -> dict[str, str]:
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise HTTPException(413, "The login form is larger than a login form can be")
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=10)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HTTPException(400, "The login form could not be read") from exc
    return {name: values[0] for name, values in fields.items()}


@router.post(LOGIN_PATH)
async def login(request: Request) -> Response:
    auth = authenticator_of(request)
    if not from_own_pages(request):
        raise HTTPException(403, NOT_FROM_HERE)
    form = await _read_form(request)
    target = safe_next(form.get("next"))
    if not auth.enabled:
        return RedirectResponse(target, status_code=303)
    if not auth.login_available:
        return page_response(pages.login_page(next_path=target, available=False), status_code=401)
    try:
        accepted = auth.check_login(request, form.get("username", ""), form.get("password", ""))
    except AuthThrottled as exc:
        page = pages.login_page(next_path=target, error=f"{exc} ({exc.retry_after} s)")
        throttled = page_response(page, status_code=429)
        throttled.headers["Retry-After"] = str(exc.retry_after)
        return throttled
    if not accepted:
        return page_response(pages.login_page(next_path=target, error=WRONG_PASSWORD), status_code=401)
    token = auth.logins.open()
    response = RedirectResponse(target, status_code=303)
    response.headers["Set-Cookie"] = login_cookie(request, token, auth.logins.lifetime)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post(LOGOUT_PATH)
async def logout(request: Request) -> Response:
    """Ends this browser's login (the token is forgotten here, the cookie cleared there)."""
    auth = authenticator_of(request)
    if not from_own_pages(request):
        raise HTTPException(403, NOT_FROM_HERE)
    auth.logins.close(auth.login_token(request))
    response = RedirectResponse(LOGIN_PATH, status_code=303)
    response.headers["Set-Cookie"] = logout_cookie(request)
    response.headers["Cache-Control"] = "no-store"
    return response
