"""Server memory: RSS of the server process at boot, after one session and after many sequential sessions.

    .venv/bin/python bench/server_memory.py [--iterations 5] [--sessions 40] [--markdown]

Each iteration starts a fresh server (``python -m openbrowse serve``, zero-latency fake model, see ``served.py``)
and runs ``--sessions`` one-step sessions one after another, reading the server's RSS (``psutil``) at boot,
after the first session and after the last one (goal: ≤ 150 MiB after 40). The growth per session over the
last ``--sessions - 1`` sessions tells a leak (it grows linearly) from a one-time cost (browser-use's import,
the first run's caches). ``liveObjects`` comes from ``/health/details`` after the last
session; the original's figures are from issue 11 (89 MiB at boot, 158 after one session, 224 after 40).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import fmt, health_details, print_figures, run_session, served, server_rss

ORIGINAL_AFTER_40 = 224.0
"""The original OpenBrowse's server RSS after 40 sessions on this machine (issue 11), MiB."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    boot: list[float] = []
    first: list[float] = []
    last: list[float] = []
    growth: list[float] = []
    leftovers: dict[str, object] = {}
    for _ in range(args.iterations):
        with served() as (server, fake), httpx.Client(timeout=60) as client:
            boot.append(server_rss(server))
            for index in range(args.sessions):
                run_session(server, fake, client)
                if index == 0:
                    first.append(server_rss(server))
            last.append(server_rss(server))
            details = health_details(server)
            leftovers = {"liveObjects": details["liveObjects"]}
        growth.append((last[-1] - first[-1]) / max(1, args.sessions - 1))
    rows = [
        ("server RSS at boot", fmt(boot, "MiB", 0), ""),
        ("server RSS after 1 session", fmt(first, "MiB", 0), ""),
        (
            f"server RSS after {args.sessions} sessions",
            fmt(last, "MiB", 0),
            f"goal ≤ 150 MiB; {max(last) / ORIGINAL_AFTER_40:.2f}x the original (worst run)",
        ),
        ("growth per session after the first", fmt(growth, "MiB", 2), f"left after the last run: {leftovers}"),
    ]
    print_figures(rows, markdown=args.markdown, widths=(40, 26))


if __name__ == "__main__":
    main()
