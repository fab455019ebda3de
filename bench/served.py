"""Shared parts for benchmarks against the real server: a ``serve`` subprocess wired to the zero-latency fake.

The server is started exactly as a user starts it (``python -m openbrowse serve``) in a scratch home, with
the fake LLM provider (``tests/fakes/llm_server.py``) answering in-process with zero latency. Unscripted agent
steps get ``done`` at once, so a session runs one agent step and ends.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess, wait_until

MiB = 1024 * 1024
TERMINAL = {"idle", "stopped", "timed_out", "error", "expired"}
MODEL = "claude-sonnet-5"


@dataclass(frozen=True)
class SessionTimes:
    """Seconds from the POST that created the session."""

    running: float
    first_agent_request: float
    ended: float


@contextlib.contextmanager
def served(
    env: dict[str, str] | None = None, python: str = sys.executable
) -> Iterator[tuple[ServerProcess, FakeProvider]]:
    """A server (of the tree ``python`` imports) with the fake provider; stopped and its home removed on exit."""
    home = Path(tempfile.mkdtemp(prefix="openbrowse-bench-"))
    with FakeProvider() as fake:
        server = ServerProcess(
            home=home,
            env={**fake.env(), "MAX_CONCURRENT_SESSIONS": "2", "PREWARM_SLOTS": "1", **(env or {})},
            python=python,
        )
        try:
            server.start()
            yield server, fake
        finally:
            server.stop()
            shutil.rmtree(home, ignore_errors=True)


def run_session(
    server: ServerProcess, fake: FakeProvider, client: httpx.Client, timeout: float = 120.0
) -> SessionTimes:
    """POST a task, poll the row every 5 ms until ``running`` and until it ends; time the first agent request."""
    marker = f"BENCH-{uuid.uuid4().hex[:10]}"
    started = time.monotonic()
    wall_started = time.time()
    response = client.post(f"{server.v3}/sessions", json={"task": f"{marker} Say hello.", "model": MODEL})
    response.raise_for_status()
    session_id = response.json()["id"]
    running: float | None = None
    deadline = started + timeout
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = client.get(f"{server.v3}/sessions/{session_id}").json()
        status = row["status"]
        if running is None and status in {"running", *TERMINAL}:
            running = time.monotonic() - started
        if status in TERMINAL:
            break
        time.sleep(0.005)
    else:
        raise TimeoutError(f"session {session_id} did not end:\n{server.log()[-3000:]}")
    ended = time.monotonic() - started
    if not row.get("isTaskSuccessful"):
        raise RuntimeError(f"session {session_id} failed: {row.get('lastStepSummary')}\n{server.log()[-3000:]}")
    steps = fake.wait_for_requests(1, match=lambda r: marker in r.text and r.is_agent_step, timeout=5)
    assert running is not None
    return SessionTimes(running=running, first_agent_request=steps[0].timestamp - wall_started, ended=ended)


def server_rss(server: ServerProcess) -> float:
    assert server.process is not None
    return psutil.Process(server.process.pid).memory_info().rss / MiB


def health_details(server: ServerProcess) -> dict[str, Any]:
    data: dict[str, Any] = httpx.get(f"{server.base_url}/health/details", timeout=30).json()
    return data


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """min, median, max."""
    return min(values), statistics.median(values), max(values)


def fmt(values: Sequence[float], unit: str = "s", digits: int = 2) -> str:
    low, mid, high = spread(values)
    return f"{mid:.{digits}f} {unit} ({low:.{digits}f}–{high:.{digits}f})"


def print_figures(rows: Sequence[tuple[str, str, str]], *, markdown: bool, widths: tuple[int, int]) -> None:
    """The figure table every server benchmark prints: markdown for ``docs/benchmarks.md``, else aligned text."""
    if markdown:
        print("| figure | median (min–max) | note |\n|---|---|---|")
        for name, value, note in rows:
            print(f"| {name} | {value} | {note} |")
    else:
        for name, value, note in rows:
            print(f"{name:{widths[0]}} {value:{widths[1]}} {note}")


def ready_spare(server: ServerProcess) -> float:
    """Wait for a ready spare; return its PSS in MiB."""
    found: list[float] = []

    def probe() -> bool:
        found[:] = [s["pssMib"] for s in health_details(server)["spares"]["slots"] if s["state"] == "ready"]
        return bool(found)

    wait_until(probe, 60, interval=0.02, what="a ready spare")
    return found[0]
