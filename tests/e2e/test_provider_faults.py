"""Every fault of the fake provider, for Anthropic and OpenAI models, ends with the right failureKind and code.

Faults are persistent (every request fails, the SDK's own retries included): browser-use would retry such
steps until it ran out and record nothing; the run must instead end quickly, classified from the original
exception.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.e2e.agent_support import create, get, token, wait_until_status
from tests.e2e.servers import agent_env, server_fixture
from tests.fakes.llm_script import Fault, done
from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(600)]

MODELS = {"anthropic": "claude-sonnet-5", "openai": "gpt-5.6-terra"}
FAULTS: dict[str, tuple[Fault, str, int | None]] = {
    "429": (Fault.status(429, retry_after=0.2).forever(), "provider_rate_limit", 429),
    "500": (Fault.status(500).forever(), "provider_server_error", 500),
    "503": (Fault.status(503).forever(), "provider_server_error", 503),
    "529": (Fault.status(529).forever(), "provider_server_error", 529),
    "401": (Fault.status(401).forever(), "provider_error", 401),
    "400": (Fault.status(400, "bad request").forever(), "provider_error", 400),
    "hang": (Fault.hang().forever(), "provider_timeout", None),
    "drop": (Fault.drop().forever(), "provider_connection_error", None),
    "malformed": (Fault.malformed("json").forever(), "invalid_output", None),
    "truncated": (Fault.truncated().forever(), "invalid_output", None),
}
CASES = [(provider, fault) for provider in MODELS for fault in FAULTS]


server = server_fixture(lambda fake: agent_env(fake, PROVIDER_TIMEOUT="2"), slots=4)


@pytest.fixture(scope="module")
def outcomes(server: ServerProcess, fake: FakeProvider) -> dict[tuple[str, str], dict[str, Any]]:
    """Run every case concurrently (4 slots) and collect each session's final state."""
    started: dict[tuple[str, str], tuple[str, float]] = {}
    for provider, fault_name in CASES:
        marker = token(f"FAULT-{provider}-{fault_name}")
        fake.script(marker, [FAULTS[fault_name][0]])
        session = create(server, task=f"{marker} Open http://127.0.0.1:9/ and report.", model=MODELS[provider])
        started[(provider, fault_name)] = (session["id"], time.monotonic())
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for case, (session_id, _) in started.items():
        results[case] = wait_until_status(server, session_id, {"error", "stopped", "idle", "timed_out"}, timeout=300)
    return results


@pytest.mark.parametrize(("provider", "fault"), CASES)
def test_fault_is_classified(outcomes: dict[tuple[str, str], dict[str, Any]], provider: str, fault: str) -> None:
    session = outcomes[(provider, fault)]
    _, kind, code = FAULTS[fault]
    assert (session["status"], session["failureKind"], session["failureStatusCode"]) == ("error", kind, code), session[
        "lastStepSummary"
    ]
    assert session["isTaskSuccessful"] is False
    assert session["browserLive"] is False
    assert int(session["stepCount"]) <= 3


def test_a_successful_turn_clears_an_earlier_failure(server: ServerProcess, fake: FakeProvider) -> None:
    marker, recovered_marker = token("CLEAR"), token("RECOVER")
    fake.script(recovered_marker, [done("All good now.")], when=lambda r: r.is_agent_step)
    fake.script(marker, [Fault.status(429, retry_after=0.2).forever()])
    session = create(server, task=f"{marker} Try once.", keepAlive=True, model="claude-sonnet-5")
    failed = wait_until_status(server, session["id"], {"error"})
    assert failed["failureKind"] == "provider_rate_limit" and failed["failureStatusCode"] == 429
    create(server, sessionId=session["id"], task=f"{recovered_marker} Try again.")
    finished = wait_until_status(server, session["id"], {"idle", "error", "stopped"})
    assert finished["status"] == "idle", finished["lastStepSummary"]
    assert finished["failureKind"] is None and finished["failureStatusCode"] is None
    assert finished["isTaskSuccessful"] is True
    assert get(server, session["id"])["output"] == "All good now."
