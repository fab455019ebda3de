"""Session start: POST → ``running`` and POST → first agent request, for the first session after a server start
and for later ones, and server RSS after many sessions; against git revisions in the same run.

    .venv/bin/python bench/session_start.py [--iterations 5] [--sessions 40] [--markdown] [--baseline-ref REF ...]

Each iteration starts a fresh server per tree (``python -m openbrowse serve``, zero-latency fake model, one warm
spare; the trees in turn, so every tree sees the same minutes of the machine) and POSTs a task the moment
``/health`` answers (first session after a start), then, once the replacement spare is ready, a second task
(later session, as a client arriving at a settled server), then a third right after the second ended (back to
back: its spare is still starting). The row is polled every 5 ms for ``running``; the first agent request is the
fake's receive time of the first agent-step request carrying the session's marker. The server then runs one-step
sessions until ``--sessions`` ran in all and its RSS is read (``psutil``; goal ≤ 150 MiB after 40).

With ``--baseline-ref REF`` (repeatable) each git revision (``git archive``, as ``bench/api_load.py``) is served
the same way. Ratios are ours/baseline of the medians of the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import source_tree
from bench.served import fmt, ready_spare, run_session, served, server_rss

FIGURES = {
    "later_running": "POST → running, later session",
    "later_request": "POST → first agent request, later session",
    "first_running": "POST → running, first session after a start",
    "first_request": "POST → first agent request, first session after a start",
    "back_to_back_request": "POST → first agent request, back to back (spare still starting)",
    "ended": "POST → ended, later session (one agent step)",
    "rss": "server RSS after all sessions (MiB)",
}


def one_server(tree: Path | None, sessions: int) -> dict[str, float]:
    env = {"PYTHONPATH": str(tree)} if tree else {}
    with served(env) as (server, fake), httpx.Client(timeout=60) as client:
        first = run_session(server, fake, client)
        ready_spare(server)
        later = run_session(server, fake, client)
        back_to_back = run_session(server, fake, client)
        for _ in range(sessions - 3):
            run_session(server, fake, client)
        rss = server_rss(server)
    return {
        "later_running": later.running,
        "later_request": later.first_agent_request,
        "first_running": first.running,
        "first_request": first.first_agent_request,
        "back_to_back_request": back_to_back.first_agent_request,
        "ended": later.ended,
        "rss": rss,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--baseline-ref", action="append", default=[])
    args = parser.parse_args()
    runs: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    loads: list[float] = []
    with contextlib.ExitStack() as stack:
        trees: dict[str, Path | None] = {"ours": None}
        for ref in args.baseline_ref:
            trees[ref] = stack.enter_context(source_tree(ref))
        for _ in range(args.iterations):
            loads.append(os.getloadavg()[0])
            for name, tree in trees.items():
                for key, value in one_server(tree, max(3, args.sessions)).items():
                    runs[name][key].append(value)
    names = list(trees)
    header = "| figure | " + " | ".join(f"{n}: median (min–max)" for n in names)
    header += "".join(f" | ours/{n}" for n in names[1:]) + " |"
    print(header + "\n|---|" + "---|" * (len(names) * 2 - 1))
    for key, label in FIGURES.items():
        unit, digits = ("MiB", 0) if key == "rss" else ("s", 2)
        cells = [fmt(runs[n][key], unit, digits) for n in names]
        ours = statistics.median(runs["ours"][key])
        cells += [f"{ours / statistics.median(runs[n][key]):.2f}x" for n in names[1:]]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print(f"| 1-min load average at iteration starts | {fmt(loads, '', 1)} |" + " |" * (len(names) * 2 - 2))
    print(f"\n({args.iterations} iterations, {args.sessions} sessions per server)")


if __name__ == "__main__":
    main()
