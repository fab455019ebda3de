"""A session over its sandbox's memory cap (spec §24.5): warned the first time, ended the second, host untouched."""

from __future__ import annotations

import psutil
import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, messages, stop, token, wait_until_status
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback

pytestmark = [pytest.mark.e2e, pytest.mark.display]

BOMB = "block = b'x' * (3 << 30)\nprint(len(block))\n"


def test_a_memory_bomb_is_warned_once_then_ends_the_session_with_memory_limit(
    start_server: StartServer, fake: FakeProvider
) -> None:
    server = start_server(**fake.env(), SLOT_MEMORY_MB=768)
    marker = token("BOMB")
    fake.script(
        marker,
        [
            agent_step([{"run_code_file": {"name": "bomb", "code": BOMB}}]),
            agent_step([{"run_code_file": {"name": "bomb_again", "code": BOMB}}]),
            done("never reached"),
        ],
        when=agent_steps,
    )
    server_rss_before = _server_rss(server.process.pid if server.process else 0)
    session = create(server, task=f"{marker} Allocate three gigabytes, twice.")
    finished = wait_until_status(server, session["id"], {"stopped", "error", "timed_out"}, timeout=180)

    assert finished["status"] == "error", finished
    assert finished["failureKind"] == "resource_limit"
    assert finished["endReason"] == "memory_limit"
    feed = messages(server, session["id"])
    warnings = [m for m in feed if "memory cap of 768 MiB" in m["summary"] and m["type"] != "browser_action_error"]
    assert warnings, [m["summary"] for m in feed]
    assert any("went over its memory cap" in m["summary"] for m in feed if m is not warnings[0])
    assert loopback.get(f"{server.base_url}/health", timeout=5).status_code == 200, "the server outlived the bomb"
    assert server.process is not None and server.process.poll() is None
    assert _server_rss(server.process.pid) < server_rss_before + 200 * 1024 * 1024, "the bomb was not in the server"


def test_a_session_that_ends_well_says_closed_and_a_follow_up_clears_it(
    start_server: StartServer, fake: FakeProvider
) -> None:
    server = start_server(**fake.env())
    marker = token("CLOSED")
    fake.script(marker, [done("all done")], when=agent_steps)
    session = create(server, task=f"{marker} Say done.")
    finished = wait_until_status(server, session["id"], {"stopped", "error"}, timeout=120)
    assert (finished["status"], finished["endReason"]) == ("stopped", "closed")

    again = token("KEPT")
    fake.script(again, [done("done again")], when=agent_steps)
    keep = create(server, task=f"{again} Say done again.", keepAlive=True)
    parked = wait_until_status(server, keep["id"], {"idle", "error"}, timeout=120)
    assert parked["status"] == "idle" and parked["endReason"] is None
    stop(server, keep["id"], "session")
    ended = wait_until_status(server, keep["id"], {"stopped"}, timeout=60)
    assert ended["endReason"] == "closed"


def _server_rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)
