"""The v3 sessions surface: create / follow-up, list, get, stop, delete, messages."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from openbrowse.api.body import parse_body
from openbrowse.api.deps import ApiKey, ManagerDep
from openbrowse.api.openapi_docs import error_responses, request_body
from openbrowse.api.pause_schemas import require_key_or_takeover
from openbrowse.api.recording_urls import recording_urls
from openbrowse.api.schemas import (
    MAX_PAGE,
    CreateSessionBody,
    MessageListView,
    PauseSessionBody,
    ResumeSessionBody,
    SessionListView,
    SessionView,
    StopSessionBody,
    UpdateSessionBody,
    message_view,
    session_json,
    session_view,
)
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, StopStrategy
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.requests import SessionCreate
from openbrowse.sessions.unsupported import unhonoured_entry

router = APIRouter(
    prefix="/sessions", tags=["sessions"], dependencies=[ApiKey], responses=error_responses(401, 422, 429)
)
_UNKNOWN_ID = error_responses(404)

_CREATE_BODY_DOC = {
    "requestBody": {"content": {"application/json": {"schema": CreateSessionBody.model_json_schema(by_alias=True)}}}
}
_RETIRED_FIELDS = ("thinkingEffort", "modelThinkingEffort")


def to_session_create(body: CreateSessionBody) -> SessionCreate:
    sent = frozenset(body.model_fields_set)
    retired = next(
        (
            wire
            for wire, name in zip(_RETIRED_FIELDS, ("thinking_effort", "model_thinking_effort"), strict=True)
            if name in sent
        ),
        None,
    )
    return SessionCreate(
        task=body.task,
        session_id=body.session_id,
        model=body.model,
        reasoning_effort=body.reasoning_effort,
        thinking_level=body.thinking_level,
        keep_alive=body.keep_alive,
        max_cost_usd=body.max_cost_usd,
        profile_id=body.profile_id,
        output_schema=body.output_schema,
        sensitive_data=body.sensitive_data,
        system_prompt_extension=body.system_prompt_extension,
        max_duration_ms=body.max_duration_ms,
        enable_recording=body.enable_recording,
        webhook_url=body.webhook_url,
        workspace_id=body.workspace_id,
        cache_script=body.cache_script,
        auto_heal=body.auto_heal,
        custom_proxy=body.custom_proxy,
        proxy_country_code=body.proxy_country_code,
        retired_field=retired,
        sent_fields=sent,
    )


@router.post(
    "",
    response_model=SessionView,
    response_model_by_alias=True,
    openapi_extra=_CREATE_BODY_DOC,
    responses=_UNKNOWN_ID,
)
async def create_session(request: Request, manager: ManagerDep) -> SessionView:
    """Create a session (optionally dispatching a task), or send a follow-up with ``sessionId``."""
    body = await parse_body(request, CreateSessionBody)
    record = await manager.create(to_session_create(body))
    if (entry := unhonoured_entry(body.unhonoured())) is not None:  # spec §2.2: never silently ignored
        await manager.feed.append(record.id, entry)
    return view_of(manager, record, request)


@router.get("", response_model=SessionListView, response_model_by_alias=True)
async def list_sessions(
    request: Request,
    manager: ManagerDep,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1,
    page_size: Annotated[int, Query(ge=1, le=100)] = 20,
) -> SessionListView:
    records, total = await manager.page(page, page_size)
    for record in records:
        request.app.state.view_tokens.renew(record.id)
    return SessionListView(
        sessions=[view_of(manager, record, request) for record in records], total=total, page=page, page_size=page_size
    )


def takeover_url(manager: SessionManager, record: SessionRecord) -> str | None:
    """The live view with input for its holder alone, while a person has taken over (spec §21.5)."""
    token = manager.takeover_token(record.id) if record.pause is not None else None
    if not token or not record.live_url:
        return None
    return f"{record.live_url}&takeover={token}"


def view_of(manager: SessionManager, record: SessionRecord, request: Request | None = None) -> SessionView:
    """The session as the API shows it; with ``request``, its finished recordings' signed URLs too (spec §22.1)."""
    recordings = recording_urls(request, "sessions", record.id) if request is not None else None
    return session_view(record, takeover_url(manager, record), manager.queue_of(record), recordings)


@router.get("/{session_id}", response_model=SessionView, response_model_by_alias=True, responses=_UNKNOWN_ID)
async def get_session(session_id: str, request: Request) -> Response:
    # The API's hot path (polled by every client): the view is serialised once, without FastAPI validating it
    # again against the response model, and the manager is read from the app's state, not solved as a
    # dependency. The bytes are those the declared model produces (tests/unit/api/test_session_json.py).
    manager: SessionManager = request.app.state.manager
    record = await manager.get(session_id)
    request.app.state.view_tokens.renew(record.id)  # its liveUrl keeps working while someone reads it (§21.4)
    recordings = recording_urls(request, "sessions", record.id)
    body = session_json(record, takeover_url(manager, record), manager.queue_of(record), recordings)
    return Response(body, media_type="application/json")


@router.post(
    "/{session_id}/pause",
    response_model=SessionView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(PauseSessionBody, required=False),
)
async def pause_session(session_id: str, request: Request, manager: ManagerDep) -> SessionView:
    """A person takes over: the agent stops at its next safe point and waits (spec §21.5)."""
    body = await parse_body(request, PauseSessionBody)
    return view_of(manager, await manager.pause(SessionId(session_id), body.reason), request)


hand_back_router = APIRouter(prefix="/sessions", tags=["sessions"], responses=error_responses(401, 422, 429))
"""``resume`` takes the API key or the session's open takeover token (the viewer's "Hand back" button)."""


@hand_back_router.post(
    "/{session_id}/resume",
    response_model=SessionView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(ResumeSessionBody, required=False),
)
async def resume_session(session_id: str, request: Request, manager: ManagerDep) -> SessionView:
    """Hand back to the agent; ``note`` reaches its next step (spec §21.5)."""
    require_key_or_takeover(request, session_id)
    body = await parse_body(request, ResumeSessionBody)
    return view_of(manager, await manager.resume(SessionId(session_id), body.note), request)


@router.post(
    "/{session_id}/stop",
    response_model=SessionView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(StopSessionBody, required=False),
)
async def stop_session(session_id: str, request: Request, manager: ManagerDep) -> SessionView:
    body = await parse_body(request, StopSessionBody)
    record = await manager.stop(SessionId(session_id), StopStrategy(body.strategy))
    return view_of(manager, record, request)


@router.patch(
    "/{session_id}",
    response_model=SessionView,
    response_model_by_alias=True,
    responses=_UNKNOWN_ID,
    openapi_extra=request_body(UpdateSessionBody),
)
async def update_session(session_id: str, request: Request, manager: ManagerDep) -> SessionView:
    """Change the session's title (spec §21.3)."""
    body = await parse_body(request, UpdateSessionBody)
    return session_view(await manager.rename(SessionId(session_id), body.title))


@router.delete("/{session_id}", status_code=204, response_class=Response, responses=_UNKNOWN_ID)
async def delete_session(session_id: str, manager: ManagerDep) -> Response:
    await manager.delete(SessionId(session_id))
    return Response(status_code=204)


@router.get(
    "/{session_id}/messages", response_model=MessageListView, response_model_by_alias=True, responses=_UNKNOWN_ID
)
async def list_messages(
    session_id: str,
    manager: ManagerDep,
    after: str | None = None,
    before: str | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> MessageListView:
    messages, has_more = await manager.messages(session_id, after=after, before=before, limit=limit)
    return MessageListView(messages=[message_view(m) for m in messages], has_more=has_more)
