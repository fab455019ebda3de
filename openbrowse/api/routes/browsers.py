"""The v3 ``browsers`` resource (spec §19.1): raw browsers, and their CDP endpoint proxied through this port.

``router`` holds the REST surface (API key). ``cdp_router`` holds the DevTools endpoint, authorised by one of
the browser's CDP tokens (Bearer header, ``openbrowse.bearer.<token>`` subprotocol or ``?token=``, spec §21.4) or
the API key:

* ``WS  /v3/browsers/{id}/cdp`` bridges to Chromium's own ``webSocketDebuggerUrl`` (127.0.0.1 only);
* ``GET /v3/browsers/{id}/cdp/json/version`` answers like Chromium, with ``webSocketDebuggerUrl`` pointing at
  the proxied socket, for clients given the http form (browser-use, Puppeteer's ``browserURL``).

A CDP client connected through the socket keeps the browser from idling out (spec §21.1); its connection is closed
when the browser stops, before the stop is answered.

``POST /v3/browsers/{id}/pause`` and ``/resume`` hand the browser to a person and back (spec §21.5). Resume sits on
``hand_back_router``: besides the API key it takes the browser's open takeover token as a Bearer token, so the
viewer page opened from ``takeoverUrl`` can hand the browser back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import Annotated, Any, TypeVar

from fastapi import APIRouter, Query, Request, WebSocket
from fastapi.responses import JSONResponse, Response
from starlette.requests import HTTPConnection

from openbrowse.api.body import parse_body
from openbrowse.api.bridge_admission import admitted_bridge
from openbrowse.api.bridge_limits import BridgeFlow
from openbrowse.api.browser_schemas import (
    BrowserListView,
    BrowserTokenView,
    BrowserView,
    CreateBrowserBody,
    IssueTokenBody,
    UpdateBrowserBody,
    browser_view,
    proxied_cdp_url,
)
from openbrowse.api.cdp_discovery import version_document
from openbrowse.api.cdp_filter import download_behavior_message, screen_client_message
from openbrowse.api.deps import ApiKey, AuthenticatorDep, BrowsersDep, LoopbackHttpDep, SettingsDep
from openbrowse.api.openapi_docs import error_responses, request_body
from openbrowse.api.pause_schemas import PauseBody, ResumeBody, require_key_or_takeover
from openbrowse.api.recording_urls import recording_urls
from openbrowse.api.resource_auth import CDP_SUBPROTOCOL, require_cdp_access
from openbrowse.api.schemas import MAX_PAGE
from openbrowse.api.ws_bridge import (
    CLOSE_UNAVAILABLE,
    bridge,
    bridge_until,
    close_quietly,
    offered_subprotocol,
)
from openbrowse.config import Settings
from openbrowse.domain.browsers import BrowserRecord, BrowserStatus
from openbrowse.domain.clock import to_wire
from openbrowse.errors import InvalidRequest, OpenBrowseError
from openbrowse.sessions.browser_capacity import CapacityExceeded
from openbrowse.sessions.browser_tokens import IssuedToken
from openbrowse.sessions.browsers import BrowserService

router = APIRouter(
    prefix="/browsers", tags=["browsers"], dependencies=[ApiKey], responses=error_responses(401, 422, 429)
)
cdp_router = APIRouter(prefix="/browsers", tags=["browsers"], responses=error_responses(401, 404, 422, 429))
hand_back_router = APIRouter(prefix="/browsers", tags=["browsers"], responses=error_responses(401, 404, 422, 429))
_UNKNOWN_ID = error_responses(404)

logger = logging.getLogger(__name__)

T = TypeVar("T")

MIB = 1 << 20
GREETING_ID = 2**31 - 1
"""The id of the bridge's own first call (downloads into ``downloads/``), answered before the client is heard."""
CLIENT_CLOSED_REQUEST = 499  # nginx's code: the client went away before the answer was ready
_CREATE_BODY_DOC = {
    "requestBody": {"content": {"application/json": {"schema": CreateBrowserBody.model_json_schema(by_alias=True)}}}
}


def _view(
    record: BrowserRecord,
    conn: HTTPConnection,
    browsers: BrowserService,
    settings: Settings,
    token: IssuedToken | None = None,
) -> BrowserView:
    return browser_view(
        record,
        live_url=browsers.live_url(record),
        conn=conn,
        settings=settings,
        queue=browsers.queue(record),
        token=token,
        pause=browsers.pause_of(record),
        takeover_url=browsers.takeover_url(record),
        recording_url=_recording_url(conn, record),
        proxy_bytes=browsers.proxy_bytes(record),
    )


def _recording_url(conn: HTTPConnection, record: BrowserRecord) -> str | None:
    """The signed link to a stopped browser's recording (spec §22.1), once it is final."""
    if not record.enable_recording or record.active:
        return None
    return next(iter(recording_urls(conn, "browsers", record.id)), None)


def _capacity_refusal(exc: CapacityExceeded) -> JSONResponse:
    return JSONResponse(
        {"detail": exc.message, "code": exc.code}, status_code=429, headers={"Retry-After": str(exc.retry_after)}
    )


class _ClientGone(Exception):
    """The HTTP client disconnected while the request was still being worked on."""


async def _until_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _while_connected(request: Request, work: Awaitable[T]) -> T:
    """Await ``work``, cancelling it if the client disconnects first (then raise ``_ClientGone``)."""
    job = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_until_disconnect(request))
    try:
        await asyncio.wait({job, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
        if not job.done():
            job.cancel()
        await asyncio.gather(job, gone, return_exceptions=True)
    if job.cancelled():
        raise _ClientGone
    return job.result()


@router.post(
    "",
    status_code=201,
    response_model=BrowserView,
    response_model_by_alias=True,
    openapi_extra=_CREATE_BODY_DOC,
    responses=error_responses(503),
)
async def create_browser(request: Request, browsers: BrowsersDep, settings: SettingsDep) -> Any:
    """Start a browser on a display slot and answer once it is up, with a CDP token. With every slot busy: 429
    ``capacity_exceeded`` at once, after ``waitForCapacityMs``, or (``queueForCapacity``) a queued browser at once."""
    body = await parse_body(request, CreateBrowserBody)
    try:
        record = await _while_connected(request, browsers.create(body.to_request(settings)))
    except _ClientGone:
        logger.info("A browser request was abandoned by its client before the browser was up")
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    except CapacityExceeded as exc:
        return _capacity_refusal(exc)
    token = browsers.issue_token(record.id, settings.BROWSER_TOKEN_TTL_S)
    return _view(record, request, browsers, settings, token)


@router.get("", response_model=BrowserListView, response_model_by_alias=True)
async def list_browsers(
    request: Request,
    browsers: BrowsersDep,
    settings: SettingsDep,
    page_number: Annotated[int, Query(alias="pageNumber", ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 20,
    filter_by: Annotated[BrowserStatus | None, Query(alias="filterBy")] = None,
) -> BrowserListView:
    records, total = await browsers.page(page_number, page_size, filter_by)
    return BrowserListView(
        items=[_view(record, request, browsers, settings) for record in records],
        total_items=total,
        page_number=page_number,
        page_size=page_size,
    )


@router.get("/{browser_id}", response_model=BrowserView, response_model_by_alias=True, responses=_UNKNOWN_ID)
async def get_browser(browser_id: str, request: Request, browsers: BrowsersDep, settings: SettingsDep) -> BrowserView:
    return _view(await browsers.get(browser_id), request, browsers, settings)


@router.patch(
    "/{browser_id}",
    response_model=BrowserView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(UpdateBrowserBody),
)
async def update_browser(
    browser_id: str, request: Request, browsers: BrowsersDep, settings: SettingsDep
) -> BrowserView:
    """``{"action": "stop"}``: stop the browser (idempotent). Answers once its CDP and live-view access is cut and it
    reads stopped; its slot is torn down right after, before anyone else gets it."""
    await browsers.get(browser_id)  # 404 before judging the body
    await parse_body(request, UpdateBrowserBody)
    return _view(await browsers.stop(browser_id), request, browsers, settings)


@router.post(
    "/{browser_id}/token",
    response_model=BrowserTokenView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(IssueTokenBody, required=False),
)
async def issue_browser_token(
    browser_id: str, request: Request, browsers: BrowsersDep, settings: SettingsDep
) -> BrowserTokenView:
    """A fresh CDP token (the earlier ones stay valid until they expire); 422 once the browser has ended."""
    record = await browsers.get(browser_id)
    token = browsers.issue_token(browser_id, settings.BROWSER_TOKEN_TTL_S) if record.active else None
    if token is None:
        raise InvalidRequest("Browser has ended; start a new one.")
    cdp_url = proxied_cdp_url(request, settings, browser_id, token.value) if record.live else None
    return BrowserTokenView(
        id=browser_id, token=token.value, token_expires_at=to_wire(token.expires_at), cdp_url=cdp_url
    )


@router.post(
    "/{browser_id}/pause",
    response_model=BrowserView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(PauseBody),
)
async def pause_browser(browser_id: str, request: Request, browsers: BrowsersDep, settings: SettingsDep) -> BrowserView:
    """Hand a live browser to a person: ``state`` becomes ``paused``, its idle clock stops, and ``takeoverUrl``
    opens its live view with input enabled for that link alone. Idempotent; a stopped or queued browser: 422
    ``session_not_pausable``."""
    await browsers.get(browser_id)  # 404 before judging the body
    body = await parse_body(request, PauseBody)
    return _view(await browsers.pause(browser_id, body.reason), request, browsers, settings)


@hand_back_router.post(
    "/{browser_id}/resume",
    response_model=BrowserView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(ResumeBody),
)
async def resume_browser(
    browser_id: str, request: Request, browsers: BrowsersDep, settings: SettingsDep
) -> BrowserView:
    """End the pause: the takeover link turns view-only at once. Takes the API key or the browser's takeover token
    (``Authorization: Bearer``). Not paused: 422 ``session_not_paused``."""
    require_key_or_takeover(request, browser_id)
    await browsers.get(browser_id)
    body = await parse_body(request, ResumeBody)
    return _view(await browsers.resume(browser_id, body.note), request, browsers, settings)


@cdp_router.websocket("/{browser_id}/cdp")
async def cdp_socket(
    websocket: WebSocket,
    browser_id: str,
    browsers: BrowsersDep,
    auth: AuthenticatorDep,
    settings: SettingsDep,
) -> None:
    """The browser's DevTools socket. Bad credentials: the handshake is refused (401/429); with
    ``CDP_MAX_CONNECTIONS_PER_BROWSER`` open already: refused 429; with the server's descriptor budget spent: refused
    503; a browser that is unknown, stopped or gone:
    accepted, then closed 1011. File paths in client calls are confined to the browser's ``uploads/`` and
    ``downloads/`` (spec §24.6, :mod:`openbrowse.api.cdp_filter`). A client that offered the ``openbrowse``
    subprotocol gets it echoed."""
    async with admitted_bridge(
        websocket,
        "cdp",
        browser_id,
        lambda: require_cdp_access(auth, settings, websocket, browser_id),
        cap=settings.CDP_MAX_CONNECTIONS_PER_BROWSER,
        setting="CDP_MAX_CONNECTIONS_PER_BROWSER",
        what="This browser",
    ) as flow:
        if flow is not None:
            await _bridge_cdp(websocket, browser_id, browsers, settings, flow)


async def _bridge_cdp(
    websocket: WebSocket, browser_id: str, browsers: BrowserService, settings: Settings, flow: BridgeFlow
) -> None:
    await websocket.accept(subprotocol=offered_subprotocol(websocket, CDP_SUBPROTOCOL))
    try:
        endpoint = await browsers.cdp_endpoint(browser_id)
    except OpenBrowseError as exc:
        await close_quietly(websocket, CLOSE_UNAVAILABLE, exc.message)
        return
    folders = endpoint.folders
    browsers.cdp_connected(browser_id)
    try:
        connection = bridge(
            websocket,
            endpoint.ws_url,
            max_message=settings.CDP_MAX_FRAME_FROM_CLIENT_MB * MIB,
            max_upstream_message=settings.CDP_MAX_FRAME_FROM_BROWSER_MB * MIB,
            flow=flow,
            screen=lambda message: screen_client_message(message, folders),
            greeting=download_behavior_message(GREETING_ID, folders),
        )
        await bridge_until(connection, browsers.ended_signal(browser_id))
    finally:
        browsers.cdp_disconnected(browser_id)


@cdp_router.get("/{browser_id}/cdp/json/version", responses=error_responses(502, 503))
@cdp_router.get("/{browser_id}/cdp/json/version/", include_in_schema=False)
async def cdp_version(
    browser_id: str,
    request: Request,
    browsers: BrowsersDep,
    auth: AuthenticatorDep,
    settings: SettingsDep,
    http: LoopbackHttpDep,
) -> JSONResponse:
    """Chromium's ``/json/version``, with ``webSocketDebuggerUrl`` rewritten to the proxied socket (spec §23.4).
    That URL keeps a ``?token=`` the request carried, carries no token for a Bearer-token request (the client sends
    its header again) and a fresh token for an API-key holder (:mod:`openbrowse.api.cdp_discovery`)."""
    require_cdp_access(auth, settings, request, browser_id)
    version = await version_document(request, browser_id, browsers, settings, http)
    return JSONResponse(version, headers={"Cache-Control": "no-store"})
