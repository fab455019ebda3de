"""Stops, deletes and a SIGTERM landing at each stage of real runs (real Chromium, the fake provider).

The in-process fault injection (tests/integration/sessions/test_fault_injection.py) covers every await point;
this is its smaller real-server counterpart: a seeded choice of stop, stop-task or delete at each observable
stage (queued, launching, mid-step, parked), then a graceful shutdown with a parked and a running session. After
it all: nothing is left running or queued, answers a stop must keep are kept, no process is left (checked by the
``start_server`` fixture), and a new run completes on the restarted server.
"""

from __future__ import annotations

import random
import signal
from collections.abc import Iterator

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import create, get, stop, token, wait_for_message, wait_until_status
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(600)]

SEED = 7
ACTIONS = ("stop_session", "stop_task", "delete")
RESTING = {"idle", "stopped", "timed_out", "error"}


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def gated(fake: FakeProvider, marker: str, answer: str) -> Gate:
    gate = Gate()
    fake.script(marker, [structured(done(answer), gate=gate)], when=lambda r: r.is_agent_step)
    return gate


def answering(fake: FakeProvider, marker: str, answer: str) -> None:
    fake.script(marker, [done(answer)], when=lambda r: r.is_agent_step)


def act(server: ServerProcess, session_id: str, action: str) -> str | None:
    """Apply ``action``; the status it must end in (None when the session is gone)."""
    if action == "delete":
        assert loopback.delete(f"{server.v3}/sessions/{session_id}", timeout=60).status_code == 204
        assert loopback.get(f"{server.v3}/sessions/{session_id}", timeout=30).status_code == 404
        return None
    strategy = "session" if action == "stop_session" else "task"
    stopped = stop(server, session_id, strategy)
    assert stopped["status"] == ("stopped" if strategy == "session" else "idle"), stopped
    assert stopped["browserLive"] is False
    return str(stopped["status"])


def nothing_in_flight(server: ServerProcess) -> None:
    sessions = loopback.get(f"{server.v3}/sessions", params={"pageSize": 100}, timeout=30).json()["sessions"]
    assert [s["id"] for s in sessions if s["status"] in {"running", "created"} and s.get("task")] == []
    details = loopback.get(f"{server.base_url}/health/details", timeout=30).json()
    assert details["activeSessions"] == 0 and details["queuedSessions"] == 0, details


def test_stops_and_deletes_at_each_stage_then_a_shutdown(start_server: StartServer, fake: FakeProvider) -> None:
    rng = random.Random(SEED)
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=2)
    outcomes: dict[str, str | None] = {}

    # mid-step: an LLM call is in flight; queued: both slots are taken, so the third run waits
    held = token("HELD")
    held_gate = gated(fake, held, "never delivered")
    mid = create(server, task=f"{held} hold a slot mid-step")
    other = token("OTHER")
    other_gate = gated(fake, other, "the other answer")
    busy = create(server, task=f"{other} hold the second slot")
    assert held_gate.wait_entered(120) and other_gate.wait_entered(120)
    queued = create(server, task=f"{token('QUEUED')} wait in line")
    wait_for_message(server, queued["id"], lambda m: m["type"] == "event" and "Waiting for a free" in m["summary"])
    outcomes[queued["id"]] = act(server, queued["id"], rng.choice(ACTIONS))
    outcomes[mid["id"]] = act(server, mid["id"], rng.choice(ACTIONS))
    held_gate.open()

    # launching: the browser is being started for a run that just got a slot
    launching = token("LAUNCH")
    answering(fake, launching, "launched")
    starting = create(server, task=f"{launching} stopped while its browser starts")
    wait_for_message(server, starting["id"], lambda m: m["type"] in {"planning", "event"}, timeout=120)
    outcomes[starting["id"]] = act(server, starting["id"], rng.choice(ACTIONS))
    other_gate.open()
    assert wait_until_status(server, busy["id"], RESTING)["output"] == "the other answer"

    # parked: a stop keeps the last answer, a delete removes it all
    for n in range(2):
        marker = token(f"PARK{n}")
        answering(fake, marker, f"42.00 EUR ({n})")
        parked = create(server, task=f"{marker} what does it cost?", keepAlive=True)
        idle = wait_until_status(server, parked["id"], RESTING)
        assert idle["status"] == "idle" and idle["browserLive"] is True
        action = rng.choice(ACTIONS)
        outcomes[parked["id"]] = act(server, parked["id"], action)
        if action != "delete":
            kept = get(server, parked["id"])
            assert kept["output"] == f"42.00 EUR ({n})" and kept["isTaskSuccessful"] is True, kept

    for session_id, status in outcomes.items():
        if status is not None:
            assert get(server, session_id)["status"] == status
    nothing_in_flight(server)

    # SIGTERM with one session parked and one mid-step: parked stays idle (cold), the running one is stopped
    parked_marker, running_marker = token("SIGPARK"), token("SIGRUN")
    answering(fake, parked_marker, "kept across the restart")
    parked = create(server, task=f"{parked_marker} park", keepAlive=True)
    assert wait_until_status(server, parked["id"], RESTING)["status"] == "idle"
    running_gate = gated(fake, running_marker, "never delivered")
    running = create(server, task=f"{running_marker} run into the shutdown")
    assert running_gate.wait_entered(120)
    assert server.stop() in {0, -signal.SIGTERM}  # uvicorn re-raises SIGTERM after its graceful shutdown
    assert "Application shutdown complete" in server.log()
    running_gate.open()

    restarted = start_server(home=server.home, **fake.env(), MAX_CONCURRENT_SESSIONS=2)
    cold = get(restarted, parked["id"])
    assert cold["status"] == "idle" and cold["browserLive"] is False
    assert cold["output"] == "kept across the restart" and cold["isTaskSuccessful"] is True
    assert get(restarted, running["id"])["status"] == "stopped"
    nothing_in_flight(restarted)

    fresh = token("FRESH")
    answering(fake, fresh, "a new run works")
    final = wait_until_status(restarted, create(restarted, task=f"{fresh} after all that")["id"], RESTING)
    assert final["status"] == "stopped" and final["isTaskSuccessful"] is True and final["output"] == "a new run works"
