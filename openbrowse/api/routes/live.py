"""Live view through port 8420 only (spec §4.10): the viewer page, noVNC assets, the VNC socket, control.

Every id resolves through :class:`~openbrowse.sessions.live.LiveTargets`, so sessions and raw browsers share
these routes. Auth is ``require_viewer`` (API key, the id's view token as ``?token=``, or the dashboard's Basic
credentials or login cookie from this server's own pages only, spec §25.2), except ``POST /control``, which
takes the API key or the dashboard's credentials only.

Input is decided per connection (spec §21.5, :mod:`openbrowse.api.vnc_input`): the bridge forwards a viewer's key,
pointer and clipboard messages only while the connection may control, asked again for every such message:

* a connection that presented the target's open takeover token (``?takeover=``, from ``takeoverUrl``) at connect
  time, for as long as that token stays open (a resume closes it);
* a connection made with the API key or the dashboard's credentials while ``POST /control {enabled: true}`` holds
  for the target (an operator's switch; a resume does not touch it).

A plain ``liveUrl`` viewer (view token only) never sends input; with auth off every connection counts as a key
holder. The bridge is the gate: x11vnc's own ``-viewonly`` is lifted when a connection that may control arrives and
put back only by ``POST /control {enabled: false}`` while no takeover is open.

Why assets can carry the token in their **path** (``/vnc/{id}/_t/{token}/core/rfb.js``): noVNC is a tree of ES
modules whose imports are relative (``./util/logging.js``, ``../vendor/pako/…``). A ``?token=`` on the first
import is not carried to those, and cookies are no way out in the case that matters (a cross-origin iframe over
plain http: third-party cookies are blocked, and ``SameSite=None`` needs ``Secure``). A path prefix is carried
by every relative import, with no cookies, service worker or import map, so the page loads the client from
``./_t/{token}/core/rfb.js`` and the whole module graph stays authorised. The prefix is stripped before the
request is proxied to the slot's websockify.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any
from urllib.parse import quote

import httpx
from fastapi import APIRouter, Request, WebSocket
from fastapi.responses import HTMLResponse, Response
from pydantic import StrictBool
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException

from openbrowse.api.body import parse_body
from openbrowse.api.bridge_admission import admitted_bridge
from openbrowse.api.bridge_limits import BridgeFlow
from openbrowse.api.deps import AuthenticatorDep, LiveTargetsDep, LoopbackHttpDep, SettingsDep, TakeoversDep
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
from openbrowse.api.stream_places import CountedEventSource, StreamPlaces
from openbrowse.api.vnc_input import RfbClientStream, vnc_screen
from openbrowse.api.ws_bridge import (
    CLOSE_UNAVAILABLE,
    bridge,
    bridge_until,
    close_quietly,
    offered_subprotocol,
)
from openbrowse.errors import NotFound, OpenBrowseError
from openbrowse.sessions.live import LiveTarget
from openbrowse.sessions.maintenance import Maintenance
from openbrowse.sessions.runtime import LiveSlot
from openbrowse.sessions.takeover import TakeoverTokens

router = APIRouter(prefix="/vnc", tags=["live view"], responses=error_responses(401, 404, 422, 429))

logger = logging.getLogger(__name__)

TOKEN_PREFIX = "_t/"
VNC_MAX_MESSAGE = 1 << 20
"""Largest message a viewer may send: noVNC sends key, pointer and clipboard events, all small."""
VNC_MAX_UPSTREAM_MESSAGE = 16 << 20
"""Largest message websockify may send a viewer: it frames what it reads from x11vnc in reads of at most 64 KiB;
anything near this is not a framebuffer update."""
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
    """Whether connections made with the API key or the dashboard's credentials are view-only."""


TAKEOVER_PARAM = "takeover"
_RESUME_PATHS = {"session": "/v3/sessions/{id}/resume", "browser": "/v3/browsers/{id}/resume"}


def _slot_of(target: LiveTarget) -> LiveSlot:
    if target.slot is None:
        raise NotFound("Session has no live browser" if target.kind == "session" else "Browser is stopped")
    return target.slot


@router.get("/{target_id}/view", response_class=HTMLResponse)
async def view(
    target_id: str,
    request: Request,
    targets: LiveTargetsDep,
    auth: AuthenticatorDep,
    settings: SettingsDep,
    takeovers: TakeoversDep,
) -> HTMLResponse:
    """The viewer page; a page saying there is nothing to watch when no browser of the id is up. Opened with the
    target's open takeover token it sends input and offers "Hand back to agent"."""
    auth.require_viewer(request, target_id)
    target = await targets.resolve(target_id)
    if target.slot is None:
        refresh = REFRESH_SECONDS if target.may_come_alive else None
        page = no_live_browser_page(
            target_id=target_id, kind=target.kind, status=target.status, refresh_seconds=refresh
        )
        return HTMLResponse(page, headers=NO_BROWSER_HEADERS)
    token = auth.view_tokens.current(target_id) if settings.auth_enabled else None
    client_url = f"./{TOKEN_PREFIX}{token}/core/rfb.js" if token else "./core/rfb.js"
    takeover = takeovers.allows(target_id, request.query_params.get(TAKEOVER_PARAM))
    page = viewer_page(
        target_id=target_id,
        client_url=client_url,
        default_path=f"vnc/{target_id}/websockify",
        token=token,
        resume_path=_RESUME_PATHS[target.kind].format(id=quote(target_id, safe="")) if takeover else None,
    )
    return HTMLResponse(page, headers=VIEWER_HEADERS)


@router.post(
    "/{target_id}/control",
    response_model=ControlView,
    response_model_by_alias=True,
    responses=error_responses(422, 502),
    openapi_extra=request_body(ControlBody),
)
async def control(
    target_id: str, request: Request, targets: LiveTargetsDep, auth: AuthenticatorDep, takeovers: TakeoversDep
) -> ControlView:
    """Let live viewers who connected with the API key or the dashboard's credentials also control the browser
    (``enabled: true``), or only watch it (the default). Viewers on ``liveUrl`` stay view-only either way."""
    auth.require_viewer(request, None)  # no resource id: the view token does not grant control
    body = await parse_body(request, ControlBody)
    slot = _slot_of(await targets.resolve(target_id))
    takeovers.set_key_holder_control(target_id, body.enabled)
    try:
        await _lift_view_only(slot, needed=body.enabled or takeovers.is_open(target_id))
    except _VNC_ERRORS as exc:
        logger.warning("Live view mode could not be switched: %s", exc)
        raise HTTPException(502, "The live view mode could not be switched") from exc
    return ControlView(view_only=not body.enabled)


async def _lift_view_only(slot: LiveSlot, *, needed: bool) -> None:
    """Switch x11vnc's own view-only mode to match ``needed`` (the bridge decides whose input passes)."""
    if slot.view_only == needed:
        await slot.set_view_only(not needed)


def _input_gate(
    takeovers: TakeoverTokens, target_id: str, takeover: str | None, key_holder: bool
) -> Callable[[], bool]:
    """Whether this connection may send input right now (asked for every input message)."""

    def may_input() -> bool:
        if takeover is not None and takeovers.allows(target_id, takeover):
            return True
        return key_holder and takeovers.key_holder_control(target_id)

    return may_input


@router.websocket("/{target_id}/websockify")
async def websockify(
    websocket: WebSocket,
    target_id: str,
    targets: LiveTargetsDep,
    auth: AuthenticatorDep,
    takeovers: TakeoversDep,
    settings: SettingsDep,
) -> None:
    """VNC bytes, bridged to the slot's websockify; input only from a connection that may control (see the module
    docstring). Bad credentials: the handshake is refused (401/429); with ``LIVE_VIEW_MAX_CONNECTIONS`` open
    already: refused 429; with the server's descriptor budget spent: refused 503; nothing to show: accepted, then
    closed 1011; a client stream the bridge cannot follow: closed 1008."""
    async with admitted_bridge(
        websocket,
        "vnc",
        target_id,
        lambda: auth.require_viewer(websocket, target_id),
        cap=settings.LIVE_VIEW_MAX_CONNECTIONS,
        setting="LIVE_VIEW_MAX_CONNECTIONS",
        what="This live view",
    ) as flow:
        if flow is not None:
            await _view_stream(websocket, target_id, targets, auth, takeovers, flow)


async def _view_stream(
    websocket: WebSocket,
    target_id: str,
    targets: LiveTargetsDep,
    auth: AuthenticatorDep,
    takeovers: TakeoversDep,
    flow: BridgeFlow,
) -> None:
    await websocket.accept(subprotocol=offered_subprotocol(websocket, "binary"))
    presented = websocket.query_params.get(TAKEOVER_PARAM)
    takeover = presented if takeovers.allows(target_id, presented) else None  # judged at connect time, and again
    may_input = _input_gate(takeovers, target_id, takeover, auth.holds_key_or_login(websocket))
    try:
        target = await targets.resolve(target_id)
        slot = _slot_of(target)
        if may_input():
            await _lift_view_only(slot, needed=True)
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
        stream = RfbClientStream(may_input, on_input=lambda: takeovers.note_input(target_id))
        connection = bridge(
            websocket,
            slot.novnc_ws_url,
            max_message=VNC_MAX_MESSAGE,
            max_upstream_message=VNC_MAX_UPSTREAM_MESSAGE,
            flow=flow,
            subprotocol="binary",
            screen=vnc_screen(stream),
        )
        await bridge_until(connection, target.ended)
    finally:
        slot.remove_viewer(ticket)  # the last viewer out stops the VNC side after a grace period


@router.get("/{target_id}/notices", response_class=EventSourceResponse)
async def notices(
    target_id: str, request: Request, targets: LiveTargetsDep, auth: AuthenticatorDep, settings: SettingsDep
) -> EventSourceResponse:
    """Server notices for the viewer page, as server-sent events: ``maintenance_warning`` ``{endsAt}`` (ms since the
    epoch) once the server drains for maintenance (spec §21.6), then the stream ends. Bounded like ``/events``."""
    auth.require_viewer(request, target_id)
    await targets.resolve(target_id)  # 404 for an unknown id
    places: StreamPlaces = request.app.state.notice_streams
    place = places.take(target_id)
    return CountedEventSource(place, _notices(request.app.state.maintenance), ping=settings.EVENTS_PING_INTERVAL)


async def _notices(maintenance: Maintenance) -> AsyncIterator[ServerSentEvent]:
    await maintenance.announced.wait()
    if maintenance.notice is not None:
        yield ServerSentEvent(data=json.dumps(maintenance.notice.wire()), event="maintenance_warning")


@router.get("/{target_id}/{asset:path}", responses=_ASSET_RESPONSES)
async def asset(
    target_id: str,
    asset: str,
    request: Request,
    targets: LiveTargetsDep,
    auth: AuthenticatorDep,
    http: LoopbackHttpDep,
) -> Response:
    """A static noVNC file from the slot's websockify (``--web NOVNC_WEB_DIR``)."""
    if asset.startswith(TOKEN_PREFIX):
        token, _, asset = asset.removeprefix(TOKEN_PREFIX).partition("/")
        require_path_token(auth, request, target_id, token)
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
