"""Session start: POST → ``running`` and POST → first agent request, for the first session after a server start
and for a later one, plus server RSS after many sessions. The server imports browser-use before ``/health``
answers and keeps a warm spare (the product default, ``PREWARM_SLOTS=1``), so the first session should cost what
a later one does (goal ≤ 1.2x).

    .venv/bin/python bench/session_start.py [--iterations 5] [--sessions 40] [--markdown]

Each iteration starts a fresh server (``python -m openbrowse serve``, zero-latency fake model) and POSTs a task
the moment ``/health`` answers (first session after a start), then, once the replacement spare is ready, a second
task (later session, as a client arriving at a settled server), then a third right after the second ended (back
to back: its spare is still starting). The row is polled every 5 ms for ``running``; the first agent request is
the fake's receive time of the first agent-step request carrying the session's marker. Server RSS after many
sessions is ``bench/server_memory.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import fmt, print_figures, ready_spare, run_session, served

ORIGINAL = {"running": 1.18, "first_request": 2.26, "cold_running": 1.21, "cold_first_request": 2.53}
"""The original OpenBrowse on this machine (issue 11), medians."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    first_running: list[float] = []
    first_request: list[float] = []
    later_running: list[float] = []
    later_request: list[float] = []
    back_to_back_request: list[float] = []
    for _ in range(args.iterations):
        with served() as (server, fake), httpx.Client(timeout=60) as client:
            first = run_session(server, fake, client)
            ready_spare(server)
            later = run_session(server, fake, client)
            back_to_back = run_session(server, fake, client)
        first_running.append(first.running)
        first_request.append(first.first_agent_request)
        later_running.append(later.running)
        later_request.append(later.first_agent_request)
        back_to_back_request.append(back_to_back.first_agent_request)
    ratio_first = sorted(f / w for f, w in zip(first_request, later_request, strict=True))
    rows = [
        (
            "POST → running, later session",
            fmt(later_running),
            f"{min(later_running) / ORIGINAL['running']:.2f}x original",
        ),
        (
            "POST → first agent request, later session",
            fmt(later_request),
            f"{min(later_request) / ORIGINAL['first_request']:.2f}x original (goal ≤ 0.45x)",
        ),
        ("POST → running, first session after a start", fmt(first_running), ""),
        (
            "POST → first agent request, first session after a start",
            fmt(first_request),
            f"{min(first_request) / ORIGINAL['cold_first_request']:.2f}x original",
        ),
        ("first / later session, to first agent request", fmt(ratio_first, "x"), "goal ≤ 1.2x"),
        (
            "POST → first agent request, back to back (spare still starting)",
            fmt(back_to_back_request),
            f"{min(back_to_back_request) / ORIGINAL['first_request']:.2f}x original",
        ),
    ]
    print_figures(rows, markdown=args.markdown, widths=(64, 30))


if __name__ == "__main__":
    main()
