"""A session's ``maxDurationMs`` (spec §21.1) on a real server with the fake model: a parked keep-alive session and
a turn still running both end ``max_duration`` at ``createdAt + maxDurationMs``; out-of-range values are 422; a
session that reached its limit takes no follow-up; the BU SDK parses every answer."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest
from browser_use_sdk.generated.v3.models import SessionResponse

from tests.e2e.agent_support import TERMINAL, messages, token, wait_until_status
from tests.e2e.servers import server_fixture
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support.display import needs_display
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

MODEL = "claude-sonnet-5"
LIMIT_MS = 10_000


server = server_fixture(lambda fake: fake.env(), slots=2)


def _parsed(record: dict[str, Any]) -> dict[str, Any]:
    SessionResponse.model_validate(record)  # the BU SDK still reads it
    return record


def _seconds_lived(record: dict[str, Any]) -> float:
    created = datetime.fromisoformat(record["createdAt"].replace("Z", "+00:00"))
    updated = datetime.fromisoformat(record["updatedAt"].replace("Z", "+00:00"))
    return (updated - created).total_seconds()


def test_parked_and_running_sessions_end_at_their_max_duration(
    http: httpx.Client, server: ServerProcess, fake: FakeProvider
) -> None:
    parked_marker, running_marker = token("MAXDUR-PARK"), token("MAXDUR-RUN")
    fake.script(parked_marker, [done("Parked and waiting.")], when=lambda r: r.is_agent_step)
    gate = Gate()  # never opened: the turn's model call is still in flight when the limit comes
    fake.script(running_marker, [structured(done("never sent"), gate=gate)], when=lambda r: r.is_agent_step)
    parked = http.post(
        "/v3/sessions",
        json={"task": f"{parked_marker} Say hi.", "model": MODEL, "keepAlive": True, "maxDurationMs": LIMIT_MS},
    ).json()
    running = http.post(
        "/v3/sessions", json={"task": f"{running_marker} Think long.", "model": MODEL, "maxDurationMs": LIMIT_MS}
    ).json()
    try:
        assert _parsed(parked)["maxDurationMs"] == LIMIT_MS
        assert gate.wait_entered(60), server.log()[-3000:]
        idle = wait_until_status(server, parked["id"], {"idle"}, timeout=LIMIT_MS / 1000)
        assert idle["browserLive"] is True and idle["endReason"] is None

        ended_parked = wait_until_status(server, parked["id"], TERMINAL - {"idle"}, timeout=30)
        ended_running = wait_until_status(server, running["id"], TERMINAL - {"idle"}, timeout=30)
        for ended in (ended_parked, ended_running):
            _parsed(ended)
            assert ended["status"] == "stopped", ended
            assert ended["endReason"] == "max_duration", ended
            assert ended["browserLive"] is False and ended["liveUrl"] is None
            # never before the limit; that it comes at the limit is checked on a virtual clock
            # (tests/unit/sessions/test_max_duration_timer.py): an upper bound here would race the machine's load
            assert _seconds_lived(ended) >= LIMIT_MS / 1000, ended
        assert ended_parked["output"] == "Parked and waiting."  # the parked turn's answer stands
        assert "maximum duration" in (ended_running["lastStepSummary"] or "")
        assert any("maximum duration" in m["summary"] for m in messages(server, parked["id"]))

        follow_up = http.post("/v3/sessions", json={"sessionId": parked["id"], "task": "One more thing."})
        assert follow_up.status_code == 422, follow_up.text
        assert "maxDurationMs" in follow_up.json()["detail"]
    finally:
        gate.open()


def test_a_session_without_a_limit_shows_none(http: httpx.Client) -> None:
    record = http.post("/v3/sessions", json={"model": MODEL}).json()
    assert _parsed(record)["maxDurationMs"] is None


@pytest.mark.parametrize("value", [9_999, 86_400_001, 0, -1, "soon", 12.5])
def test_out_of_range_limits_are_refused(http: httpx.Client, value: object) -> None:
    response = http.post("/v3/sessions", json={"task": "Say hi.", "model": MODEL, "maxDurationMs": value})
    assert response.status_code == 422, response.text


def test_the_limit_is_set_at_creation_only(http: httpx.Client, server: ServerProcess, fake: FakeProvider) -> None:
    marker = token("MAXDUR-FOLLOW")
    fake.script(marker, [done("first"), done("second")], when=lambda r: r.is_agent_step)
    body = {"task": f"{marker} Say hi.", "model": MODEL, "keepAlive": True, "maxDurationMs": 86_400_000}
    record = http.post("/v3/sessions", json=body).json()
    try:
        wait_until_status(server, record["id"], {"idle"}, timeout=60)  # a follow-up would be taken now
        refused = http.post("/v3/sessions", json={"sessionId": record["id"], "task": "Again.", "maxDurationMs": 60_000})
        assert refused.status_code == 422, refused.text
        assert "maxDurationMs" in refused.json()["detail"], refused.text
        accepted = http.post("/v3/sessions", json={"sessionId": record["id"], "task": "Again."})
        assert accepted.status_code == 200, accepted.text
        assert accepted.json()["maxDurationMs"] == 86_400_000  # the creation's limit stands
    finally:
        http.post(f"/v3/sessions/{record['id']}/stop", json={"strategy": "session"})
