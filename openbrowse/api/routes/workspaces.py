"""The v3 ``workspaces`` resource (spec §27.1), as the BU SDK's ``workspaces`` calls it.

Rows: ``POST``/``GET`` ``/v3/workspaces``, ``GET``/``PATCH``/``DELETE`` ``/v3/workspaces/{id}``. Files: the listing
(``prefix``, ``limit``, ``cursor``, ``includeUrls``, ``shallow``), upload plans (``POST …/files/upload``: one signed
PUT URL per file, good for 5 minutes, with the declared size in its path), the signed PUT itself, a download route
(the API key or a signed link, 15 minutes), ``DELETE …/files?path=`` and ``…/size``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Query, Request, Response
from starlette.exceptions import HTTPException

from openbrowse.api.body import parse_body
from openbrowse.api.deps import ApiKey, WorkspacesDep, authenticator_of
from openbrowse.api.file_urls import FileUrlSigner
from openbrowse.api.openapi_docs import GUARDED, error_responses
from openbrowse.api.routes.files import DescriptorResponse, authorize_signed
from openbrowse.api.schemas import MAX_PAGE
from openbrowse.api.workspace_schemas import (
    UploadPlanView,
    UploadRequest,
    UploadTicket,
    WorkspaceBody,
    WorkspaceFilesView,
    WorkspaceFileView,
    WorkspaceListView,
    WorkspaceSizeView,
    WorkspaceView,
    workspace_view,
)
from openbrowse.domain.ascii_numbers import is_ascii_digits
from openbrowse.domain.clock import to_wire
from openbrowse.domain.file_listing import DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT
from openbrowse.domain.workspaces import MAX_FILE_BYTES
from openbrowse.errors import TooLarge
from openbrowse.workspaces.service import FILE_TOO_LARGE

__all__ = ["install_workspace_routes"]

UPLOAD_URL_TTL_S = 5 * 60
_BODY_DOC = {
    "requestBody": {"content": {"application/json": {"schema": WorkspaceBody.model_json_schema(by_alias=True)}}}
}
_UPLOAD_DOC = {
    "requestBody": {"content": {"application/json": {"schema": UploadRequest.model_json_schema(by_alias=True)}}}
}
_UNKNOWN_ID = error_responses(404)

keyed = APIRouter(
    prefix="/v3/workspaces", tags=["workspaces"], dependencies=[ApiKey], responses=error_responses(401, 404, 422, 429)
)
signed = APIRouter(
    prefix="/v3/workspaces", tags=["workspaces"], responses=error_responses(400, 401, 403, 404, 413, 422, 429)
)


def _signer(request: Request) -> FileUrlSigner:
    signer: FileUrlSigner = request.app.state.file_urls
    return signer


def _content_path(workspace_id: str, path: str) -> str:
    return f"/v3/workspaces/{quote(workspace_id, safe='')}/content/{quote(path, safe='/')}"


def _upload_path(workspace_id: str, size: int, path: str) -> str:
    return f"/v3/workspaces/{quote(workspace_id, safe='')}/upload/{size}/{quote(path, safe='/')}"


def _base(request: Request) -> str:
    return str(request.base_url).rstrip("/")


@keyed.post("", status_code=201, response_model=WorkspaceView, response_model_by_alias=True, openapi_extra=_BODY_DOC)
async def create_workspace(request: Request, workspaces: WorkspacesDep) -> WorkspaceView:
    body = await parse_body(request, WorkspaceBody)
    return workspace_view(await workspaces.create(body.name))


@keyed.get("", response_model=WorkspaceListView, response_model_by_alias=True)
async def list_workspaces(
    workspaces: WorkspacesDep,
    page_number: Annotated[int, Query(alias="pageNumber", ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 20,
) -> WorkspaceListView:
    records, total = await workspaces.page(page_number, page_size)
    items = [workspace_view(record) for record in records]
    return WorkspaceListView(items=items, total_items=total, page_number=page_number, page_size=page_size)


@keyed.get("/{workspace_id}", response_model=WorkspaceView, response_model_by_alias=True, responses=_UNKNOWN_ID)
async def get_workspace(workspace_id: str, workspaces: WorkspacesDep) -> WorkspaceView:
    return workspace_view(await workspaces.get(workspace_id))


@keyed.patch(
    "/{workspace_id}",
    response_model=WorkspaceView,
    response_model_by_alias=True,
    openapi_extra=_BODY_DOC,
    responses=_UNKNOWN_ID,
)
async def update_workspace(workspace_id: str, request: Request, workspaces: WorkspacesDep) -> WorkspaceView:
    """Set the name (``null`` clears it)."""
    body = await parse_body(request, WorkspaceBody)
    return workspace_view(await workspaces.rename(workspace_id, body.name))


@keyed.delete("/{workspace_id}", status_code=204, response_class=Response, responses=_UNKNOWN_ID)
async def delete_workspace(workspace_id: str, workspaces: WorkspacesDep) -> Response:
    """Delete the workspace and all its files."""
    await workspaces.delete(workspace_id)
    return Response(status_code=204)


@keyed.get("/{workspace_id}/files", response_model=WorkspaceFilesView, response_model_by_alias=True)
async def list_workspace_files(
    workspace_id: str,
    request: Request,
    workspaces: WorkspacesDep,
    prefix: Annotated[str | None, Query(max_length=1024)] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE_LIMIT)] = DEFAULT_PAGE_LIMIT,
    cursor: Annotated[str | None, Query(max_length=4096)] = None,
    include_urls: Annotated[bool, Query(alias="includeUrls")] = False,
    shallow: bool = False,
) -> WorkspaceFilesView:
    """The workspace's files by path: those whose path starts with `prefix`, or with `shallow` those directly in
    the folder `prefix` (and its sub-folders' names in `folders`). `includeUrls` adds a signed download URL to each
    (15 minutes)."""
    page = await workspaces.files(workspace_id, prefix, limit, cursor, shallow=shallow)
    files = []
    for entry in page.files:
        url = (
            _base(request) + _signer(request).sign_path(_content_path(workspace_id, entry.path))
            if include_urls
            else None
        )
        files.append(
            WorkspaceFileView(path=entry.path, size=entry.size, last_modified=to_wire(entry.modified_at), url=url)
        )
    return WorkspaceFilesView(files=files, folders=page.folders, next_cursor=page.next_cursor, has_more=page.has_more)


@keyed.post(
    "/{workspace_id}/files/upload",
    response_model=UploadPlanView,
    response_model_by_alias=True,
    openapi_extra=_UPLOAD_DOC,
    responses=error_responses(400, 404, 413),
)
async def plan_workspace_uploads(
    workspace_id: str,
    request: Request,
    workspaces: WorkspacesDep,
    prefix: Annotated[str | None, Query(max_length=1024)] = None,
) -> UploadPlanView:
    """One signed PUT URL per file (1-10 files), valid 5 minutes; each file lands at `<prefix>/<name>` (prefix
    default `uploads`). 413 when the declared sizes go over 100 MiB a file or the workspace's limit."""
    body = await parse_body(request, UploadRequest)
    planned = await workspaces.plan_uploads(workspace_id, prefix, [(item.name, item.size) for item in body.files])
    signer = _signer(request)
    tickets = [
        UploadTicket(
            name=item.name,
            path=item.path,
            upload_url=_base(request)
            + signer.sign_path(_upload_path(workspace_id, item.size, item.path), ttl_s=UPLOAD_URL_TTL_S),
        )
        for item in planned
    ]
    return UploadPlanView(files=tickets)


@keyed.delete("/{workspace_id}/files", status_code=204, response_class=Response, responses=error_responses(400, 404))
async def delete_workspace_file(
    workspace_id: str, workspaces: WorkspacesDep, path: Annotated[str, Query(max_length=1024)]
) -> Response:
    if not await workspaces.delete_file(workspace_id, path):
        raise HTTPException(404, "No such file.")
    return Response(status_code=204)


@keyed.get("/{workspace_id}/size", response_model=WorkspaceSizeView, response_model_by_alias=True)
async def workspace_size(workspace_id: str, workspaces: WorkspacesDep) -> WorkspaceSizeView:
    usage = await workspaces.usage(workspace_id)
    return WorkspaceSizeView(used_bytes=usage.used_bytes, file_count=usage.file_count, limit_bytes=usage.limit_bytes)


async def _body_chunks(request: Request) -> AsyncIterator[bytes]:
    async for chunk in request.stream():
        if chunk:
            yield chunk


@signed.put("/{workspace_id}/upload/{size}/{path:path}", response_model=WorkspaceFileView, response_model_by_alias=True)
async def put_workspace_file(
    workspace_id: str,
    size: str,
    path: str,
    request: Request,
    workspaces: WorkspacesDep,
    expires: Annotated[str | None, Query()] = None,
    sig: Annotated[str | None, Query()] = None,
) -> WorkspaceFileView:
    """The signed upload URL of `files/upload`: the body becomes the file (no more than the size it declared)."""
    if not is_ascii_digits(size):
        raise HTTPException(404, "Not found")
    authorize_signed(
        request, lambda: _signer(request).verify_path(_upload_path(workspace_id, int(size), path), expires, sig)
    )
    declared = request.headers.get("content-length")
    if declared is not None and is_ascii_digits(declared) and int(declared) > int(size):
        raise TooLarge(
            FILE_TOO_LARGE if int(declared) > MAX_FILE_BYTES else "The upload is larger than the size it declared."
        )
    entry = await workspaces.store_upload(workspace_id, path, int(size), _body_chunks(request))
    return WorkspaceFileView(path=entry.path, size=entry.size, last_modified=to_wire(entry.modified_at))


async def _get_content(
    workspace_id: str, path: str, request: Request, workspaces: WorkspacesDep, expires: str | None, sig: str | None
) -> Response:
    if expires is None and sig is None:
        authenticator_of(request).require_api_key(request)
    else:
        authorize_signed(request, lambda: _signer(request).verify_path(_content_path(workspace_id, path), expires, sig))
    opened = await workspaces.open_file(workspace_id, path)
    if opened is None:
        raise HTTPException(404, "No such file.")
    return DescriptorResponse(opened, path.rpartition("/")[2], "workspaces")


@signed.get("/{workspace_id}/content/{path:path}", response_class=Response)
async def get_workspace_file(
    workspace_id: str,
    path: str,
    request: Request,
    workspaces: WorkspacesDep,
    expires: Annotated[str | None, Query(description="Expiry of a signed URL (seconds since the epoch)")] = None,
    sig: Annotated[str | None, Query(description="Signature of a signed URL")] = None,
) -> Response:
    """One workspace file, with HTTP Range: the API key, or a signed URL from the listing (`includeUrls`)."""
    return await _get_content(workspace_id, path, request, workspaces, expires, sig)


@signed.head("/{workspace_id}/content/{path:path}", include_in_schema=False)
async def head_workspace_file(
    workspace_id: str,
    path: str,
    request: Request,
    workspaces: WorkspacesDep,
    expires: str | None = None,
    sig: str | None = None,
) -> Response:
    return await _get_content(workspace_id, path, request, workspaces, expires, sig)


def install_workspace_routes(app: FastAPI) -> None:
    app.include_router(keyed, responses=GUARDED)
    app.include_router(signed, responses=GUARDED)
