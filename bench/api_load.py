"""API under load: ``GET /v3/sessions/{id}`` from 20 clients, idle and while sessions run; event-loop lag; the
agent's own speed.

    .venv/bin/python bench/api_load.py [--iterations 5] [--seconds 5] [--markdown] [--baseline-ref REF ...]

Servers (``python -m openbrowse serve``, zero-latency fake model) run side by side and are measured in turn, each
iteration visiting every server, so the ratios hold under whatever load the machine has:

* **ours**: the defaults;
* with ``--baseline-ref REF`` (repeatable), also the server of each such git revision (``git archive``), e.g.
  the commit before an optimisation, to compare code and not only settings (issue 24 settled engine threads
  against engines on the API's loop this way: see docs/benchmarks.md).

Per server and iteration:

* **idle**: ``wrk -t2 -c20 --latency`` against the row of a finished session for ``--seconds``; req/s and p99.
* **busy**: the same while sessions run back to back (one at a time, each one agent step on a fresh browser),
  so the window covers launches, agent steps and teardowns; the model calls the fake received in the window
  (how far the agents got while the API was saturated) and the server's loop-lag p99 (``/health/details`` →
  ``loopLagMs``, last minute) are read too.
* **4-step task**: wall time from POST to the end of a scripted four-step task on the fixture shop (navigate,
  open a product, go back, done), without API load: the agent's own speed.

The load generator is ``wrk`` (Debian package ``wrk``; it runs on the same two cores as the server, so the
figures are a floor). Targets 127.0.0.1 only. The 1-minute load average is recorded at each iteration.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import MODEL, fmt, health_details, print_figures, run_session, served
from tests.fakes.llm_script import ReplyLike, click_on, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

ORIGINAL_IDLE_RPS = 356.0
"""The original OpenBrowse on this machine (issue 11), 20 clients, idle."""
ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Figures:
    idle_rps: float
    idle_p99: float
    busy_rps: float
    busy_p99: float
    lag_p99: float
    model_calls_per_min: float
    task_wall: float


@dataclass
class Target:
    server: ServerProcess
    fake: FakeProvider
    url: str


def wrk(url: str, seconds: float) -> tuple[float, float]:
    """(requests per second, p99 latency in ms)."""
    out = subprocess.run(
        ["wrk", "-t2", "-c20", f"-d{seconds:g}s", "--latency", url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    throughput = re.search(r"Requests/sec:\s+([\d.]+)", out)
    latency = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    if throughput is None or latency is None:
        raise SystemExit(f"wrk printed no rate or p99: {out}")
    rps = float(throughput.group(1))
    value, unit = latency.groups()
    p99 = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return rps, p99


def four_step_task(target: Target, site: FixtureSites) -> float:
    """Seconds from POST to the end of a scripted four-step task (no API load)."""
    marker = f"WALK-{time.monotonic_ns()}"
    steps: list[ReplyLike] = [
        navigate(f"{site.url}/"),
        click_on("Blue Widget"),
        click_on("Back to shop"),
        done("Visited."),
    ]
    target.fake.script(marker, steps, when=lambda r: r.is_agent_step)
    server = target.server
    with httpx.Client(timeout=60) as client:
        started = time.monotonic()
        created = client.post(f"{server.v3}/sessions", json={"task": f"{marker} Visit the shop.", "model": MODEL})
        created.raise_for_status()
        session_id = created.json()["id"]
        while True:
            row = client.get(f"{server.v3}/sessions/{session_id}").json()
            if row["status"] in {"idle", "stopped", "timed_out", "error", "expired"}:
                break
            if time.monotonic() - started > 120:
                raise TimeoutError(f"4-step task did not end:\n{server.log()[-3000:]}")
            time.sleep(0.02)
    wall = time.monotonic() - started
    if not row.get("isTaskSuccessful") or row["stepCount"] != len(steps):
        raise RuntimeError(f"4-step task: {row['stepCount']} steps, {row.get('lastStepSummary')}")
    return wall


def measure(target: Target, site: FixtureSites, seconds: float) -> Figures:
    idle_rps, idle_p99 = wrk(target.url, seconds)
    stop = threading.Event()

    def keep_running() -> None:
        with httpx.Client(timeout=60) as own:
            while not stop.is_set():
                run_session(target.server, target.fake, own)

    runner = threading.Thread(target=keep_running)
    runner.start()
    try:
        target.fake.wait_for_requests(len(target.fake.requests) + 1, timeout=60)  # a session is under way
        window_start = time.time()
        busy_rps, busy_p99 = wrk(target.url, seconds)
        window_end = time.time()
        lag = float(health_details(target.server)["loopLagMs"]["p99"])
    finally:
        stop.set()
        runner.join()
    calls = sum(1 for r in target.fake.requests if window_start <= r.timestamp <= window_end)
    per_min = calls * 60 / (window_end - window_start)
    return Figures(idle_rps, idle_p99, busy_rps, busy_p99, lag, per_min, four_step_task(target, site))


@contextlib.contextmanager
def source_tree(ref: str) -> Iterator[Path]:
    """The repository at ``ref`` (``git archive``) in a scratch directory."""
    folder = Path(tempfile.mkdtemp(prefix="openbrowse-baseline-"))
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def ratios(ours: Sequence[Figures], other: Sequence[Figures], name: str) -> list[float]:
    """Per-iteration ratios ours/other (same minutes of the same machine); iterations where other is 0 are left out."""
    pairs = zip(ours, other, strict=True)
    return [getattr(a, name) / getattr(b, name) for a, b in pairs if getattr(b, name) > 0]


def rows_for(figures: dict[str, list[Figures]], loads: list[float]) -> list[tuple[str, str, str]]:
    ours = figures["ours"]

    def col(runs: Sequence[Figures], name: str) -> list[float]:
        return [getattr(run, name) for run in runs]

    def against(name: str, unit: str, digits: int = 0) -> str:
        parts = []
        for variant, runs in figures.items():
            if variant != "ours":
                parts.append(
                    f"{variant}: {fmt(col(runs, name), unit, digits)}, ours/it "
                    + (fmt(shares, "x") if (shares := ratios(ours, runs, name)) else "n/a")
                )
        return "; ".join(parts)

    rows = [
        (
            "idle req/s",
            fmt(col(ours, "idle_rps"), "", 0),
            f"{min(col(ours, 'idle_rps')) / ORIGINAL_IDLE_RPS:.2f}x the original (worst run); "
            + against("idle_rps", ""),
        ),
        ("idle p99", fmt(col(ours, "idle_p99"), "ms", 0), against("idle_p99", "ms")),
        ("busy req/s", fmt(col(ours, "busy_rps"), "", 0), against("busy_rps", "")),
        ("busy p99", fmt(col(ours, "busy_p99"), "ms", 0), "goal ≤ 100 ms; " + against("busy_p99", "ms")),
        ("loop lag p99 (last minute, busy)", fmt(col(ours, "lag_p99"), "ms", 0), against("lag_p99", "ms")),
        (
            "model calls per minute, busy",
            fmt(col(ours, "model_calls_per_min"), "", 0),
            "the agents' progress while wrk saturates the API; " + against("model_calls_per_min", ""),
        ),
        ("4-step task wall, no API load", fmt(col(ours, "task_wall"), "s"), against("task_wall", "s", 2)),
        ("1-min load average at iteration start", fmt(loads, "", 1), "2 CPUs; shared with other work"),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--baseline-ref", action="append", default=[], help="also serve this git revision side by side (repeatable)"
    )
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    variants: dict[str, dict[str, str]] = {"ours": {}}
    figures: dict[str, list[Figures]] = {}
    loads: list[float] = []
    with contextlib.ExitStack() as stack:
        site = stack.enter_context(FixtureSites())
        for ref in args.baseline_ref:
            tree = stack.enter_context(source_tree(ref))
            variants[ref] = {"PYTHONPATH": str(tree)}
        targets: dict[str, Target] = {}
        for name, env in variants.items():
            server, fake = stack.enter_context(served(env))
            client = stack.enter_context(httpx.Client(timeout=60))
            run_session(server, fake, client)  # warm-up: browser-use imported, one browser started and closed
            session_id = client.get(f"{server.v3}/sessions").json()["sessions"][0]["id"]
            targets[name] = Target(server, fake, f"{server.v3}/sessions/{session_id}")
            figures[name] = []
        for _ in range(args.iterations):
            loads.append(os.getloadavg()[0])
            for name, target in targets.items():
                figures[name].append(measure(target, site, args.seconds))
    print_figures(rows_for(figures, loads), markdown=args.markdown, widths=(38, 28))
    if not args.markdown:
        for name, runs in figures.items():
            print(name, [f"{statistics.median(getattr(r, f) for r in runs):.1f}" for f in Figures.__dataclass_fields__])


if __name__ == "__main__":
    main()
