"""Warm spares (``PREWARM_SLOTS``) against a real server: a pre-started browser that is nobody's, handed over
once, never reused, never counted as a session, and gone when the server stops."""

from __future__ import annotations

import os
import signal
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.e2e.agent_support import TERMINAL, create, token, wait_until_status
from tests.e2e.browser_support import (
    CdpClient,
    cdp_evaluate,
    cdp_navigate,
    create_browser,
    needs_display,
    stack_process_names,
    stack_processes,
    stop_browser,
)
from tests.e2e.servers import api_client, running_server
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.asgi_thread import ThreadedServer
from tests.support.server import ServerProcess, wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.display, needs_display]

MODEL = "claude-sonnet-5"


def details(server: ServerProcess) -> dict[str, Any]:
    data: dict[str, Any] = loopback.get(f"{server.base_url}/health/details", timeout=30).json()
    return data


def ready_spare(server: ServerProcess) -> dict[str, Any]:
    """Wait until ``/health/details`` lists a ready spare; return it."""
    found: list[dict[str, Any]] = []

    def probe() -> bool:
        found[:] = [s for s in details(server)["spares"]["slots"] if s["state"] == "ready"]
        return bool(found)

    wait_until(probe, 60, what="a ready spare")
    return found[0]


def chromium_of(server: ServerProcess, slot_index: int) -> psutil.Process:
    """The main Chromium process (the one with the CDP port) of a slot of ``server``."""
    for proc in stack_processes(server):
        try:
            cmdline = proc.cmdline()
        except psutil.NoSuchProcess:
            continue
        if any(arg.startswith("--remote-debugging-port=") for arg in cmdline) and any(
            arg.endswith(f"/slot-{slot_index}/user-data") for arg in cmdline
        ):
            return proc
    raise AssertionError(f"no Chromium for slot {slot_index}: {[p.cmdline() for p in stack_processes(server)]}")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone(pid: int) -> bool:
    return not _alive(pid)


def user_data_dir(proc: psutil.Process) -> Path:
    arg = next(a for a in proc.cmdline() if a.startswith("--user-data-dir="))
    return Path(arg.split("=", 1)[1])


def test_a_spare_waits_at_idle_and_is_not_a_session(tmp_path: Path) -> None:
    with running_server(tmp_path / "home", {"PREWARM_SLOTS": "1"}, slots=2) as server:
        spare = ready_spare(server)
        health = details(server)
        assert health["spares"]["count"] == 1 and health["spares"]["wanted"] == 1
        assert spare["owner"] is None and spare["pssMib"] > 0
        assert health["slots"] == []
        assert health["activeSessions"] == health["running"] == health["queued"] == health["parked"] == 0
        assert loopback.get(f"{server.v3}/sessions", timeout=30).json()["total"] == 0
        names = stack_process_names(server)
        assert {"Xvfb", "chromium"} <= names and not names & {"x11vnc", "websockify"}  # live view off
        chromium_of(server, spare["index"])


def test_prewarm_off_leaves_no_browser_at_idle(tmp_path: Path) -> None:
    with running_server(tmp_path / "home", {"PREWARM_SLOTS": "0"}, slots=2) as server:
        health = details(server)  # start-up is complete when /health answers: nothing is pending
        assert health["spares"] == {"wanted": 0, "count": 0, "pssMib": 0.0, "slots": []}
        assert stack_processes(server) == []


def test_a_spare_is_never_reused(tmp_path: Path, pages: ThreadedServer) -> None:
    """Browser A dirties its browser; B, served from the next spare, sees none of it in a fresh profile."""
    with (
        running_server(tmp_path / "home", {"PREWARM_SLOTS": "1"}, slots=2) as server,
        api_client(server) as http,
    ):
        first_spare = ready_spare(server)
        a = create_browser(http)
        health = details(server)
        assert [(s["index"], s["owner"]) for s in health["slots"]] == [(first_spare["index"], f"browser {a['id']}")]
        a_chromium = chromium_of(server, first_spare["index"])
        a_dir = user_data_dir(a_chromium)
        (a_dir / "written-by-a").write_text("a")
        page = f"{pages.url}/hello"
        cdp_navigate(a["cdpUrl"], page)
        cdp_evaluate(a["cdpUrl"], "document.cookie = 'who=a; max-age=3600'; localStorage.setItem('who', 'a')")
        assert cdp_evaluate(a["cdpUrl"], "document.cookie + ' ' + localStorage.getItem('who')") == "who=a a"

        next_spare = ready_spare(server)  # started on the other slot while A runs
        assert next_spare["index"] != first_spare["index"]
        spare_chromium = chromium_of(server, next_spare["index"])
        stop_browser(http, a["id"])
        wait_until(lambda: not a_chromium.is_running(), 30, what="A's Chromium to exit")
        # The slot is released after its teardown (seam, scratch, wipe), a moment after Chromium exits.
        wait_until(
            lambda: all(s["owner"] != f"browser {a['id']}" for s in details(server)["slots"]),
            30,
            what="A's slot to be released",
        )

        b = create_browser(http)
        assert [(s["index"], s["owner"]) for s in details(server)["slots"]] == [
            (next_spare["index"], f"browser {b['id']}")
        ]
        b_chromium = chromium_of(server, next_spare["index"])
        assert b_chromium.pid == spare_chromium.pid  # handed over warm, not started cold
        b_dir = user_data_dir(b_chromium)
        assert b_dir != a_dir and not (b_dir / "written-by-a").exists()
        assert not (a_dir / "written-by-a").exists()  # A's dir was wiped (a new spare may be starting there)

        cdp = CdpClient(b["cdpUrl"])
        try:
            assert cdp.call("Storage.getCookies")["cookies"] == []
            history = cdp.call("Page.getNavigationHistory", session=cdp.page_session())
            assert [entry["url"] for entry in history["entries"]] == ["about:blank"]
        finally:
            cdp.close()
        cdp_navigate(b["cdpUrl"], page)
        assert cdp_evaluate(b["cdpUrl"], "document.cookie + '|' + localStorage.getItem('who')") == "|null"
        stop_browser(http, b["id"])


def test_a_killed_spare_chromium_is_never_handed_over(tmp_path: Path, fake: FakeProvider) -> None:
    with running_server(tmp_path / "home", {**fake.env(), "PREWARM_SLOTS": "1"}) as server:
        spare = ready_spare(server)
        killed = chromium_of(server, spare["index"])
        os.kill(killed.pid, signal.SIGKILL)
        session = create(server, task=f"{token('KILLED-SPARE')} Say hello.", model=MODEL)
        ended = wait_until_status(server, session["id"], TERMINAL)
        assert ended["status"] == "stopped" and ended["isTaskSuccessful"], ended["lastStepSummary"]
        fresh = ready_spare(server)  # the released slot became a new spare
        assert chromium_of(server, fresh["index"]).pid != killed.pid


def test_sessions_take_spares_and_the_server_leaves_nothing_behind(tmp_path: Path, fake: FakeProvider) -> None:
    with running_server(tmp_path / "home", {**fake.env(), "PREWARM_SLOTS": "1"}, slots=2, check_temp=True) as server:
        for _ in range(2):
            spare = ready_spare(server)
            spare_pid = chromium_of(server, spare["index"]).pid
            session = create(server, task=f"{token('WARM')} Say hello.", model=MODEL)
            ended = wait_until_status(server, session["id"], TERMINAL)
            assert ended["status"] == "stopped" and ended["isTaskSuccessful"], ended["lastStepSummary"]
            assert f"Handing spare slot {spare['index']} over" in server.log()
            wait_until(partial(_gone, spare_pid), 60, what="the session's browser to be torn down")
        ready_spare(server)
