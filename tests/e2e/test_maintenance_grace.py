"""A SIGTERM keeps the grace it announces (spec §21.6), as a user following a session's SSE stream sees it.

The stream says ``maintenance_warning {endsAt}``. A run in progress keeps its browser and its steps until then: one
that finishes by itself before ``endsAt`` finishes as usual (it only had its last reply to receive when the signal
came), one that would go on past it steps on after the warning (its step was held until then) and ends ``stopped``
with ``endReason: maintenance`` no earlier than ``endsAt``. Either way the process exits after ``endsAt``, never
before: whoever read the time may use all of it. Each test sends a real SIGTERM to a real server.

Only lower bounds on the clock here: that the drain ends what is left exactly at ``endsAt``, and not before, is
checked on a virtual clock (``tests/unit/sessions/test_maintenance_drain.py``).
"""

from __future__ import annotations

import queue
import signal
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import create, get, token
from tests.e2e.test_maintenance import follow_events, next_event
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.display import needs_display
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display, pytest.mark.timeout(300)]

GRACE_S = 20  # the default
STEP_S = 1.0
STEP_TYPES = {"browser_action", "result"}


def created_ms(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(message["createdAt"]).replace("Z", "+00:00")).timestamp() * 1000


def drain_of(
    server: ServerProcess, events: queue.Queue[tuple[str, Any]], then: Callable[[int], None]
) -> tuple[int, list[float], dict[str, Any], float]:
    """SIGTERM, ``then(endsAt)`` once the stream warned, then follow the stream to the session's end and the
    process to its exit: ``endsAt``, the times of the steps recorded after the warning, the final status (with
    ``at``, when the test saw it) and when the process had exited (all in ms)."""
    server.send_sigterm()
    _, warning = next_event(events, lambda name, _: name == "maintenance_warning", 60)
    then(int(warning["endsAt"]))
    steps: list[float] = []
    while True:  # the stream ends after the terminal status
        name, data = next_event(events, lambda name, _: name in {"message", "status", "end", "error"}, 600)
        assert name in {"message", "status"}, (name, data)
        if name == "message" and data["type"] in STEP_TYPES:
            steps.append(created_ms(data))
        if name == "status" and data["status"] != "running":
            final: dict[str, Any] = {**data, "at": time.time() * 1000}
            break
    assert server.wait_exited(600) in {0, -signal.SIGTERM}
    exited_ms = time.time() * 1000
    assert not server.leftovers(), server.leftovers()
    return int(warning["endsAt"]), steps, final, exited_ms


@pytest.fixture
def gate() -> Iterator[Gate]:
    held = Gate()
    yield held
    held.open()  # the fake provider's handler thread never stays parked


def test_a_run_that_finishes_before_ends_at_finishes_and_the_server_stays_until_ends_at(
    start_server: StartServer, fake: FakeProvider, site: FixtureSites, gate: Gate
) -> None:
    server = start_server(**fake.env(), SHUTDOWN_GRACE_S=GRACE_S)
    marker = token("GRACEDONE")
    fake.script(
        marker, [navigate(f"{site.url}/"), structured(done("looked once"), gate=gate)], when=lambda r: r.is_agent_step
    )
    running = create(server, task=f"{marker} look at {site.url}/ once")
    assert gate.wait_entered(180)  # its last model call is in flight when the signal comes
    events, reader = follow_events(server, running["id"])

    ends_at, _, final, exited_ms = drain_of(server, events, then=lambda _: gate.open())
    reader.join(30)
    assert final["status"] == "stopped", final  # a turn without keep-alive ends stopped (spec §6)
    assert exited_ms >= ends_at, f"the server exited {(ends_at - exited_ms) / 1000:.1f} s before endsAt"

    restarted = start_server(home=server.home, **fake.env())
    finished = get(restarted, running["id"])
    assert finished["output"] == "looked once" and finished["endReason"] != "maintenance", finished


def test_a_run_still_going_at_ends_at_steps_until_then_and_ends_for_maintenance(
    start_server: StartServer, fake: FakeProvider, site: FixtureSites, gate: Gate
) -> None:
    server = start_server(**fake.env(), SHUTDOWN_GRACE_S=GRACE_S)
    marker = token("GRACEGO")
    look = navigate(f"{site.url}/")
    fake.script(
        marker,
        [structured(look, gate=gate), structured(look, delay=STEP_S).forever()],
        when=lambda r: r.is_agent_step,
    )
    running = create(server, task=f"{marker} keep looking at {site.url}/")
    assert gate.wait_entered(180)
    events, reader = follow_events(server, running["id"])
    released: list[float] = []

    def release(ends_at: int) -> None:
        """Let the held step go once the warning is out: the run must still be there to go on."""
        released.append(time.time() * 1000)
        gate.open()

    ends_at, steps, final, exited_ms = drain_of(server, events, then=release)
    reader.join(30)
    assert final["status"] == "stopped", final
    assert final["at"] >= ends_at, "the run ended before endsAt"
    assert [at for at in steps if at >= released[0]], (released, steps)  # it kept its browser and stepped on
    assert exited_ms >= ends_at, f"the server exited {(ends_at - exited_ms) / 1000:.1f} s before endsAt"

    restarted = start_server(home=server.home, **fake.env())
    ended = get(restarted, running["id"])
    assert ended["status"] == "stopped" and ended["endReason"] == "maintenance", ended
