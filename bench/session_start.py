"""Session start: POST → ``running`` and POST → first agent request, for the first session after a server start
and for a later one, plus server RSS after many sessions. The server imports browser-use before ``/health``
answers and keeps a warm spare (the product default, ``PREWARM_SLOTS=1``), so the first session should cost what
a later one does (goal ≤ 1.2x).

    .venv/bin/python bench/session_start.py [--iterations 5] [--sessions 40] [--markdown]

Each iteration starts a fresh server (``python -m openbrowse serve``, zero-latency fake model) and POSTs a task
the moment ``/health`` answers (cold), then, once it ended, a second task (warm). The row is polled every 5 ms
for ``running``; the first agent request is the fake's receive time of the first agent-step request carrying the
session's marker. A final server then runs ``--sessions`` sessions back to back and reports its RSS at boot,
after the first session and after the last (goal: ≤ 150 MiB after 40), with the live-object census.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from served import fmt, health_details, print_figures, run_session, served, server_rss

ORIGINAL = {"running": 1.18, "first_request": 2.26, "cold_running": 1.21, "cold_first_request": 2.53}
"""The original OpenBrowse on this machine (issue 11), medians."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    cold_running: list[float] = []
    cold_first: list[float] = []
    warm_running: list[float] = []
    warm_first: list[float] = []
    for _ in range(args.iterations):
        with served() as (server, fake), httpx.Client(timeout=60) as client:
            cold = run_session(server, fake, client)
            warm = run_session(server, fake, client)
        cold_running.append(cold.running)
        cold_first.append(cold.first_agent_request)
        warm_running.append(warm.running)
        warm_first.append(warm.first_agent_request)
    rss: list[float] = []
    live: dict[str, int] = {}
    if args.sessions:
        with served() as (server, fake), httpx.Client(timeout=60) as client:
            rss.append(server_rss(server))
            for index in range(args.sessions):
                run_session(server, fake, client)
                if index == 0:
                    rss.append(server_rss(server))
            rss.append(server_rss(server))
            live = health_details(server)["liveObjects"]
    ratio_first = sorted(c / w for c, w in zip(cold_first, warm_first, strict=True))
    rows = [
        ("POST → running, warm", fmt(warm_running), f"{min(warm_running) / ORIGINAL['running']:.2f}x original"),
        (
            "POST → first agent request, warm",
            fmt(warm_first),
            f"{min(warm_first) / ORIGINAL['first_request']:.2f}x original (goal ≤ 0.45x)",
        ),
        ("POST → running, first session after a start", fmt(cold_running), ""),
        ("POST → first agent request, first session after a start", fmt(cold_first), ""),
        ("first / later session, to first agent request", fmt(ratio_first, "x"), "goal ≤ 1.2x"),
    ]
    if rss:
        rows.append(
            (
                f"server RSS: boot / after 1 / after {args.sessions} sessions",
                " / ".join(f"{value:.0f} MiB" for value in rss),
                f"goal ≤ 150 MiB; live objects after: {live}",
            )
        )
    print_figures(rows, markdown=args.markdown, widths=(58, 30))


if __name__ == "__main__":
    main()
