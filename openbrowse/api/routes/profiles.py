"""The v3 profiles surface (spec §4.9): CRUD, and storage-state import (creates by id) and export."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response

from openbrowse.api.body import parse_body, read_json
from openbrowse.api.deps import ApiKey, ProfilesDep
from openbrowse.api.openapi_docs import error_responses
from openbrowse.api.profile_schemas import ProfileBody, ProfileListView, ProfileView, profile_view
from openbrowse.api.schemas import MAX_PAGE

router = APIRouter(
    prefix="/profiles", tags=["profiles"], dependencies=[ApiKey], responses=error_responses(401, 422, 429)
)
_UNKNOWN_ID = error_responses(404)

_BODY_DOC = {"requestBody": {"content": {"application/json": {"schema": ProfileBody.model_json_schema(by_alias=True)}}}}
_STATE_DOC = {"requestBody": {"content": {"application/json": {"schema": {"type": "object"}}}}}


@router.post("", status_code=201, response_model=ProfileView, response_model_by_alias=True, openapi_extra=_BODY_DOC)
async def create_profile(request: Request, profiles: ProfilesDep) -> ProfileView:
    body = await parse_body(request, ProfileBody)
    return profile_view(await profiles.create(body.name, body.user_id))


@router.get("", response_model=ProfileListView, response_model_by_alias=True)
async def list_profiles(
    profiles: ProfilesDep,
    page: Annotated[int | None, Query(ge=1, le=MAX_PAGE)] = None,
    page_size: Annotated[int | None, Query(ge=1, le=100)] = None,
    page_number: Annotated[int | None, Query(alias="pageNumber", ge=1, le=MAX_PAGE)] = None,
    page_size_alias: Annotated[int | None, Query(alias="pageSize", ge=1, le=100)] = None,
    query: Annotated[str | None, Query(max_length=200)] = None,
) -> ProfileListView:
    number = page if page is not None else page_number or 1
    size = page_size if page_size is not None else page_size_alias or 20
    records, total = await profiles.page(number, size, query or None)
    return ProfileListView(
        items=[profile_view(record) for record in records], total_items=total, page_number=number, page_size=size
    )


@router.get("/{profile_id}", response_model=ProfileView, response_model_by_alias=True, responses=_UNKNOWN_ID)
async def get_profile(profile_id: str, profiles: ProfilesDep) -> ProfileView:
    return profile_view(await profiles.get(profile_id))


@router.patch(
    "/{profile_id}",
    response_model=ProfileView,
    response_model_by_alias=True,
    openapi_extra=_BODY_DOC,
    responses=_UNKNOWN_ID,
)
async def update_profile(profile_id: str, request: Request, profiles: ProfilesDep) -> ProfileView:
    """Apply the non-null fields of ``{"name", "userId"}``; ``null`` never clears."""
    body = await parse_body(request, ProfileBody)
    return profile_view(await profiles.update(profile_id, name=body.name, user_id=body.user_id))


@router.put(
    "/{profile_id}",
    response_model=ProfileView,
    response_model_by_alias=True,
    openapi_extra=_BODY_DOC,
    responses=_UNKNOWN_ID,
)
async def replace_profile(profile_id: str, request: Request, profiles: ProfilesDep) -> ProfileView:
    """Identical to PATCH (spec §4.9)."""
    return await update_profile(profile_id, request, profiles)


@router.delete("/{profile_id}", status_code=204, response_class=Response, responses=_UNKNOWN_ID)
async def delete_profile(profile_id: str, profiles: ProfilesDep) -> Response:
    await profiles.delete(profile_id)
    return Response(status_code=204)


@router.put(
    "/{profile_id}/storage-state",
    response_model=ProfileView,
    response_model_by_alias=True,
    openapi_extra=_STATE_DOC,
    responses=error_responses(400),
)
async def import_storage_state(profile_id: str, request: Request, profiles: ProfilesDep) -> ProfileView:
    """Replace the jar (backing up the old one); creates the profile when the id is new."""
    payload = await read_json(request)
    return profile_view(await profiles.import_state(profile_id, payload))


@router.get("/{profile_id}/storage-state", responses=_UNKNOWN_ID)
async def export_storage_state(profile_id: str, profiles: ProfilesDep) -> dict[str, Any]:
    """The jar as stored: a live credential."""
    return await profiles.export_state(profile_id)
