"""The browser control API's HTTP surface (spec §20): every route of the control catalog, served under
``/v3/sessions/{id}/browser`` and ``/v3/browsers/{id}/browser``.

Handlers are built from the catalog rather than written one by one: each parses the JSON body (an object, or
nothing), hands the call to :class:`~openbrowse.sessions.control.ControlService`, and renders a refusal as
``{error, code?, detail}`` with the status the control layer chose. Validation is a 400 here, never FastAPI's 422
list (spec §20.4). A session takes the API key; a raw browser also takes its own CDP token (spec §20.1).

Files a call makes (screenshots, PDFs, traces, downloads) are answered with their files route (spec §22.3), the one
route every file of a file area is served by. A caller that asked for URLs (``includeUrls=true``, as in the
downloads listing) or that holds only the browser's own token (which that route does not take) gets it signed.

These routes are left out of the OpenAPI document: their bodies are the seed's free-form shapes, which a schema
would only restate loosely (docs/control-api.md describes them).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from openbrowse.api.auth import presented_key
from openbrowse.api.body import read_json
from openbrowse.api.deps import authenticator_of
from openbrowse.api.file_urls import FILE_AREAS, FileUrlSigner, OwnerKind
from openbrowse.api.resource_auth import require_cdp_access, token_matches
from openbrowse.config import Settings
from openbrowse.control.call import Method
from openbrowse.control.catalog import loaded_route, route_for
from openbrowse.control.errors import ControlError, act_invalid
from openbrowse.control.paths import ROUTE_PATHS
from openbrowse.control.target import FileUrl
from openbrowse.errors import MalformedRequest
from openbrowse.sessions.control import ControlService, TargetKind

__all__ = ["install_control_routes"]

PREFIXES: dict[TargetKind, str] = {
    "session": "/v3/sessions/{owner_id}/browser",
    "browser": "/v3/browsers/{owner_id}/browser",
}
_CREDENTIAL_PARAMS = frozenset({"token"})
_YES = frozenset({"1", "true", "yes", "on"})


def _service(request: Request) -> ControlService:
    service: ControlService = request.app.state.controls
    return service


def _authorize(kind: TargetKind, request: Request, owner_id: str) -> None:
    settings: Settings = request.app.state.settings
    authenticator = authenticator_of(request)
    if kind == "browser":
        require_cdp_access(authenticator, settings, request, owner_id)
    else:
        authenticator.require_api_key(request)


def _asked_for_urls(request: Request, body: dict[str, Any]) -> bool:
    asked = body.get("includeUrls", request.query_params.get("includeUrls"))
    return asked is True or (isinstance(asked, str) and asked.lower() in _YES)


def _signed_url(kind: TargetKind, request: Request, owner_id: str, body: dict[str, Any]) -> FileUrl | None:
    """Signed files URLs for a caller that asked for them or that cannot use the API key; else None (plain)."""
    settings: Settings = request.app.state.settings
    holds_key = not settings.auth_enabled or token_matches(presented_key(request), settings.API_KEY or "")
    if holds_key and not _asked_for_urls(request, body):
        return None
    signer: FileUrlSigner = request.app.state.file_urls
    base = str(request.base_url)
    owners: OwnerKind = "sessions" if kind == "session" else "browsers"

    def signed(area: str, name: str) -> str:
        if area not in FILE_AREAS:
            raise ValueError(f"{area} is not an area of the files route")
        return signer.url(base, owners, owner_id, area, name)

    return signed


def _refusal(exc: ControlError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status)


async def _body(request: Request) -> dict[str, Any]:
    try:
        data = await read_json(request)
    except MalformedRequest as exc:
        raise act_invalid(exc.message) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise act_invalid("The request body must be a JSON object.")
    return data


def _endpoint(kind: TargetKind, method: Method, route_path: str) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        owner_id = request.path_params["owner_id"]
        _authorize(kind, request, owner_id)
        # the serving modules (and Playwright) load on the control API's first call, on a thread
        route = loaded_route(method, route_path)
        if route is None:
            route = await asyncio.to_thread(route_for, method, route_path)
        query = {key: value for key, value in request.query_params.items() if key not in _CREDENTIAL_PARAMS}
        path = {key: value for key, value in request.path_params.items() if key != "owner_id"}
        try:
            body = await _body(request) if request.method != "GET" else {}
            signed_url = _signed_url(kind, request, owner_id, body)
            result = await _service(request).call(kind, owner_id, route, query, body, path, signed_url)
        except ControlError as exc:
            return _refusal(exc)
        return Response(json.dumps(result, default=str), media_type="application/json")

    endpoint.__name__ = f"control_{kind}_{method.lower()}_{route_path.strip('/').replace('/', '_') or 'status'}"
    return endpoint


def install_control_routes(app: FastAPI) -> None:
    router = APIRouter(include_in_schema=False)
    for kind, prefix in PREFIXES.items():
        for method, route_path in ROUTE_PATHS:
            endpoint = _endpoint(kind, method, route_path)
            router.add_api_route(f"{prefix}{route_path}", endpoint, methods=[method])
            if route_path == "":  # the status answers with or without the trailing slash, never a redirect
                router.add_api_route(f"{prefix}/", endpoint, methods=[method])
    app.include_router(router)
