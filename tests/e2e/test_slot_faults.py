"""A run whose Chromium or Xvfb dies ends `error` saying what died; the slot is rebuilt for the next run.

Also the keep-alive side of the pool: an idle parked browser closes after KEEP_ALIVE_IDLE_TIMEOUT, and a new
run that finds every slot taken evicts the longest-parked session.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import create, data_of, get, messages, token, wait_for_message, wait_until_status
from tests.fakes.llm_script import Gate, done, structured
from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess, browser_stack_processes

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(300)]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def main_process(server: ServerProcess, name: str) -> psutil.Process:
    """The browser stack's main process called ``name`` (Chromium's browser process, not its helpers)."""
    candidates = [p for p in server.children() if p.name() == name]
    if name == "chromium":
        candidates = [p for p in candidates if not any(a.startswith("--type=") for a in p.cmdline())]
    assert len(candidates) == 1, [p.cmdline()[:3] for p in candidates]
    return candidates[0]


@pytest.mark.parametrize(("process_name", "label"), [("chromium", "Chromium"), ("Xvfb", "Xvfb")])
def test_a_dying_child_ends_the_run_and_the_slot_is_rebuilt(
    start_server: StartServer, fake: FakeProvider, process_name: str, label: str
) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=1)
    marker = token("CRASH")
    gate = Gate()
    fake.script(marker, [structured(done(), gate=gate)], when=lambda r: r.is_agent_step)
    session = create(server, task=f"{marker} wait while the browser crashes")
    assert gate.wait_entered(90)
    victim = main_process(server, process_name)
    victim.send_signal(signal.SIGKILL)
    ended = wait_until_status(server, session["id"], {"error", "stopped"})
    assert ended["status"] == "error"
    assert ended["failureKind"] == "agent_failure"
    assert ended["lastStepSummary"].startswith(f"Fatal error: {label} exited unexpectedly")
    fatal = [m for m in messages(server, session["id"]) if m["type"] == "browser_action_error"]
    assert fatal and f"{label} exited unexpectedly" in fatal[-1]["summary"]
    assert ended["browserLive"] is False
    gate.open()
    wait_until_status(server, session["id"], {"error"})
    assert browser_stack_processes(str(server.home)) == [] or all(
        p.status() == psutil.STATUS_ZOMBIE for p in browser_stack_processes(str(server.home))
    )
    after = create(server, task=f"{token('AFTER')} the next run gets a fresh slot")
    assert wait_until_status(server, after["id"], {"stopped", "error"})["status"] == "stopped"


def test_parked_browser_closes_after_the_idle_timeout(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), KEEP_ALIVE_IDLE_TIMEOUT=2)
    session = create(server, task=f"{token('IDLE')} answer and park", keepAlive=True)
    parked = wait_until_status(server, session["id"], {"idle"})
    assert parked["browserLive"] is True
    note = wait_for_message(server, session["id"], lambda m: m["summary"].startswith("Expired: no follow-up"))
    assert note["summary"] == "Expired: no follow-up for 1 idle minute(s)"
    # the note is written as the expiry begins; the status changes once the browser is closed
    closed = wait_until_status(server, session["id"], {"stopped"})
    assert closed["browserLive"] is False and closed["liveUrl"] is None
    follow = create(server, sessionId=session["id"], task="still there?")
    assert follow["status"] == "created"
    assert wait_until_status(server, session["id"], {"idle"})["browserLive"] is True


def test_a_new_run_evicts_the_longest_parked_session(start_server: StartServer, fake: FakeProvider) -> None:
    server = start_server(**fake.env(), MAX_CONCURRENT_SESSIONS=2)
    older = create(server, task=f"{token('OLD')} park first", keepAlive=True)
    wait_until_status(server, older["id"], {"idle"})
    newer = create(server, task=f"{token('NEW')} park second", keepAlive=True)
    wait_until_status(server, newer["id"], {"idle"})
    third = create(server, task=f"{token('THIRD')} needs a slot")
    assert wait_until_status(server, third["id"], {"stopped"})["isTaskSuccessful"] is True
    evicted = get(server, older["id"])
    assert evicted["status"] == "stopped" and evicted["browserLive"] is False
    notes = [m["summary"] for m in messages(server, older["id"]) if m["type"] == "event"]
    assert "Keep-alive browser released: display slot handed to a newly started session" in notes
    kept = get(server, newer["id"])
    assert kept["status"] == "idle" and kept["browserLive"] is True
    assert all(
        data_of(m).get("category") != "system" or "released" not in m["summary"] for m in messages(server, newer["id"])
    )


def test_a_browser_that_cannot_launch_fails_the_run_and_the_next_run_retries(
    start_server: StartServer, fake: FakeProvider, tmp_path: Path
) -> None:
    broken = tmp_path / "broken-chromium"
    broken.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 1\n")
    broken.chmod(0o755)
    tmp_path.chmod(0o755)  # the slot's own uid runs it inside the sandbox
    server = start_server(**fake.env(), CHROME_BINARY=broken)
    first = create(server, task=f"{token('LAUNCH')} never gets a browser")
    failed = wait_until_status(server, first["id"], {"error"})
    assert failed["failureKind"] == "agent_failure" and failed["browserLive"] is False
    assert "Chromium" in failed["lastStepSummary"] and "cannot open display" in failed["lastStepSummary"]
    second = create(server, task=f"{token('AGAIN')} tries again")
    assert wait_until_status(server, second["id"], {"error"})["failureKind"] == "agent_failure"
    launches = server.log().count("cannot open display")
    assert launches >= 2
    assert browser_stack_processes(str(server.home)) == []
