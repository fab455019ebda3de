"""``GET /v3/sessions/{id}/events`` against a real server, the fake provider and a real Chromium run."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource, ServerSentEvent, connect_sse

from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, messages, token, wait_for_message, wait_until_status
from tests.e2e.servers import agent_env, running_server
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

PING_INTERVAL = 0.5


@pytest.fixture(scope="module")
def events_server(tmp_path_factory: pytest.TempPathFactory, fake: FakeProvider) -> Iterator[ServerProcess]:
    env = agent_env(fake, EVENTS_PING_INTERVAL=str(PING_INTERVAL))
    with running_server(tmp_path_factory.mktemp("events-home"), env) as process:
        yield process


def events_url(server: ServerProcess, session_id: str) -> str:
    return f"{server.v3}/sessions/{session_id}/events"


def payload(event: ServerSentEvent) -> Any:
    return json.loads(event.data)


def events_of(source: EventSource) -> Iterator[ServerSentEvent]:
    """The stream's events. httpx-sse also dispatches an empty event after each heartbeat comment once an id was
    seen (a browser's EventSource does not): those are skipped."""
    return (event for event in source.iter_sse() if event.data)


def test_stream_delivers_every_message_once_across_a_disconnect_and_resume(
    events_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("SSE")
    gate = Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(navigate(f"{site.url}/form"), gate=gate), done("Both pages seen.")],
        when=agent_steps,
    )
    sid = create(events_server, task=f"{marker} Look at {site.url}/ and then the form.")["id"]
    first: list[ServerSentEvent] = []
    with httpx.Client(timeout=60) as client, connect_sse(client, "GET", events_url(events_server, sid)) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        for event in events_of(source):
            first.append(event)
            activity = payload(event) if event.event == "activity" else None
            if activity and activity["kind"] == "reasoning" and activity["step"] == 2:
                break  # the second LLM call is held by the gate: disconnect mid-run
    assert gate.wait_entered(30)
    seen = [e for e in first if e.event == "message"]
    assert seen and all(e.id == payload(e)["id"] for e in seen)
    statuses = [payload(e) for e in first if e.event == "status"]
    assert statuses[-1]["status"] == "running" and statuses[-1]["browserLive"] is True
    assert statuses[-1]["liveUrl"] and set(statuses[-1]) == {
        "status", "liveUrl", "stepCount", "totalInputTokens", "totalOutputTokens", "llmCostUsd", "captchaCostUsd",
        "totalCostUsd", "isTaskSuccessful", "failureKind", "endReason", "browserLive", "activity",
    }  # fmt: skip
    labels = [payload(e)["label"] for e in first if e.event == "activity" and payload(e)]
    assert "Preparing next step" in labels and "Running actions" in labels
    reasoning = payload(first[-1])
    assert set(reasoning) == {"label", "startedAt", "step", "spin", "kind", "stream", "seconds"}
    assert reasoning["label"] == "Reasoning" and reasoning["spin"] is True

    gate.open()
    wait_for_message(events_server, sid, lambda m: m["type"] == "completion")
    second: list[ServerSentEvent] = []
    headers = {"Last-Event-ID": seen[-1].id}
    with (
        httpx.Client(timeout=60) as client,
        connect_sse(client, "GET", events_url(events_server, sid), headers=headers) as source,
    ):
        second.extend(events_of(source))  # ends by itself once the session rests
    resumed = [e for e in second if e.event == "message"]
    feed = messages(events_server, sid)
    assert [e.id for e in seen + resumed] == [m["id"] for m in feed]
    assert [payload(e) for e in seen + resumed] == feed
    final = [payload(e) for e in second if e.event == "status"][-1]
    assert final["status"] == "stopped" and final["isTaskSuccessful"] is True and final["activity"] is None
    assert second[-1].event in {"status", "activity"}  # nothing follows the resting status but its activity
    assert final["stepCount"] == 3 and float(final["totalCostUsd"]) > 0


def test_stream_of_a_finished_session_replays_and_ends(
    events_server: ServerProcess, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("SSEDONE")
    fake.script(marker, [done("Nothing to do.")], when=agent_steps)
    sid = create(events_server, task=f"{marker} Say hello.")["id"]
    wait_until_status(events_server, sid, {"stopped", "error"})
    with httpx.Client(timeout=60) as client, connect_sse(client, "GET", events_url(events_server, sid)) as source:
        events = list(events_of(source))
    feed = messages(events_server, sid)
    assert [e.id for e in events if e.event == "message"] == [m["id"] for m in feed]
    assert [e.event for e in events][-1] == "status" and payload(events[-1])["status"] == "stopped"
    # resuming after the last message sends no message at all, only the status
    with (
        httpx.Client(timeout=60) as client,
        connect_sse(client, "GET", events_url(events_server, sid), params={"after": feed[-1]["id"]}) as source,
    ):
        assert [e.event for e in events_of(source)] == ["status"]


def test_stream_sends_heartbeats_while_nothing_happens(events_server: ServerProcess) -> None:
    shell = create(events_server)  # a created shell without a task: open, silent, not resting
    with (
        httpx.Client(timeout=30) as client,
        client.stream("GET", events_url(events_server, shell["id"])) as response,
    ):
        assert response.status_code == 200
        comments = 0
        for line in response.iter_lines():
            if line.startswith(":"):
                comments += 1
                if comments == 2:
                    break
    assert comments == 2


def test_stream_refuses_unknown_sessions_and_cursors(events_server: ServerProcess) -> None:
    missing = loopback.get(events_url(events_server, "no-such-session"), timeout=30)
    assert missing.status_code == 404 and missing.json() == {"detail": "Session not found"}
    shell = create(events_server)
    other = create(events_server, task=None)
    unknown = loopback.get(events_url(events_server, shell["id"]), headers={"Last-Event-ID": other["id"]}, timeout=30)
    assert unknown.status_code == 422 and unknown.json() == {"detail": "Unknown message cursor"}


def test_stream_needs_the_api_key_like_every_session_route(start_server: StartServer) -> None:
    server = start_server(API_KEY="events-key")
    sid = loopback.post(f"{server.v3}/sessions", json={}, headers={"X-Browser-Use-API-Key": "events-key"}).json()["id"]
    refused = loopback.get(events_url(server, sid), timeout=30)
    assert refused.status_code == 401 and refused.json() == {"detail": "Invalid API key"}
    with (
        httpx.Client(timeout=30, headers={"Authorization": "Bearer events-key"}) as client,
        connect_sse(client, "GET", events_url(server, sid)) as source,
    ):
        first = next(events_of(source))
    assert first.event == "status" and payload(first)["status"] == "created"
