"""Server memory: RSS of the server process at boot, after one session and after many sequential sessions, for the
current tree and a baseline revision (``623df5f`` by default) in the same run.

    .venv/bin/python bench/server_memory.py [--iterations 5] [--sessions 40] [--baseline-ref 623df5f] [--markdown]

Each iteration starts a fresh server of each tree in turn (the current one first on even iterations, last on odd
ones), ``python -m openbrowse serve`` with the zero-latency fake model (``served.py``; the baseline is served by an
interpreter that imports it, ``baseline_python.py``), and runs ``--sessions`` one-step sessions one after another,
reading the server's RSS (``psutil``) at boot, after the first session and after the last one (goal: ≤ 150 MiB
after 40). The growth per session over the last ``--sessions - 1`` sessions tells a leak (it grows linearly) from
a one-time cost. Ratios are current/baseline of the two sides' medians in this run; ``liveObjects`` comes from the
current tree's ``/health/details`` after its last session.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import source_tree
from bench.baseline_python import baseline_python
from bench.served import fmt, health_details, print_figures, run_session, served, server_rss

BASELINE_REF = "623df5f"


@dataclass
class Side:
    python: str
    boot: list[float] = field(default_factory=list)
    first: list[float] = field(default_factory=list)
    last: list[float] = field(default_factory=list)
    growth: list[float] = field(default_factory=list)
    live_objects: object = None


def measure(side: Side, sessions: int) -> None:
    with served(python=side.python) as (server, fake), httpx.Client(timeout=60) as client:
        side.boot.append(server_rss(server))
        for index in range(sessions):
            run_session(server, fake, client)
            if index == 0:
                side.first.append(server_rss(server))
        side.last.append(server_rss(server))
        side.live_objects = health_details(server).get("liveObjects")
    side.growth.append((side.last[-1] - side.first[-1]) / max(1, sessions - 1))


def ratio(ours: list[float], theirs: list[float]) -> str:
    return f"{statistics.median(ours) / statistics.median(theirs):.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--baseline-ref", default=BASELINE_REF)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with source_tree(args.baseline_ref) as source, baseline_python(source) as python:
        current, baseline = Side(sys.executable), Side(python)
        for iteration in range(args.iterations):
            for side in (current, baseline) if iteration % 2 == 0 else (baseline, current):
                measure(side, args.sessions)
    ref = args.baseline_ref
    rows = [
        ("server RSS at boot", fmt(current.boot, "MiB", 0), f"{ref}: {fmt(baseline.boot, 'MiB', 0)}"),
        ("server RSS after 1 session", fmt(current.first, "MiB", 0), f"{ref}: {fmt(baseline.first, 'MiB', 0)}"),
        (
            f"server RSS after {args.sessions} sessions",
            fmt(current.last, "MiB", 0),
            f"goal ≤ 150 MiB; {ref}: {fmt(baseline.last, 'MiB', 0)}; "
            f"current/{ref} {ratio(current.last, baseline.last)}",
        ),
        (
            "growth per session after the first",
            fmt(current.growth, "MiB", 2),
            f"{ref}: {fmt(baseline.growth, 'MiB', 2)}; liveObjects after the last run: {current.live_objects}",
        ),
    ]
    print_figures(rows, markdown=args.markdown, widths=(40, 26))


if __name__ == "__main__":
    main()
