"""Live view through port 8420 only (spec §4.10): the viewer page, noVNC assets, the VNC socket, control.

Every id resolves through :class:`~openbrowse.sessions.live.LiveTargets`, so sessions and raw browsers share
these routes. Auth is ``require_viewer`` (API key, the id's view token as ``?token=``, or the dashboard's Basic
credentials or login cookie from this server's own pages only, spec §25.2), except ``POST /control``, which
takes the API key or the dashboard's credentials only.

Why assets can carry the token in their **path** (``/vnc/{id}/_t/{token}/core/rfb.js``): noVNC is a tree of ES
modules whose imports are relative (``./util/logging.js``, ``../vendor/pako/…``). A ``?token=`` on the first
import is not carried to those, and cookies are no way out in the case that matters (a cross-origin iframe over
plain http: third-party cookies are blocked, and ``SameSite=None`` needs ``Secure``). A path prefix is carried
by every relative import, with no cookies, service worker or import map, so the page loads the client from
``./_t/{token}/core/rfb.js`` and the whole module graph stays authorised. The prefix is stripped before the
request is proxied to the slot's websockify.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import StrictBool
from starlette.exceptions import HTTPException

from openbrowse.api.auth import AuthFailed, AuthThrottled, CrossSiteCredentials, view_token
from openbrowse.api.body import parse_body
from openbrowse.api.deps import AuthenticatorDep, LiveTargetsDep, LoopbackHttpDep, SettingsDep
from openbrowse.api.errors import auth_refusal
from openbrowse.api.live_page import (
    ASSET_HEADERS,
    NO_BROWSER_HEADERS,
    VIEWER_HEADERS,
    no_live_browser_page,
    viewer_page,
)
from openbrowse.api.openapi_docs import error_responses, request_body
from openbrowse.api.resource_auth import require_path_token
from openbrowse.api.schemas import WireModel
from openbrowse.api.ws_bridge import CLOSE_UNAVAILABLE, bridge, close_quietly, deny_websocket, offered_subprotocol
from openbrowse.errors import NotFound, OpenBrowseError
from openbrowse.sessions.live import LiveTarget
from openbrowse.sessions.runtime import LiveSlot

router = APIRouter(prefix="/vnc", tags=["live view"], responses=error_responses(401, 404, 422, 429))

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "_t/"
VNC_MAX_MESSAGE = 1 << 20
"""Largest message a viewer may send: noVNC sends key, pointer and clipboard events, all small."""
REFRESH_SECONDS = 5
_PASSED_HEADERS = ("content-type", "last-modified", "etag")
_VNC_ERRORS = (OpenBrowseError, RuntimeError, OSError)
_ASSET_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "A noVNC file, with its own content type",
        "content": {"*/*": {"schema": {"type": "string", "format": "binary"}}},
    },
    **error_responses(502),
}


class ControlBody(WireModel):
    enabled: StrictBool


class ControlView(WireModel):
    view_only: bool


def _slot_of(target: LiveTarget) -> LiveSlot:
    if target.slot is None:
        raise NotFound("Session has no live browser" if target.kind == "session" else "Browser is stopped")
    return target.slot


@router.get("/{target_id}/view", response_class=HTMLResponse)
async def view(
    target_id: str, request: Request, targets: LiveTargetsDep, auth: AuthenticatorDep, settings: SettingsDep
) -> HTMLResponse:
    """The viewer page; a page saying there is nothing to watch when no browser of the id is up."""
    auth.require_viewer(request, target_id)
    target = await targets.resolve(target_id)
    if target.slot is None:
        refresh = REFRESH_SECONDS if target.may_come_alive else None
        page = no_live_browser_page(
            target_id=target_id, kind=target.kind, status=target.status, refresh_seconds=refresh
        )
        return HTMLResponse(page, headers=NO_BROWSER_HEADERS)
    token = view_token(settings.API_KEY or "", target_id) if settings.auth_enabled else None
    client_url = f"./{TOKEN_PREFIX}{token}/core/rfb.js" if token else "./core/rfb.js"
    page = viewer_page(
        target_id=target_id, client_url=client_url, default_path=f"vnc/{target_id}/websockify", token=token
    )
    return HTMLResponse(page, headers=VIEWER_HEADERS)


@router.post(
    "/{target_id}/control",
    response_model=ControlView,
    response_model_by_alias=True,
    responses=error_responses(422, 502),
    openapi_extra=request_body(ControlBody),
)
async def control(target_id: str, request: Request, targets: LiveTargetsDep, auth: AuthenticatorDep) -> ControlView:
    """Let live viewers also control the browser (``enabled: true``) or only watch it (the default)."""
    auth.require_viewer(request, None)  # no resource id: the view token does not grant control
    body = await parse_body(request, ControlBody)
    slot = _slot_of(await targets.resolve(target_id))
    try:
        await slot.set_view_only(not body.enabled)
    except _VNC_ERRORS as exc:
        logger.warning("Live view mode could not be switched: %s", exc)
        raise HTTPException(502, "The live view mode could not be switched") from exc
    return ControlView(view_only=slot.view_only)


@router.websocket("/{target_id}/websockify")
async def websockify(websocket: WebSocket, target_id: str, targets: LiveTargetsDep, auth: AuthenticatorDep) -> None:
    """VNC bytes, bridged to the slot's websockify. Bad credentials: the handshake is refused (401/429);
    nothing to show: accepted, then closed 1011."""
    try:
        auth.require_viewer(websocket, target_id)
    except (AuthFailed, AuthThrottled) as exc:
        await deny_websocket(websocket, auth_refusal(exc))
        return
    except CrossSiteCredentials as exc:
        await deny_websocket(websocket, JSONResponse({"detail": exc.detail}, status_code=exc.status_code))
        return
    await websocket.accept(subprotocol=offered_subprotocol(websocket, "binary"))
    try:
        slot = _slot_of(await targets.resolve(target_id))
        ticket = await slot.add_viewer()  # starts the VNC side if nobody was watching
    except NotFound as exc:
        await close_quietly(websocket, CLOSE_UNAVAILABLE, exc.message)
        return
    except _VNC_ERRORS as exc:
        logger.warning("Live view could not be started: %s", exc)
        await close_quietly(websocket, CLOSE_UNAVAILABLE, "The live view could not be started")
        return
    try:
        # carries the slot's websockify secret
        await bridge(websocket, slot.novnc_ws_url, max_message=VNC_MAX_MESSAGE, subprotocol="binary")
    finally:
        slot.remove_viewer(ticket)  # the last viewer out stops the VNC side after a grace period


@router.get("/{target_id}/{asset:path}", responses=_ASSET_RESPONSES)
async def asset(
    target_id: str,
    asset: str,
    request: Request,
    targets: LiveTargetsDep,
    auth: AuthenticatorDep,
    settings: SettingsDep,
    http: LoopbackHttpDep,
) -> Response:
    """A static noVNC file from the slot's websockify (``--web NOVNC_WEB_DIR``)."""
    if asset.startswith(TOKEN_PREFIX):
        token, _, asset = asset.removeprefix(TOKEN_PREFIX).partition("/")
        require_path_token(auth, settings, request, target_id, token)
    else:
        auth.require_viewer(request, target_id)
    parts = asset.split("/")
    if not asset or asset.endswith("/") or any(part in {"", ".", ".."} for part in parts) or "\\" in asset:
        raise HTTPException(404, "Not found")
    slot = _slot_of(await targets.resolve(target_id))
    try:
        # Counted as a viewer while it is fetched: a stop pending since an earlier viewer left must not take
        # websockify away mid-request (the page's own socket arrives right after its files).
        ticket = await slot.add_viewer()
    except _VNC_ERRORS as exc:
        logger.warning("Live view could not be started: %s", exc)
        raise HTTPException(502, "The live view could not be started") from exc
    try:
        upstream = await http.get(f"http://127.0.0.1:{slot.novnc_port}/{quote(asset)}")
    except httpx.HTTPError as exc:
        logger.warning("Live view asset %s could not be fetched: %s", asset, exc)
        raise HTTPException(502, "The live view could not be reached") from exc
    finally:
        slot.remove_viewer(ticket)
    if upstream.status_code == 404:
        raise HTTPException(404, "Not found")
    if upstream.status_code != 200:
        logger.warning("Live view asset %s: the slot's websockify answered %d", asset, upstream.status_code)
        raise HTTPException(502, "The live view gave an unexpected answer")
    headers = {name: upstream.headers[name] for name in _PASSED_HEADERS if name in upstream.headers}
    headers["Cache-Control"] = "private, max-age=300"
    headers.update(ASSET_HEADERS)
    return Response(upstream.content, headers=headers)
