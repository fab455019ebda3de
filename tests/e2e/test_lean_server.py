"""The server keeps nothing of a finished run: sequential sessions leave no agents, tools or browsers behind,
and ``/health/details`` reports the event loop's lag."""

from __future__ import annotations

import pytest

from tests.e2e.agent_support import create, token, wait_until_status
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
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
    details = loopback.get(f"{agent_server.base_url}/health/details", timeout=30).json()
    # browser-use collects garbage when an agent closes, so at most the last run's objects may still be around;
    # a per-session cache or registry would keep one set per session.
    live = details["liveObjects"]
    assert live["agents"] <= 1, live
    assert live["tools"] <= 1, live
    assert live["browserSessions"] <= 1, live


def test_health_details_reports_loop_lag(agent_server: ServerProcess) -> None:
    details = loopback.get(f"{agent_server.base_url}/health/details", timeout=30).json()
    lag = details["loopLagMs"]
    assert lag["samples"] > 0
    assert 0 <= lag["current"] <= lag["max"]
    assert 0 <= lag["p99"] <= lag["max"]
    assert all({"site", "stalls", "totalMs", "worstMs", "stack"} <= stall.keys() for stall in details["loopStalls"])
    assert {"activeSessions", "queuedSessions", "maxConcurrentSessions", "isAvailable"} <= details.keys()
