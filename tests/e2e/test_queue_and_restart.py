"""The slot queue (FIFO, waiting events, stops that leak nothing) and a hard kill of the server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import create, data_of, get, messages, stop, token, wait_for_message, wait_until_status
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.server import ServerProcess, browser_stack_processes

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(300)]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def hold_first_step(fake: FakeProvider, marker: str) -> Gate:
    """The session's first agent step waits on a gate, so it holds its slot while `running`."""
    gate = Gate()
    fake.script(marker, [structured(done("held then done"), gate=gate)], when=lambda r: r.is_agent_step)
    return gate


def queued_note(server: ServerProcess, session_id: str) -> str:
    message = wait_for_message(
        server, session_id, lambda m: m["type"] == "event" and data_of(m).get("action") == "queued"
    )
    return str(message["summary"])


def test_runs_queue_first_come_first_served(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1)
    first = token("FIRST")
    gate = hold_first_step(fake, first)
    a = create(server, task=f"{first} hold the slot")
    assert gate.wait_entered(90)
    assert get(server, a["id"])["status"] == "running"
    b = create(server, task=f"{token('B')} second in line")
    c = create(server, task=f"{token('C')} third in line")
    assert b["status"] == "created" and c["status"] == "created"
    assert queued_note(server, b["id"]) == "Waiting for a free display slot (0 ahead)"
    assert queued_note(server, c["id"]) == "Waiting for a free display slot (1 ahead)"
    b_queue, c_queue = get(server, b["id"])["queue"], get(server, c["id"])["queue"]
    assert (b_queue["position"], c_queue["position"]) == (1, 2) and b_queue["queuedAt"] <= c_queue["queuedAt"]
    assert b_queue["etaSeconds"] is None, "no turn has finished yet: nothing to estimate from"
    assert get(server, a["id"])["queue"] is None
    details = loopback.get(f"{server.base_url}/health/details").json()
    assert details["queuedSessions"] == 2 and details["activeSessions"] == 1

    stopped = stop(server, c["id"], "task")
    assert stopped["status"] == "idle"
    assert get(server, b["id"])["status"] == "created"

    gate.open()
    assert wait_until_status(server, a["id"], {"stopped"})["isTaskSuccessful"] is True
    assert wait_until_status(server, b["id"], {"stopped"})["isTaskSuccessful"] is True
    b_started = next(m for m in messages(server, b["id"]) if m["type"] == "planning")["createdAt"]
    a_done = next(m for m in messages(server, a["id"]) if m["type"] == "completion")["createdAt"]
    assert b_started > a_done
    assert get(server, c["id"])["status"] == "idle"
    d = create(server, task=f"{token('D')} the slot is free again")
    assert wait_until_status(server, d["id"], {"stopped"})["isTaskSuccessful"] is True


def test_delete_of_a_queued_run_frees_its_place(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1)
    first = token("HOLD")
    gate = hold_first_step(fake, first)
    a = create(server, task=f"{first} hold the slot")
    assert gate.wait_entered(90)
    b = create(server, task=f"{token('GONE')} queued then deleted")
    queued_note(server, b["id"])
    assert loopback.delete(f"{server.v3}/sessions/{b['id']}").status_code == 204
    c = create(server, task=f"{token('NEXT')} runs next")
    gate.open()
    wait_until_status(server, a["id"], {"stopped"})
    assert wait_until_status(server, c["id"], {"stopped"})["isTaskSuccessful"] is True


def test_hard_kill_then_restart_recovers_every_session(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1)
    first = token("RUNNING")
    gate = hold_first_step(fake, first)
    a = create(server, task=f"{first} interrupted by the crash")
    assert gate.wait_entered(90)
    b = create(server, task=f"{token('QB')} queued before the crash")
    c = create(server, task=f"{token('QC')} queued after b")
    queued_note(server, c["id"])
    shell = create(server)
    marker = str(server.home)
    assert browser_stack_processes(marker), "the running session should have a browser stack"

    server.kill_hard()
    orphans = browser_stack_processes(marker)  # the sandbox (bubblewrap --die-with-parent) ends with its owner

    restarted = start_server(home=server.home, **fake.env(), MAX_CONCURRENT_SESSIONS=1)
    assert [p.pid for p in browser_stack_processes(marker) if p.pid in {o.pid for o in orphans}] == []
    interrupted = get(restarted, a["id"])
    assert interrupted["status"] == "error"
    assert interrupted["lastStepSummary"] == "Interrupted by server restart"
    assert interrupted["failureKind"] is None and interrupted["browserLive"] is False
    assert interrupted["endReason"] == "runner_lost"
    assert any(data_of(m).get("action") == "restart" for m in messages(restarted, a["id"]) if m["type"] == "event")

    done_b = wait_until_status(restarted, b["id"], {"stopped", "error"})
    done_c = wait_until_status(restarted, c["id"], {"stopped", "error"})
    assert done_b["status"] == done_c["status"] == "stopped"
    b_start = next(m for m in messages(restarted, b["id"]) if m["type"] == "planning")["createdAt"]
    c_start = next(m for m in messages(restarted, c["id"]) if m["type"] == "planning")["createdAt"]
    assert b_start < c_start
    for session in (b, c):
        kinds = [m["type"] for m in messages(restarted, session["id"])]
        assert kinds[0] == "user_message" and "completion" in kinds
    assert get(restarted, shell["id"])["status"] == "created"
    gate.open()
