"""PostgreSQL against SQLite (spec §26.1 goals): ``GET /v3/sessions/{id}`` p99 with 20 clients, the 4-step task,
server RSS; ratios PostgreSQL/SQLite in one run.

    .venv/bin/python bench/store_backends.py [--iterations 5] [--seconds 5] [--markdown]

Two servers (``python -m openbrowse serve``, zero-latency fake model) run side by side, one on SQLite (the default)
and one with ``DATABASE_URL`` on a throwaway PostgreSQL from Debian's package (``tests/support/postgres.py``: the
same machine, durability off, as in the tests). Each iteration visits both, so the ratios hold under whatever
load the machine has:

* ``wrk -t2 -c20 --latency`` against the row of a finished session for ``--seconds``: p99 and req/s. Both
  serve the row from the read cache: SQLite because this process is the only writer, PostgreSQL while its
  ``LISTEN`` connection hears every other node's writes (``store/change_notices.py``);
* the scripted 4-step task on the fixture shop (navigate, open a product, go back, done), POST to end;
* the server's RSS after both.

Goals: p99 ≤ 1.5×, 4-step task ≤ 1.1×, RSS ≤ 1.1×. ``wrk`` runs on the same two cores as the servers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import Target, four_step_task, wrk
from bench.served import fmt, print_figures, run_session, served, server_rss
from tests.fakes.site import FixtureSites
from tests.support.postgres import TEST_CLUSTER_SECRET, ThrowawayPostgres, server_bin_dir

GOALS = {"p99": 1.5, "task": 1.1, "rss": 1.1}


@dataclass(frozen=True)
class Figures:
    rps: float
    p99: float
    task: float
    rss: float


def measure(target: Target, site: FixtureSites, seconds: float) -> Figures:
    rps, p99 = wrk(target.url, seconds)
    task = four_step_task(target, site)
    return Figures(rps, p99, task, server_rss(target.server))


def rows(figures: dict[str, list[Figures]], loads: list[float]) -> list[tuple[str, str, str]]:
    sqlite, postgres = figures["sqlite"], figures["postgresql"]
    table: list[tuple[str, str, str]] = []
    for name, label, unit, digits in (
        ("p99", "GET session p99, 20 clients", "ms", 1),
        ("rps", "GET session req/s, 20 clients", "", 0),
        ("task", "4-step task wall", "s", 2),
        ("rss", "server RSS after the task", "MiB", 0),
    ):
        ratio = [getattr(p, name) / getattr(s, name) for s, p in zip(sqlite, postgres, strict=True)]
        goal = f"goal ≤ {GOALS[name]}x; " if name in GOALS else ""
        table.append(
            (
                f"{label}: PostgreSQL",
                fmt([getattr(p, name) for p in postgres], unit, digits),
                f"SQLite {fmt([getattr(s, name) for s in sqlite], unit, digits)}; {goal}PostgreSQL/SQLite "
                + fmt(ratio, "x"),
            )
        )
    table.append(("1-min load average at iteration start", fmt(loads, "", 1), "2 CPUs; shared with other work"))
    return table


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    bin_dir = server_bin_dir()
    if bin_dir is None:
        raise SystemExit("PostgreSQL is missing: apt-get install postgresql")
    postgres = ThrowawayPostgres(bin_dir)
    figures: dict[str, list[Figures]] = {"sqlite": [], "postgresql": []}
    loads: list[float] = []
    try:
        postgres.start()
        with contextlib.ExitStack() as stack:
            site = stack.enter_context(FixtureSites())
            targets: dict[str, Target] = {}
            on_postgresql = {"DATABASE_URL": postgres.new_database(), "CLUSTER_SECRET": TEST_CLUSTER_SECRET}
            for name, env in (("sqlite", {}), ("postgresql", on_postgresql)):
                server, fake = stack.enter_context(served(env))
                client = stack.enter_context(httpx.Client(timeout=60))
                run_session(server, fake, client)  # warm-up: browser-use imported, one browser started and closed
                session_id = client.get(f"{server.v3}/sessions").json()["sessions"][0]["id"]
                targets[name] = Target(server, fake, f"{server.v3}/sessions/{session_id}")
            for _ in range(args.iterations):
                loads.append(os.getloadavg()[0])
                for name, target in targets.items():
                    figures[name].append(measure(target, site, args.seconds))
    finally:
        postgres.stop()
    print_figures(rows(figures, loads), markdown=args.markdown, widths=(44, 28))


if __name__ == "__main__":
    main()
