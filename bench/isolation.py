"""Cost of isolation (spec §24.7): the current tree side by side with a baseline revision, in one run: by default
``623df5f``, the tree before the sandbox's seams were closed (issue 31); ``b71b64c`` is the one before the sandbox.

    .venv/bin/python bench/isolation.py [--iterations 5] [--sessions 40] [--stop-cap 60] [--markdown]
                                        [--baseline-ref 623df5f]

The baseline is the repository at ``--baseline-ref`` (``git archive``, ``api_load.source_tree``), served by an
interpreter that imports it (``baseline_python``: the script host's ``python -I`` ignores ``PYTHONPATH``); both
servers are ``python -m openbrowse serve`` with the zero-latency fake model, on slot ranges taken like the tests'
(lock files), so other benchmarks and tests on the machine do not collide with them. Every phase checks what the
server did, not only that the fake's script ended: the 4-step task and the parked session must have loaded the
fixture site's pages, and each ``run_code_file`` call's result must carry the script's own output. Phases:

1. **Side by side** (``PREWARM_SLOTS=1``, both servers up, each iteration visiting both): POST → ``running`` with
   a ready spare; the 4-step scripted task of ``api_load`` (navigate, open a product, go back, done); the first
   and a second ``run_code_file`` call in one session, each timed from the feed's ``Running <name>.py`` event to
   the model request carrying its result (the start-up of the script host is the first minus the second); on the
   current tree, POST /stop against ``while True: pass``, timed to a terminal status.
2. **Server RSS** after ``--sessions`` sessions of that mix on each server (one reading per tree).
3. **The baseline's stop against a spinning script**, once and last (its in-process eval may wedge the server):
   capped at ``--stop-cap`` seconds, reported as "> cap" when it did not stop; the server is then killed.
4. **PSS**, on one lone server at a time without a spare (a neighbour's Chromium would share, and so lighten, the
   pages): a keep-alive session parks on the fixture ``/jobs`` page; the PSS of all the server's descendant
   processes (its one slot: sandbox holder, Xvfb, Chromium, helpers) is read, then again in a second session that
   ran one ``run_code_file`` (its script host stays up). ``/health/details``'s own figure for the slot is given
   alongside.

Figures are medians (min–max) and current/baseline ratios (median of per-iteration ratios where paired); the goals
are shown next to them, never asserted. The load average is recorded at each iteration.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import Target, four_step_task, source_tree
from bench.baseline_python import baseline_python
from bench.served import MODEL, TERMINAL, MiB, fmt, ready_spare, run_session, server_rss
from bench.warm_spare import slot_pss
from tests.e2e.agent_support import messages, wait_for_message
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import done, navigate, run_code
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess, wait_until
from tests.support.slot_range import free_slot_base, release_slot_base

BASELINE_REF = "623df5f"
PROBE = "print('ready')\n"
SPIN = "while True:\n    pass\n"
T = TypeVar("T")


@dataclass(frozen=True)
class Tree:
    name: str
    python: str = sys.executable
    """The interpreter that serves it (the baseline's imports the baseline tree)."""


@dataclass
class Figures:
    warm_running: list[float] = field(default_factory=list)
    task_wall: list[float] = field(default_factory=list)
    first_script: list[float] = field(default_factory=list)
    later_script: list[float] = field(default_factory=list)
    spin_stop: list[float | None] = field(default_factory=list)
    pss: list[float] = field(default_factory=list)
    pss_reported: list[float] = field(default_factory=list)
    pss_script: list[float] = field(default_factory=list)
    pss_script_reported: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    sessions: int = 0
    lost: list[str] = field(default_factory=list)
    """Measurements a failed session cost (on a loaded machine a slot start can time out): reported, not hidden."""


def agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


@contextlib.contextmanager
def serve(tree: Tree, prewarm: int) -> Iterator[tuple[ServerProcess, FakeProvider]]:
    """``served.served`` for a given tree and slot range (``served`` takes a range from the tests' own)."""
    home = Path(tempfile.mkdtemp(prefix=f"openbrowse-isolation-{tree.name}-"))
    env = {"MAX_CONCURRENT_SESSIONS": "2", "PREWARM_SLOTS": str(prewarm), "NETWORK_POLICY": "open"}
    with FakeProvider() as fake:
        server = ServerProcess(home=home, env={**fake.env(), **env}, slot_base=free_slot_base(4), python=tree.python)
        try:
            server.start()
            yield server, fake
        finally:
            shut_down(server)
            shutil.rmtree(home, ignore_errors=True)


def shut_down(server: ServerProcess) -> None:
    """SIGTERM, SIGKILL after 20 s; then the slot processes a wedged server left behind, by their pids."""
    try:
        server.stop(timeout=20)
    finally:
        for proc in server.leftovers():
            with contextlib.suppress(psutil.Error):
                proc.kill()
        release_slot_base(server.slot_base)


def create(server: ServerProcess, client: httpx.Client, task: str, **body: Any) -> str:
    response = client.post(f"{server.v3}/sessions", json={"task": task, "model": MODEL, **body})
    response.raise_for_status()
    session_id: str = response.json()["id"]
    return session_id


def wait_ended(server: ServerProcess, client: httpx.Client, session_id: str, timeout: float = 120) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def ended() -> bool:
        found.update(client.get(f"{server.v3}/sessions/{session_id}").json())
        return found["status"] in TERMINAL

    wait_until(ended, timeout, interval=0.02, what=f"the end of {session_id}")
    return found


def moment(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(message["createdAt"]).timestamp()


def walked(site: FixtureSites, target: Target) -> float:
    """The 4-step task's wall time, once the shop served what it visits (a product page, the shop twice)."""
    before = len(site.state.hits)
    wall = four_step_task(target, site)
    paths = [path for _, path in site.state.hits[before:]]
    if paths.count("/") < 2 or not any(path.startswith("/product/") for path in paths):
        raise RuntimeError(f"the 4-step task did not visit the shop: {paths}")
    return wall


def script_calls(server: ServerProcess, fake: FakeProvider, client: httpx.Client) -> tuple[float, float]:
    """Seconds from ``Running <name>.py`` to the model request with its result: the first call, then a second."""
    marker = f"CODE-{uuid.uuid4().hex[:8]}"
    steps = [run_code("first", PROBE), run_code("again", PROBE), done("Ran it twice.")]
    fake.script(marker, steps, when=agent_steps)
    session_id = create(server, client, f"{marker} Run the probe twice.")
    row = wait_ended(server, client, session_id)
    if not row.get("isTaskSuccessful"):
        raise RuntimeError(f"script session failed: {row.get('lastStepSummary')}\n{server.log()[-3000:]}")
    started = {m["summary"]: moment(m) for m in messages(server, session_id) if m["summary"].startswith("Running ")}
    requests = [r for r in fake.requests_matching(marker) if r.is_agent_step]
    for index, name in ((1, "first"), (2, "again")):
        if f"Ran scripts/{name}.py.\nOutput:\nready\n" not in requests[index].text:
            raise RuntimeError(f"the script {name} did not run:\n{requests[index].text[-1500:]}")
    return requests[1].timestamp - started["Running first.py"], requests[2].timestamp - started["Running again.py"]


def spin_stop(server: ServerProcess, fake: FakeProvider, client: httpx.Client, cap: float) -> float | None:
    """Seconds from POST /stop to a terminal status against ``while True: pass``; None when ``cap`` passed first."""
    marker = f"SPIN-{uuid.uuid4().hex[:8]}"
    fake.script(marker, [run_code("spin", SPIN), done("never")], when=agent_steps)
    session_id = create(server, client, f"{marker} Spin forever.")
    wait_for_message(server, session_id, lambda m: m["summary"] == "Running spin.py", timeout=120)
    time.sleep(1.0)  # the script holds its CPU for a moment, as a runaway script would before anyone stops it
    started = time.monotonic()
    try:
        client.post(f"{server.v3}/sessions/{session_id}/stop", timeout=cap).raise_for_status()
        left = cap - (time.monotonic() - started)
        wait_ended(server, client, session_id, timeout=max(0.1, left))
    except (httpx.TimeoutException, TimeoutError):
        return None
    return time.monotonic() - started


def descendants_pss(server: ServerProcess) -> float:
    total = 0
    for proc in server.children():
        with contextlib.suppress(psutil.Error):
            total += proc.memory_full_info().pss
    return total / MiB


def parked_pss(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, client: httpx.Client, *, script: bool
) -> tuple[float, float]:
    """(PSS of the server's descendants, ``/health/details``'s slot figure) with a keep-alive session parked."""
    marker = f"PSS-{uuid.uuid4().hex[:8]}"
    steps = [navigate(f"{site.url}/jobs"), *([run_code("probe", PROBE)] if script else []), done("Opened the page.")]
    fake.script(marker, steps, when=agent_steps)
    before = len(site.state.hits)
    session_id = create(server, client, f"{marker} Open the jobs page.", keepAlive=True)
    row = wait_ended(server, client, session_id)
    if "/jobs" not in [path for _, path in site.state.hits[before:]]:
        raise RuntimeError(f"the parked session never loaded /jobs: {row.get('lastStepSummary')}")
    if not row.get("isTaskSuccessful"):
        raise RuntimeError(f"parked session failed: {row.get('lastStepSummary')}\n{server.log()[-3000:]}")
    time.sleep(1.0)  # the page settles (its iframe loaded, the renderer idle), as in bench/warm_spare.py
    measured, reported = descendants_pss(server), slot_pss(server, session_id)
    client.post(f"{server.v3}/sessions/{session_id}/stop", json={"strategy": "session"}).raise_for_status()
    with contextlib.suppress(TimeoutError):
        wait_until(lambda: not server.children(), 30, interval=0.1, what="the slot's processes to end")
    return measured, reported


def side_by_side(
    trees: Sequence[Tree], figures: dict[str, Figures], iterations: int, sessions: int, cap: float, loads: list[float]
) -> None:
    current, baseline = trees
    with contextlib.ExitStack() as stack:
        site = stack.enter_context(FixtureSites())
        client = stack.enter_context(httpx.Client(timeout=60))
        servers = {tree.name: stack.enter_context(serve(tree, prewarm=1)) for tree in trees}
        for name, (server, fake) in servers.items():
            run_session(server, fake, client)  # warm-up: browser-use imported, one browser started and closed
            figures[name].sessions += 1
        for iteration in range(iterations):
            loads.append(os.getloadavg()[0])
            for name, (server, fake) in alternated(list(servers.items()), iteration):
                ours = figures[name]
                with losing(ours):
                    ready_spare(server)
                    ours.warm_running.append(run_session(server, fake, client).running)
                    ours.task_wall.append(walked(site, Target(server, fake, "")))
                    first, later = script_calls(server, fake, client)
                    ours.first_script.append(first)
                    ours.later_script.append(later)
                    ours.sessions += 3
                    if name == current.name:
                        ours.spin_stop.append(spin_stop(server, fake, client, cap))
                        ours.sessions += 1
        while any(f.sessions < sessions for f in figures.values()):
            for name, (server, fake) in servers.items():
                if figures[name].sessions < sessions:
                    run_session(server, fake, client)
                    figures[name].sessions += 1
        if sessions:
            for name, (server, _) in servers.items():
                figures[name].rss.append(server_rss(server))
        server, fake = servers[baseline.name]
        figures[baseline.name].spin_stop.append(spin_stop(server, fake, client, cap))


@contextlib.contextmanager
def losing(figures: Figures) -> Iterator[None]:
    """Record a measurement that failed (a session that did not end as scripted) and go on with the next."""
    try:
        yield
    except (RuntimeError, TimeoutError) as exc:
        figures.lost.append(str(exc).splitlines()[0][:160])


def alternated(sides: list[T], iteration: int) -> list[T]:
    """Both sides, the current one first on even iterations and last on odd ones (neither always runs warmer)."""
    return sides if iteration % 2 == 0 else sides[::-1]


def memory(trees: Sequence[Tree], figures: dict[str, Figures], iterations: int, loads: list[float]) -> None:
    with FixtureSites() as site, httpx.Client(timeout=60) as client:
        for iteration in range(iterations):
            loads.append(os.getloadavg()[0])
            for tree in alternated(list(trees), iteration):
                ours = figures[tree.name]
                with serve(tree, prewarm=0) as (server, fake):
                    with losing(ours):
                        measured, reported = parked_pss(server, fake, site, client, script=False)
                        ours.pss.append(measured)
                        ours.pss_reported.append(reported)
                    with losing(ours):
                        measured, reported = parked_pss(server, fake, site, client, script=True)
                        ours.pss_script.append(measured)
                        ours.pss_script_reported.append(reported)


def cell(values: Sequence[float], unit: str, digits: int) -> str:
    return fmt(values, unit, digits) if values else "not measured"


def ratio(ours: Sequence[float], theirs: Sequence[float]) -> str:
    pairs = [a / b for a, b in zip(ours, theirs, strict=False) if b > 0]
    return f"{statistics.median(pairs):.2f}x" if pairs else "—"


def stops(values: Sequence[float | None], cap: float) -> str:
    if not values:
        return "not measured"
    done_in = [v for v in values if v is not None]
    capped = len(values) - len(done_in)
    if not done_in:
        return f"> {cap:.0f} s (cap){f', {capped} runs' if capped > 1 else ''}"
    text = fmt(done_in, "s", 2)
    return f"{text}; {capped} of {len(values)} > {cap:.0f} s cap" if capped else text


def rows_for(figures: dict[str, Figures], names: tuple[str, str], cap: float, sessions: int) -> list[list[str]]:
    now, then = (figures[name] for name in names)

    def compared(label: str, figure: str, unit: str, digits: int, goal: str) -> list[str]:
        ours, theirs = getattr(now, figure), getattr(then, figure)
        return [label, cell(ours, unit, digits), cell(theirs, unit, digits), ratio(ours, theirs), goal]

    rows = [
        compared("POST → running, warm spare", "warm_running", "s", 3, "≤ 0.2 s"),
        compared("4-step task wall time", "task_wall", "s", 2, "≤ 1.1x baseline"),
        compared(
            "first run_code_file: Running → result", "first_script", "s", 2, "includes the script host's start-up"
        ),
        compared("second run_code_file: Running → result", "later_script", "s", 2, "host already up"),
        [
            "script host start-up (first − second call)",
            cell([a - b for a, b in zip(now.first_script, now.later_script, strict=True)], "s", 2),
            cell([a - b for a, b in zip(then.first_script, then.later_script, strict=True)], "s", 2),
            "—",
            "",
        ],
        [
            "POST /stop → terminal, spinning script",
            stops(now.spin_stop, cap),
            stops(then.spin_stop, cap),
            "—",
            "≤ 10 s",
        ],
        compared("PSS of a parked session, no script", "pss", "MiB", 0, "≤ 450 MiB; all the server's descendants"),
        compared("… as /health/details reports the slot", "pss_reported", "MiB", 0, "the product's own figure"),
        compared("PSS of a parked session, with a script host", "pss_script", "MiB", 0, "≤ 500 MiB"),
        compared("… as /health/details reports the slot", "pss_script_reported", "MiB", 0, "the product's own figure"),
        [
            f"server RSS after {sessions} sessions" if sessions else "server RSS after many sessions",
            cell(now.rss, "MiB", 0) if sessions else "skipped (--sessions 0)",
            cell(then.rss, "MiB", 0) if sessions else "skipped",
            ratio(now.rss, then.rss),
            "≤ 150 MiB; one reading per tree",
        ],
    ]
    return rows


def print_table(rows: Sequence[Sequence[str]], header: Sequence[str], *, markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(str(value).ljust(width) for value, width in zip(row, widths, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=40, help="server RSS after this many sessions (0: skip)")
    parser.add_argument("--stop-cap", type=float, default=60.0, help="seconds a stop may take before '> cap'")
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    loads: list[float] = []
    with source_tree(args.baseline_ref) as source, baseline_python(source) as python:
        trees = (Tree("current"), Tree(args.baseline_ref, python))
        figures = {tree.name: Figures() for tree in trees}
        side_by_side(trees, figures, args.iterations, args.sessions, args.stop_cap, loads)
        memory(trees, figures, args.iterations, loads)
    header = [
        "figure",
        "current: median (min–max)",
        f"{args.baseline_ref}: median (min–max)",
        "current/baseline",
        "goal",
    ]
    rows = rows_for(figures, (trees[0].name, trees[1].name), args.stop_cap, args.sessions)
    loads.append(os.getloadavg()[0])
    for name in (trees[0].name, trees[1].name):
        lost = figures[name].lost
        if lost:
            rows.append([f"measurements lost on {name}", str(len(lost)), "; ".join(sorted(set(lost)))[:300], "", ""])
    rows.append(["1-min load average at iteration starts", fmt(loads, "", 1), "", "", "2 CPUs; shared with other work"])
    print_table(rows, header, markdown=args.markdown)
    print(f"\n{args.iterations} iterations, {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
