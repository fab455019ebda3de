"""How the server's cost grows with concurrent sessions, and which code held the event loop meanwhile.

    .venv/bin/python bench/session_scaling.py [--concurrent 1,2,4] [--iterations 3] [--seconds 8]
                                              [--slow-from 4] [--step-delay 1.0] [--stalls 12] [--quiet 20]
                                              [--baseline-ref REF ...]

For each count N a fresh server (``python -m openbrowse serve``, ``MAX_CONCURRENT_SESSIONS=N``, one warm spare)
runs N sessions at once, each a long scripted walk through the fixture shop (navigate, open a product, back, the
next product ...), started again as soon as it ends. With N at or above ``--slow-from`` the fake model answers
every agent step after ``--step-delay`` seconds (so Chromium alone does not saturate two cores; the issue asks for
4 sessions at 1 s per step). Once all N run, per iteration:

* **busy p99**: ``wrk -t2 -c20 --latency`` on ``GET /v3/sessions/{id}`` (a finished session's row) for
  ``--seconds``;
* **loop-lag p99**: the server's own figure (``/health/details`` → ``loopLagMs.p99``, its last minute);
* **server CPU per agent step**: over the ``--quiet`` stretch before the ``wrk`` windows (sessions running, no
  API load), the server process's user+system CPU seconds (its children, Chromium and Xvfb, are not counted)
  divided by the agent steps the fake answered meanwhile; with the agent steps a minute there;
* **agent steps during the busy windows**: how far the agents got while ``wrk`` saturated the API;
* **server RSS** at the end of the window.

Before the ``wrk`` windows the sessions run ``--quiet`` seconds without API load; the stall sites
(``/health/details`` → ``loopStalls``: the code that held the loop in each stall over 20 ms, with the stack of its
worst stall) are printed for that quiet stretch, where only the server's own work stalls the loop, and for the
whole run: this is the full detail behind ``/metrics``'s ``openbrowse_loop_stall_seconds``. Targets 127.0.0.1
only; the 1-minute load average is recorded.

With ``--baseline-ref REF`` (repeatable) the server of each git revision (``git archive``, as in
``bench/api_load.py``) is measured the same way in the same run, one server at a time for each count (two servers
with running sessions side by side would share the CPUs and measure each other).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import source_tree, wrk
from bench.served import MODEL, TERMINAL, fmt, health_details, run_session, served
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import ReplyLike, click_on, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess, wait_until

PRODUCTS = ("Blue Widget", "Red Gadget", "Green Gizmo")
MiB = 1024 * 1024


@dataclass(frozen=True)
class Window:
    busy_p99: float
    lag_p99: float
    steps: int
    rss: float
    load: float


def walk(site: FixtureSites, rounds: int, delay: float) -> list[ReplyLike]:
    """A long task: the shop's index, then each product and back, ``rounds`` times, then done."""

    def slow(step: Any) -> ReplyLike:
        if delay <= 0:
            return step  # type: ignore[no-any-return]
        if callable(step):
            return lambda request: structured(step(request), delay=delay)
        return structured(step, delay=delay)

    steps: list[Any] = [navigate(f"{site.url}/")]
    for index in range(rounds):
        steps += [click_on(PRODUCTS[index % len(PRODUCTS)]), click_on("Back to shop")]
    steps.append(done("Walked the shop."))
    return [slow(step) for step in steps]


def keep_walking(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, delay: float, stop: threading.Event
) -> None:
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            marker = f"WALK-{uuid.uuid4().hex[:10]}"
            fake.script(marker, walk(site, 20, delay), when=lambda r: r.is_agent_step)
            created = client.post(f"{server.v3}/sessions", json={"task": f"{marker} Walk the shop.", "model": MODEL})
            created.raise_for_status()
            session_id = created.json()["id"]
            while not stop.is_set():
                if client.get(f"{server.v3}/sessions/{session_id}").json()["status"] in TERMINAL:
                    break
                time.sleep(0.2)
            else:
                client.post(f"{server.v3}/sessions/{session_id}/stop", json={"strategy": "session"})


@contextlib.contextmanager
def sessions_running(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, count: int, delay: float
) -> Iterator[None]:
    stop = threading.Event()
    walkers = [
        threading.Thread(target=keep_walking, args=(server, fake, site, delay, stop), daemon=True) for _ in range(count)
    ]
    for walker in walkers:
        walker.start()
    try:
        wait_until(lambda: health_details(server)["running"] >= count, 120, interval=0.2, what=f"{count} running")
        yield
    finally:
        stop.set()
        for walker in walkers:
            walker.join()


def is_step(request: LLMRequest) -> bool:
    return request.is_agent_step


def measure(server: ServerProcess, fake: FakeProvider, url: str, seconds: float) -> Window:
    assert server.process is not None
    process = psutil.Process(server.process.pid)
    load = os.getloadavg()[0]
    steps_before = sum(1 for r in fake.requests if is_step(r))
    busy_p99 = wrk(url, seconds)[1]
    steps = sum(1 for r in fake.requests if is_step(r)) - steps_before
    lag = float(health_details(server)["loopLagMs"]["p99"])
    return Window(busy_p99, lag, steps, process.memory_info().rss / MiB, load)


@dataclass(frozen=True)
class Quiet:
    cpu_per_step: float
    steps_per_minute: float


def quiet_stretch(server: ServerProcess, fake: FakeProvider, seconds: float) -> Quiet:
    """Server CPU per agent step and agent steps a minute while the sessions run without API load."""
    assert server.process is not None
    process = psutil.Process(server.process.pid)
    cpu_before = sum(process.cpu_times()[:2])
    steps_before = sum(1 for r in fake.requests if is_step(r))
    time.sleep(seconds)
    cpu = sum(process.cpu_times()[:2]) - cpu_before
    steps = sum(1 for r in fake.requests if is_step(r)) - steps_before
    return Quiet(cpu / steps if steps else float("nan"), steps * 60 / seconds)


def run_count(
    count: int, delay: float, site: FixtureSites, iterations: int, seconds: float, quiet: float, tree: Path | None
) -> tuple[Quiet, list[Window], list[dict[str, Any]], list[dict[str, Any]]]:
    env = {"MAX_CONCURRENT_SESSIONS": str(count), **({"PYTHONPATH": str(tree)} if tree else {})}
    with served(env) as (server, fake), httpx.Client(timeout=60) as client:
        run_session(server, fake, client)  # warm-up: browser-use imported, one browser started and closed
        finished = client.get(f"{server.v3}/sessions").json()["sessions"][0]["id"]
        url = f"{server.v3}/sessions/{finished}"
        windows: list[Window] = []
        with sessions_running(server, fake, site, count, delay):
            alone = quiet_stretch(server, fake, quiet)  # the agents alone: what stalls the loop without API load
            quiet_stalls: list[dict[str, Any]] = health_details(server).get("loopStalls") or []
            for _ in range(iterations):
                windows.append(measure(server, fake, url, seconds))
        stalls: list[dict[str, Any]] = health_details(server).get("loopStalls") or []
    return alone, windows, quiet_stalls, stalls


def print_stalls(title: str, stalls: list[dict[str, Any]], shown: int) -> None:
    print(f"\n#### Stall sites, {title}: summed lag, stalls, worst\n")
    print("| site | summed | stalls | worst |\n|---|---|---|---|")
    for stall in stalls[:shown]:
        print(f"| `{stall['site']}` | {stall['totalMs']:.0f} ms | {stall['stalls']} | {stall['worstMs']:.0f} ms |")
    for stall in stalls[:3]:
        print(f"\nworst stack of `{stall['site']}` (innermost first):\n")
        for frame in stall["stack"][:14]:
            print(f"    {frame}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrent", default="1,2,4")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--slow-from", type=int, default=4)
    parser.add_argument("--step-delay", type=float, default=1.0)
    parser.add_argument("--stalls", type=int, default=12)
    parser.add_argument("--quiet", type=float, default=20.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--baseline-ref", action="append", default=[])
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    started = time.monotonic()
    rows: list[str] = []
    details: list[tuple[str, list[dict[str, Any]]]] = []
    with contextlib.ExitStack() as stack:
        site = stack.enter_context(FixtureSites())
        trees: dict[str, Path | None] = {"ours": None}
        for ref in args.baseline_ref:
            trees[ref] = stack.enter_context(source_tree(ref))
        for count in (int(part) for part in args.concurrent.split(",")):
            delay = args.step_delay if count >= args.slow_from else 0.0
            for name, tree in trees.items():
                alone, windows, quiet, stalls = run_count(
                    count, delay, site, args.iterations, args.seconds, args.quiet, tree
                )
                if name == "ours":
                    details.append((f"{count} session(s), warm-up and {args.quiet:g} s without API load", quiet))
                    details.append((f"{count} session(s), the whole run", stalls))

                def col(field: str, runs: list[Window] = windows) -> list[float]:
                    return [getattr(window, field) for window in runs]

                rows.append(
                    f"| {name} | {count} | {delay:g} s | {fmt(col('busy_p99'), 'ms', 0)} | "
                    f"{fmt(col('lag_p99'), 'ms', 0)} | {alone.cpu_per_step:.2f} s | {alone.steps_per_minute:.0f} | "
                    f"{statistics.median(col('steps')):.0f} | {fmt(col('rss'), 'MiB', 0)} | {fmt(col('load'), '', 1)} |"
                )
    print(
        "| server | concurrent sessions | model delay per step | busy p99 | loop-lag p99 | "
        "server CPU per agent step (no API load) | agent steps a minute (no API load) | "
        f"agent steps per {args.seconds:g} s busy window | server RSS | 1-min load average |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(rows))
    print(f"\n({args.iterations} windows of {args.seconds:g} s per count, {time.monotonic() - started:.0f} s)")
    for title, stalls in details:
        print_stalls(title, stalls, args.stalls)


if __name__ == "__main__":
    main()
