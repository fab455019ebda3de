"""Files in and out of sessions and raw browsers (spec §22.2, §22.3).

* ``GET /v3/{sessions|browsers}/{id}/downloads`` — BU's download listing (``limit``, ``cursor``, ``includeUrls``).
* ``PUT /v3/{sessions|browsers}/{id}/uploads/{name}`` — a file (≤ 100 MiB, streamed to disk) the agent's
  ``upload_file``, the control API's file chooser and a raw CDP client may put into a page.
* ``GET /v3/{sessions|browsers}/{id}/files/{area}`` — the same listing for any area (``screenshots`` holds the
  control API's screenshots and PDFs, ``traces`` its traces).
* ``GET /v3/{sessions|browsers}/{id}/files/{area}/{name}`` — one file, with HTTP Range. It takes the API key or a
  signed URL that we issued (``?expires=&sig=``): a link that can be handed to a browser or a download tool.

Every file is opened without following links and served from the descriptor that was checked (``/proc/self/fd``),
so a name swapped for a link after the check still serves the checked file. Downloads are pages' bytes: they are
served as attachments, never rendered on this origin.
"""

from __future__ import annotations

import mimetypes
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated, Any, Protocol

from fastapi import APIRouter, FastAPI, Query
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.types import Receive, Scope, Send

from openbrowse.api.auth import client_ip, throttle_key
from openbrowse.api.deps import ApiKey, authenticator_of
from openbrowse.api.file_schemas import FileListView, FileView, file_view
from openbrowse.api.file_urls import FILE_AREAS, FileArea, FileUrlSigner, OwnerKind
from openbrowse.api.openapi_docs import GUARDED, error_responses
from openbrowse.domain.ascii_numbers import is_ascii_digits
from openbrowse.domain.file_listing import DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT
from openbrowse.sessions.file_area import MAX_UPLOAD_BYTES, FileAreas, UploadTooLarge

__all__ = ["BAD_LINK", "DescriptorResponse", "ReadableFile", "authorize_signed", "install_file_routes"]

KINDS: tuple[OwnerKind, ...] = ("sessions", "browsers")
UPLOAD_TOO_LARGE = "The upload is larger than the limit of 100 MiB."
_NO_AREA = "There is no such file area: use downloads, recordings, screenshots, uploads or traces."
BAD_LINK = "This file link is invalid or has expired; ask for a new one."
_INLINE_AREAS = frozenset({"recordings", "screenshots"})  # made by us, safe to show; the rest are attachments
_SAFE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox",
    "Cache-Control": "private, no-store",
}


_FILE_BODY: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "The file's bytes, typed by its name",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    },
    206: {
        "description": "The bytes of the requested Range",
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    },
}


def _areas(request: Request) -> FileAreas:
    areas: FileAreas = request.app.state.file_areas
    return areas


def _signer(request: Request) -> FileUrlSigner:
    signer: FileUrlSigner = request.app.state.file_urls
    return signer


class ReadableFile(Protocol):
    """An opened file to serve: :class:`OpenedFile`, or a workspace's."""

    status: os.stat_result

    @property
    def proc_path(self) -> str: ...

    def close(self) -> None: ...


class DescriptorResponse(FileResponse):
    """A ``FileResponse`` of an already opened file; the descriptor is closed when the response is done."""

    def __init__(self, opened: ReadableFile, name: str, area: str) -> None:
        media_type = mimetypes.guess_type(name)[0] or "application/octet-stream"
        super().__init__(
            opened.proc_path,
            media_type=media_type,
            filename=name,
            stat_result=opened.status,
            headers=_SAFE_HEADERS,
            content_disposition_type="inline" if area in _INLINE_AREAS else "attachment",
        )
        self._opened = opened

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._opened.close()


async def _list_area(
    request: Request, kind: OwnerKind, owner_id: str, area: FileArea, limit: int, cursor: str | None, urls: bool
) -> FileListView:
    page = await _areas(request).listing(kind, owner_id, area, limit, cursor)
    base = str(request.base_url)
    files: list[FileView] = []
    for entry in page.files:
        url = _signer(request).url(base, kind, owner_id, area, entry.name) if urls else None
        files.append(file_view(entry, url))
    return FileListView(files=files, next_cursor=page.next_cursor, has_more=page.has_more)


def _area_listing(kind: OwnerKind) -> Callable[..., Awaitable[FileListView]]:
    async def list_area(
        request: Request,
        owner_id: str,
        area: str,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = DEFAULT_PAGE_LIMIT,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
        include_urls: Annotated[bool, Query(alias="includeUrls")] = False,
    ) -> FileListView:
        if area not in FILE_AREAS:
            raise HTTPException(404, _NO_AREA)
        return await _list_area(request, kind, owner_id, area, limit, cursor, include_urls)

    list_area.__name__ = f"list_{kind[:-1]}_area"
    list_area.__doc__ = (
        f"The files of one area of this {kind[:-1]} (downloads, recordings, screenshots, uploads or traces), in "
        "name order, paged with `cursor` (also after it ended). `includeUrls=true` adds a signed URL to each."
    )
    return list_area


def _listing(kind: OwnerKind) -> Callable[..., Awaitable[FileListView]]:
    async def list_downloads(
        request: Request,
        owner_id: str,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = DEFAULT_PAGE_LIMIT,
        cursor: Annotated[str | None, Query(max_length=2048)] = None,
        include_urls: Annotated[bool, Query(alias="includeUrls")] = False,
    ) -> FileListView:
        return await _list_area(request, kind, owner_id, "downloads", limit, cursor, include_urls)

    list_downloads.__name__ = f"list_{kind[:-1]}_downloads"
    list_downloads.__doc__ = (
        f"The files this {kind[:-1]}'s browser downloaded, in name order, paged with `cursor` "
        "(also after it ended). `includeUrls=true` adds a signed URL to each, good for 15 minutes."
    )
    return list_downloads


async def _body_chunks(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        if chunk:
            yield chunk


def _upload(kind: OwnerKind) -> Callable[..., Awaitable[FileView]]:
    async def upload_file(request: Request, owner_id: str, name: str) -> FileView:
        declared = request.headers.get("content-length")
        if declared is not None and is_ascii_digits(declared) and int(declared) > MAX_UPLOAD_BYTES:
            raise HTTPException(413, UPLOAD_TOO_LARGE)
        try:
            entry = await _areas(request).store_upload(kind, owner_id, name, _body_chunks(request))
        except UploadTooLarge as exc:
            raise HTTPException(413, str(exc) or UPLOAD_TOO_LARGE) from exc
        return file_view(entry, _signer(request).url(str(request.base_url), kind, owner_id, "uploads", name))

    upload_file.__name__ = f"upload_{kind[:-1]}_file"
    upload_file.__doc__ = (
        f"Store the request body (at most 100 MiB) as `uploads/{{name}}` of this {kind[:-1]}, replacing a file of "
        "that name. The agent's `upload_file`, the control API's file chooser (`paths: [name]`) and a CDP client's "
        "`DOM.setFileInputFiles` can then put it into a page."
    )
    return upload_file


def _authorize_file(
    request: Request, kind: OwnerKind, owner_id: str, area: FileArea, name: str, expires: str | None, sig: str | None
) -> None:
    """The API key (or the dashboard's login), or a signature we issued for exactly this file (403 if not)."""
    if expires is None and sig is None:
        authenticator_of(request).require_api_key(request)
        return
    authorize_signed(request, lambda: _signer(request).verify(kind, owner_id, area, name, expires, sig))


def authorize_signed(request: Request, verify: Callable[[], bool]) -> None:
    """A signed link's check, under the per-IP failure throttle (spec §2.1): 403 when ``verify`` says no."""
    authenticator = authenticator_of(request)
    client = throttle_key(client_ip(request))
    if authenticator.enabled:
        authenticator.throttle.check(client)
    if not verify():
        if authenticator.enabled:
            authenticator.throttle.failed(client)
        raise HTTPException(403, BAD_LINK)
    if authenticator.enabled:
        authenticator.throttle.succeeded(client)


def _file(kind: OwnerKind) -> Callable[..., Awaitable[Response]]:
    async def get_file(
        request: Request,
        owner_id: str,
        area: str,
        name: str,
        expires: Annotated[str | None, Query(description="Expiry of a signed URL (seconds since the epoch)")] = None,
        sig: Annotated[str | None, Query(description="Signature of a signed URL")] = None,
    ) -> Response:
        if area not in FILE_AREAS:
            authenticator_of(request).require_api_key(request)  # unknown areas are news for key holders only
            return JSONResponse({"detail": _NO_AREA}, status_code=404)
        _authorize_file(request, kind, owner_id, area, name, expires, sig)
        opened = await _areas(request).open_file(kind, owner_id, area, name)
        if opened is None:
            return JSONResponse({"detail": "No such file."}, status_code=404)
        return DescriptorResponse(opened, name, area)

    get_file.__name__ = f"get_{kind[:-1]}_file"
    get_file.__doc__ = (
        f"One file of this {kind[:-1]} (`area`: downloads, recordings, screenshots, uploads or traces), with HTTP "
        "Range. Takes the API key, or the signed `expires`/`sig` of a URL this server issued (403 when tampered "
        "or expired)."
    )
    return get_file


def install_file_routes(app: FastAPI) -> None:
    """Add the file routes; the listing and upload routes take the API key, the file route its own check."""
    keyed = APIRouter(
        prefix="/v3", tags=["files"], dependencies=[ApiKey], responses=error_responses(401, 404, 422, 429)
    )
    files = APIRouter(prefix="/v3", tags=["files"], responses=error_responses(401, 404, 422, 429))
    for kind in KINDS:
        keyed.add_api_route(
            f"/{kind}/{{owner_id}}/downloads",
            _listing(kind),
            methods=["GET"],
            response_model=FileListView,
            response_model_by_alias=True,
        )
        keyed.add_api_route(
            f"/{kind}/{{owner_id}}/files/{{area}}",
            _area_listing(kind),
            methods=["GET"],
            response_model=FileListView,
            response_model_by_alias=True,
        )
        keyed.add_api_route(
            f"/{kind}/{{owner_id}}/uploads/{{name}}",
            _upload(kind),
            methods=["PUT"],
            response_model=FileView,
            response_model_by_alias=True,
            responses=error_responses(400, 413),
        )
        files.add_api_route(
            f"/{kind}/{{owner_id}}/files/{{area}}/{{name}}",
            _file(kind),
            methods=["GET"],
            response_class=FileResponse,
            responses={**_FILE_BODY, **error_responses(400, 403)},
        )
        files.add_api_route(
            f"/{kind}/{{owner_id}}/files/{{area}}/{{name}}", _file(kind), methods=["HEAD"], include_in_schema=False
        )
    app.include_router(keyed, responses=GUARDED)
    app.include_router(files, responses=GUARDED)
