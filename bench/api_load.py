"""API under load: ``GET /v3/sessions/{id}`` from 20 clients, idle and while a session runs; event-loop lag.

    .venv/bin/python bench/api_load.py [--iterations 5] [--seconds 5] [--markdown]

One real server (``python -m openbrowse serve``) with the zero-latency fake model. After one warm-up session,
each iteration measures, alternately:

* **idle**: ``wrk -t2 -c20 --latency`` against the row of a finished session for ``--seconds``; req/s and p99.
* **busy**: the same while sessions run back to back (one at a time, each one agent step on a fresh browser),
  so the window covers launches, agent steps and teardowns. The server's loop-lag p99 over the window comes
  from ``/health/details`` (``loopLagMs``).

Two servers run side by side and are measured alternately: the default (each engine on its own thread and
event loop) and ``ENGINE_THREADS=false`` (engines on the API's loop, as before), so the comparison holds
under whatever load the machine has.

The load generator is ``wrk`` (Debian package ``wrk``; it runs on the same two cores as the server, so the
figures are a floor). Targets 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from served import fmt, health_details, print_figures, run_session, served

from tests.fakes.llm_server import FakeProvider
from tests.support.server import ServerProcess

ORIGINAL_IDLE_RPS = 356.0
"""The original OpenBrowse on this machine (issue 11), 20 clients, idle."""


def wrk(url: str, seconds: float) -> tuple[float, float]:
    """(requests per second, p99 latency in ms)."""
    out = subprocess.run(
        ["wrk", "-t2", "-c20", f"-d{seconds:g}s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()  # type: ignore[union-attr]
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return rps, p99


def measure(
    server: ServerProcess, fake: FakeProvider, url: str, seconds: float
) -> tuple[float, float, float, float, float]:
    """(idle req/s, idle p99, busy req/s, busy p99, loop-lag p99 while busy) for one server."""
    idle_rps, idle_p99 = wrk(url, seconds)
    stop = threading.Event()

    def keep_running() -> None:
        with httpx.Client(timeout=60) as own:
            while not stop.is_set():
                run_session(server, fake, own)

    runner = threading.Thread(target=keep_running)
    runner.start()
    try:
        fake.wait_for_requests(len(fake.requests) + 1, timeout=60)  # a session is under way
        busy_rps, busy_p99 = wrk(url, seconds)
        lag = health_details(server)["loopLagMs"]["p99"]
    finally:
        stop.set()
        runner.join()
    return idle_rps, idle_p99, busy_rps, busy_p99, lag


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    figures: dict[str, list[tuple[float, float, float, float, float]]] = {"threads": [], "loop": []}
    with contextlib.ExitStack() as stack:
        targets = {}
        for mode, flag in (("threads", "true"), ("loop", "false")):
            server, fake = stack.enter_context(served({"ENGINE_THREADS": flag}))
            client = stack.enter_context(httpx.Client(timeout=60))
            run_session(server, fake, client)  # warm-up: browser-use imported, one browser started and closed
            session_id = client.get(f"{server.v3}/sessions").json()["sessions"][0]["id"]
            targets[mode] = (server, fake, f"{server.v3}/sessions/{session_id}")
        for _ in range(args.iterations):
            for mode, (server, fake, url) in targets.items():
                figures[mode].append(measure(server, fake, url, args.seconds))
    ours = list(zip(*figures["threads"], strict=True))
    before = list(zip(*figures["loop"], strict=True))
    idle_rps, idle_p99, busy_rps, busy_p99, lag_p99 = ours
    ratio_p99 = sorted(a / b for a, b in zip(busy_p99, before[3], strict=True))
    ratio_lag = sorted(a / max(b, 0.1) for a, b in zip(lag_p99, before[4], strict=True))
    rows = [
        ("idle req/s", fmt(idle_rps, "", 0), f"{min(idle_rps) / ORIGINAL_IDLE_RPS:.2f}x the original (worst run)"),
        ("idle p99", fmt(idle_p99, "ms", 0), ""),
        ("busy req/s", fmt(busy_rps, "", 0), f"engines on the API loop: {fmt(before[2], '', 0)}"),
        ("busy p99", fmt(busy_p99, "ms", 0), f"goal ≤ 100 ms; engines on the API loop: {fmt(before[3], 'ms', 0)}"),
        ("busy p99, threads / API loop", fmt(ratio_p99, "x"), "same run, interleaved"),
        (
            "loop lag p99 (last minute, busy)",
            fmt(lag_p99, "ms", 0),
            f"engines on the API loop: {fmt(before[4], 'ms', 0)}",
        ),
        ("loop lag p99, threads / API loop", fmt(ratio_lag, "x"), ""),
    ]
    print_figures(rows, markdown=args.markdown, widths=(36, 28))


if __name__ == "__main__":
    main()
