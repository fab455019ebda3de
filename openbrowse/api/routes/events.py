"""``GET /v3/sessions/{id}/events``: the session's feed, status, activity and code as server-sent events."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from openbrowse.api.deps import ActivityBoardDep, ApiKey, ManagerDep, SettingsDep
from openbrowse.api.event_schemas import server_sent
from openbrowse.api.openapi_docs import error_responses
from openbrowse.api.stream_places import CountedEventSource, StreamPlaces
from openbrowse.sessions.events import SessionEventStream

SEND_TIMEOUT = 60.0
"""A client that has not taken an event for this long is gone (a stalled connection): the stream is dropped."""

router = APIRouter(
    prefix="/sessions", tags=["sessions"], dependencies=[ApiKey], responses=error_responses(401, 404, 422, 429)
)


async def _frames(stream: SessionEventStream) -> AsyncIterator[ServerSentEvent]:
    async for event in stream:
        yield server_sent(event)


@router.get("/{session_id}/events", response_class=EventSourceResponse)
async def session_events(
    session_id: str,
    request: Request,
    manager: ManagerDep,
    board: ActivityBoardDep,
    settings: SettingsDep,
    after: str | None = None,
    last_event_id: Annotated[str | None, Header()] = None,
) -> EventSourceResponse:
    """Stream the session until it rests. Resume with ``Last-Event-ID`` (or ``?after=``, for clients that cannot
    set headers): both name the last message received; an id that is not one of this session's messages is a 422.
    A session may have ``EVENTS_MAX_STREAMS_PER_SESSION`` streams open at once and the server
    ``EVENTS_MAX_STREAMS``; one more is a 429.
    """
    stream = await SessionEventStream.open(
        manager.sessions, manager.feed, board, session_id, last_event_id or after, request.app.state.maintenance
    )
    places: StreamPlaces = request.app.state.event_streams
    place = places.take(session_id)
    return CountedEventSource(place, _frames(stream), ping=settings.EVENTS_PING_INTERVAL, send_timeout=SEND_TIMEOUT)
