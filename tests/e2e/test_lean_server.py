"""The server keeps nothing of a finished run: sequential sessions leave no agents, tools or browsers behind,
and ``/health/details`` reports the event loop's lag; an agent works on an engine thread of its own."""

from __future__ import annotations

import os
import time
from typing import Any

import httpx
import pytest

from tests.e2e.agent_support import create, token, wait_until_status
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

SESSIONS = 4


def test_sequential_sessions_leave_no_agents_behind(agent_server: ServerProcess, fake: FakeProvider) -> None:
    for _ in range(SESSIONS):
        marker = token("LEAN")
        created = create(agent_server, task=f"{marker} Say hello.", model="claude-sonnet-5")
        finished = wait_until_status(agent_server, created["id"], {"stopped", "error", "timed_out"})
        assert finished["status"] == "stopped", finished["lastStepSummary"]
        assert fake.requests_matching(marker), "the session never asked the model"
    details = httpx.get(f"{agent_server.base_url}/health/details", timeout=30).json()
    # browser-use collects garbage when an agent closes, so at most the last run's objects may still be around;
    # a per-session cache or registry would keep one set per session.
    live = details["liveObjects"]
    assert live["agents"] <= 1, live
    assert live["tools"] <= 1, live
    assert live["browserSessions"] <= 1, live


def test_health_details_reports_loop_lag(agent_server: ServerProcess) -> None:
    details = httpx.get(f"{agent_server.base_url}/health/details", timeout=30).json()
    lag = details["loopLagMs"]
    assert lag["samples"] > 0
    assert 0 <= lag["current"] <= lag["max"]
    assert 0 <= lag["p99"] <= lag["max"]
    assert {"activeSessions", "queuedSessions", "maxConcurrentSessions", "isAvailable"} <= details.keys()


def _details(server: ServerProcess) -> dict[str, Any]:
    details: dict[str, Any] = httpx.get(f"{server.base_url}/health/details", timeout=30).json()
    return details


def _agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


def _thread_nice_values(server: ServerProcess) -> dict[int, int]:
    """Each thread of the server process (Linux nice values are per thread) → its nice value."""
    assert server.process is not None
    pid = server.process.pid
    return {int(tid): os.getpriority(os.PRIO_PROCESS, int(tid)) for tid in os.listdir(f"/proc/{pid}/task")}


def test_a_running_agent_works_on_its_own_engine_thread_which_is_joined_when_it_ends(
    agent_server: ServerProcess, fake: FakeProvider
) -> None:
    marker = token("THREAD")
    gate = Gate()
    fake.script(marker, [structured(done(), gate=gate)], when=_agent_steps)
    created = create(agent_server, task=f"{marker} Say hello.", model="claude-sonnet-5")
    try:
        assert gate.wait_entered(90), "the agent step never reached the model"
        # the agent is inside its step (its model call is held open): its engine runs on a thread of its own,
        # at a lower CPU priority than the API's (ENGINE_NICE, 10 by default)
        assert _details(agent_server)["engineThreads"] == 1
        assert agent_server.process is not None
        nice = _thread_nice_values(agent_server)
        api_nice = nice[agent_server.process.pid]
        assert api_nice == os.getpriority(os.PRIO_PROCESS, 0)  # the API thread keeps the priority it started with
        assert min(api_nice + 10, 19) in nice.values(), nice
    finally:
        gate.open()
    finished = wait_until_status(agent_server, created["id"], {"stopped", "error", "timed_out"})
    assert finished["status"] == "stopped", finished["lastStepSummary"]
    deadline = time.monotonic() + 60
    while _details(agent_server)["engineThreads"] != 0:  # the row ends before the browser has closed
        assert time.monotonic() < deadline, "the engine thread was never joined"
        time.sleep(0.05)
