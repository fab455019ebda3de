"""A person takes over a session (spec §21.5) on a real server: pause mid-step, drive, resume; the agent's own
``wait_for_human``; a parked session paused; the pause timeout.

What is asserted is what a user sees: the session's ``pause`` object and status, refusals, the feed, what the
fake model provider was asked (the redone step, the resume note), and the page as the person left it.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from browser_use_sdk.generated.v3.models import SessionResponse

from tests.e2e.agent_support import agent_steps, data_of, settled_with, token
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Gate, agent_step, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.display import needs_display
from tests.support.server import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

API_KEY = "pause-key"


server = server_fixture(lambda fake: agent_env(fake, API_KEY=API_KEY, PAUSE_TIMEOUT="600"), slots=2)


def session_of(http: httpx.Client, session_id: str) -> dict[str, Any]:
    record: dict[str, Any] = http.get(f"/v3/sessions/{session_id}").json()
    return record


def paused(http: httpx.Client, session_id: str) -> dict[str, Any]:
    wait_until(lambda: (session_of(http, session_id)["pause"] or {}).get("state") == "paused", 60, what="the pause")
    return session_of(http, session_id)


def system_events(http: httpx.Client, session_id: str) -> list[str]:
    feed = http.get(f"/v3/sessions/{session_id}/messages", params={"limit": 1000}).json()["messages"]
    return [data_of(m)["action"] for m in feed if m["type"] == "event" and data_of(m).get("category") == "system"]


def test_a_pause_mid_step_cancels_the_call_lets_a_person_drive_and_the_step_is_redone_once(
    http: httpx.Client, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("PAUSE")
    gate = Gate()
    fake.script(
        marker,
        [
            navigate(f"{site.url}/form"),
            structured(done("never sent: this call is cancelled by the pause"), gate=gate),
            done("I see the colour page you opened."),
        ],
        when=agent_steps,
    )
    sid = http.post("/v3/sessions", json={"task": f"{marker} Open {site.url}/form", "keepAlive": True}).json()["id"]
    try:
        assert gate.wait_entered(90), "the second step never reached the model"
        asked = http.post(f"/v3/sessions/{sid}/pause", json={"reason": "I will log in myself"})
        assert asked.status_code == 200, asked.text
        assert asked.json()["status"] == "running" and asked.json()["pause"]["by"] == "user"
        record = paused(http, sid)
        assert record["status"] == "running" and record["pause"]["reason"] == "I will log in myself"
        assert record["takeoverUrl"] and "takeover=" in record["takeoverUrl"]
        assert SessionResponse.model_validate(record).status.value == "running", "the SDK still parses a paused session"

        follow = http.post("/v3/sessions", json={"sessionId": sid, "task": "Something else"})
        assert follow.status_code == 422 and follow.json() == {"detail": "Session is paused", "code": "session_paused"}
        base = f"/v3/sessions/{sid}/browser"
        navigated = http.post(f"{base}/navigate", json={"url": f"{site.url}/colour"})
        assert navigated.status_code == 200, navigated.text

        resumed = http.post(f"/v3/sessions/{sid}/resume", json={"note": "Logged in; the colour page is open."})
        assert resumed.status_code == 200 and resumed.json()["pause"] is None and resumed.json()["takeoverUrl"] is None
        finished = settled_with(http, sid)
        assert finished["output"] == "I see the colour page you opened."
        assert finished["stepCount"] == 2, "the interrupted step is redone, not counted twice"
    finally:
        gate.open()
    steps = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    assert len(steps) == 3, "navigate, the cancelled call, the redone step"
    redone = steps[-1]
    assert "Logged in; the colour page is open." in redone.text and "/navigate" in redone.text
    assert "do not undo or repeat their work" in redone.text
    assert "/colour" in (redone.browser_state or "")
    assert system_events(http, sid).count("pause") == 1 and "resume" in system_events(http, sid)
    again = http.post(f"/v3/sessions/{sid}/resume", json={})
    assert again.status_code == 422 and again.json()["code"] == "session_not_paused"


def test_the_agent_asks_for_a_person_and_goes_on_after_the_hand_back(
    http: httpx.Client, fake: FakeProvider, site: FixtureSites
) -> None:
    marker = token("HUMAN")
    fake.script(
        marker,
        [
            navigate(f"{site.url}/form"),
            agent_step([{"wait_for_human": {"reason": "Enter the 2FA code sent to the phone"}}]),
            done("Continued after the person."),
        ],
        when=agent_steps,
    )
    sid = http.post("/v3/sessions", json={"task": f"{marker} Log in at {site.url}/form"}).json()["id"]
    record = paused(http, sid)
    assert record["pause"]["by"] == "agent" and record["pause"]["reason"] == "Enter the 2FA code sent to the phone"
    assert record["status"] == "running"
    assert http.post(f"/v3/sessions/{sid}/resume", json={"note": "Code entered."}).status_code == 200
    finished = settled_with(http, sid)
    assert finished["status"] == "stopped" and finished["output"] == "Continued after the person."
    last = [r for r in fake.requests_matching(marker) if r.is_agent_step][-1]
    assert "Code entered." in last.text


def test_a_parked_session_pauses_at_once_and_refuses_follow_ups_until_resumed(
    http: httpx.Client, fake: FakeProvider
) -> None:
    marker = token("PARKED")
    fake.script(marker, [done("parked"), done("after the pause")], when=agent_steps)
    sid = http.post("/v3/sessions", json={"task": f"{marker} Say parked.", "keepAlive": True}).json()["id"]
    assert settled_with(http, sid)["status"] == "idle"
    record = http.post(f"/v3/sessions/{sid}/pause", json={}).json()
    assert record["status"] == "idle" and record["pause"]["state"] == "paused"
    assert http.post(f"/v3/sessions/{sid}/pause", json={}).status_code == 200, "a repeat is idempotent"
    refused = http.post("/v3/sessions", json={"sessionId": sid, "task": "go on"})
    assert refused.status_code == 422 and refused.json()["code"] == "session_paused"
    assert http.post(f"/v3/sessions/{sid}/resume", json={}).json()["pause"] is None
    assert http.post("/v3/sessions", json={"sessionId": sid, "task": "go on"}).status_code == 200
    assert settled_with(http, sid)["output"] == "after the pause"
    http.post(f"/v3/sessions/{sid}/stop", json={"strategy": "session"})
    ended = http.post(f"/v3/sessions/{sid}/pause", json={})
    assert ended.status_code == 422 and ended.json()["code"] == "session_not_pausable"


def test_an_unknown_session_cannot_pause(http: httpx.Client) -> None:
    missing = http.post("/v3/sessions/00000000-0000-4000-8000-000000000000/pause", json={})
    assert missing.status_code == 404 and missing.json() == {"detail": "Session not found"}
