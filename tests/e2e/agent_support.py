"""Helpers for end-to-end agent runs: a shared fake provider, fixture sites and polling."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from tests.support import loopback
from tests.support.server import ServerProcess
from tests.support.waiting import wait_for

if TYPE_CHECKING:
    from tests.fakes.llm_request import LLMRequest
    from tests.fakes.llm_server import FakeProvider

TERMINAL = {"idle", "stopped", "timed_out", "error", "expired"}


def token(prefix: str) -> str:
    """A unique marker to put in a task, so the fake provider can route that session's requests."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create(server: ServerProcess, **body: Any) -> dict[str, Any]:
    response = loopback.post(f"{server.v3}/sessions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def get(server: ServerProcess, session_id: str) -> dict[str, Any]:
    data: dict[str, Any] = loopback.get(f"{server.v3}/sessions/{session_id}", timeout=30).json()
    return data


def wait_until_status(
    server: ServerProcess, session_id: str, statuses: set[str], timeout: float = 120.0, interval: float = 0.2
) -> dict[str, Any]:
    seen: list[str] = []

    def reached() -> dict[str, Any] | None:
        session = get(server, session_id)
        seen[:] = [session["status"]]
        return session if session["status"] in statuses else None

    try:
        return wait_for(reached, timeout, interval=interval, what=f"session {session_id} in {statuses}")
    except TimeoutError:
        raise TimeoutError(f"{session_id} is {seen}, wanted {statuses}\n{server.log()[-3000:]}") from None


def wait_for_message(server: ServerProcess, session_id: str, predicate: Any, timeout: float = 60.0) -> dict[str, Any]:
    try:
        found: dict[str, Any] = wait_for(
            lambda: next((m for m in messages(server, session_id) if predicate(m)), None), timeout, interval=0.1
        )
    except TimeoutError:
        summaries = [m["summary"] for m in messages(server, session_id)]
        raise TimeoutError(f"no matching message in {session_id}: {summaries}") from None
    return found


def messages(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    data = loopback.get(f"{server.v3}/sessions/{session_id}/messages", params={"limit": 1000}, timeout=30).json()
    result: list[dict[str, Any]] = data["messages"]
    return result


def data_of(message: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(message["data"]) if message["data"] else {}
    return value


def stop(server: ServerProcess, session_id: str, strategy: str | None = None) -> dict[str, Any]:
    body = {"strategy": strategy} if strategy else None
    response = loopback.post(f"{server.v3}/sessions/{session_id}/stop", json=body, timeout=60)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


def step_requests(fake: FakeProvider, marker: str) -> list[LLMRequest]:
    return [r for r in fake.requests_matching(marker) if r.is_agent_step]


def session_files(server: ServerProcess, session_id: str) -> Path:
    return server.home / "data" / "sessions" / session_id


def envelope_in(request: LLMRequest, file: str) -> dict[str, Any]:
    """The JSON envelope naming ``file`` that the previous action returned, as the model received it."""
    start = request.text.rfind('{"note"', 0, request.text.find(f'"file": "{file}"') + 1)
    assert start >= 0, request.text[-3000:]
    value, _ = json.JSONDecoder().raw_decode(request.text[start:])
    assert isinstance(value, dict)
    return value


def settled_with(http: httpx.Client, session_id: str, timeout: float = 120.0) -> dict[str, Any]:
    """The session (read with ``http``'s credentials) once its turn is over: parked ``idle``, or ended."""

    def read() -> dict[str, Any]:
        record: dict[str, Any] = http.get(f"/v3/sessions/{session_id}").json()
        return record

    settled = {"idle", "stopped", "error", "timed_out"}
    record: dict[str, Any] = wait_for(
        lambda: found if (found := read())["status"] in settled else None,
        timeout,
        interval=0.2,
        what=f"session {session_id} settled",
    )
    return record
