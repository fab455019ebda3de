"""The CLI's stream follower against a server that drops the connection mid-stream (faked at the wire)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from openbrowse.cli.client import ApiClient, CliError
from openbrowse.cli.follow import follow
from tests.support.asgi_thread import ThreadedServer


def frame(event: str, data: Any, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n"


def message(number: int) -> str:
    return frame("message", {"id": f"m{number}", "summary": f"step {number}"}, f"m{number}")


class FlakyEvents:
    """First connection: two messages, then the connection breaks. Later ones: resume after Last-Event-ID."""

    def __init__(self) -> None:
        self.resume_ids: list[str | None] = []

    async def events(self, request: Request) -> StreamingResponse:
        resume = request.headers.get("last-event-id")
        self.resume_ids.append(resume)

        async def body() -> AsyncIterator[str]:
            if resume is None:
                yield frame("status", {"status": "running"})
                yield message(1)
                yield ": ping\n\n"  # a heartbeat: httpx-sse turns it into an empty event once an id was seen
                yield message(2)
                raise ConnectionError("the proxy dropped the stream")
            for number in range(int(resume.removeprefix("m")) + 1, 4):
                yield message(number)
            yield frame("status", {"status": "stopped"})

        return StreamingResponse(body(), media_type="text/event-stream")

    async def session(self, request: Request) -> JSONResponse:
        return JSONResponse({"id": "s1", "status": "stopped", "isTaskSuccessful": True})


@pytest.fixture
def flaky() -> Iterator[tuple[FlakyEvents, str]]:
    fake = FlakyEvents()
    app = Starlette(
        routes=[Route("/v3/sessions/s1/events", fake.events), Route("/v3/sessions/s1", fake.session)],
    )
    with ThreadedServer(app) as server:
        yield fake, server.url


def test_a_dropped_stream_is_resumed_after_the_last_message(flaky: tuple[FlakyEvents, str]) -> None:
    fake, url = flaky
    received: list[tuple[str, Any]] = []
    with ApiClient(url, None) as client:
        final = follow(client, "s1", lambda name, data: received.append((name, data)))
    assert [data["id"] for name, data in received if name == "message"] == ["m1", "m2", "m3"]
    assert fake.resume_ids == [None, "m2"]
    assert received[-1] == ("status", {"status": "stopped"}) and final["status"] == "stopped"


def test_follow_can_start_after_a_given_message(flaky: tuple[FlakyEvents, str]) -> None:
    fake, url = flaky
    received: list[str] = []
    with ApiClient(url, None) as client:
        follow(client, "s1", lambda name, data: received.append(data.get("id", name)), after="m2")
    assert received == ["m3", "status"] and fake.resume_ids == ["m2"]


def test_a_missing_session_is_a_usage_error(flaky: tuple[FlakyEvents, str]) -> None:
    _, url = flaky
    with ApiClient(url, None) as client, pytest.raises(CliError, match="404") as refused:
        follow(client, "nope", lambda name, data: None)
    assert refused.value.exit_code == 2
