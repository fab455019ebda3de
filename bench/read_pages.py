"""read_pages against visiting the same pages one by one, both in one run of a real server.

    .venv/bin/python bench/read_pages.py [--pages 48] [--latency 0] [--iterations 1] [--markdown]

A real ``openbrowse serve`` subprocess (one display slot, real Xvfb + Chromium) reads a local catalog of item
pages with JSON-LD, answered by the fake provider with zero latency (OpenAI Responses API, ``gpt-5.6-terra``):

* **read_pages**: open the catalog, ``find_links(href_contains="/catalog/item/")``, ``read_pages()``, ``done``;
* **one by one**: open the catalog, then one ``navigate`` step per item page (browser-use serialises the DOM and
  takes a screenshot of each, as a stock agent visiting pages does), ``done``.

Reported per side: the reading phase (from the end of the step that opened the catalog to the end of the last
reading step, from the feed's own timestamps), the whole session wall time, and the pages actually read (files
for read_pages, distinct item URLs requested from the site for one by one). The sides run one after the other on
the same server, taking turns going first (the server's first session meets a cold process and browser); the
ratio is one-by-one / read_pages. The fake model answers instantly, so a real model's
latency (seconds per step) would widen the gap in read_pages' favour.

(A bare-CDP "floor" used to run after the two sides; its Chromium ran as root with ``--no-sandbox`` and no egress
proxy, unlike a slot's, so it was removed (issue 33).)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.agent_support import create, data_of, messages, token, wait_until_status
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import agent_step, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

RUN_TIMEOUT = 1800.0


def agent_steps(request: LLMRequest) -> bool:
    return request.is_agent_step


def step_rows(server: ServerProcess, session_id: str) -> list[dict[str, Any]]:
    kinds = {"browser_action", "result", "browser_action_error"}
    return [m for m in messages(server, session_id) if m["type"] in kinds]


def timestamp(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(str(message["createdAt"]).replace("Z", "+00:00")).timestamp()


def reading_phase(rows: list[dict[str, Any]]) -> float:
    """From the end of the first step (catalog opened) to the end of the last step before ``done``."""
    reading = [row for row in rows if data_of(row).get("action") != "done"]
    return timestamp(reading[-1]) - timestamp(reading[0])


def run_side(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, script: list[Any], latency: float
) -> dict[str, Any]:
    marker = token("BENCH")
    fake.script(marker, [structured(step, delay=latency) for step in script], when=agent_steps)
    started = time.monotonic()
    session = create(server, task=f"{marker} Read every item of the catalog at {site.url}/catalog")
    finished = wait_until_status(server, session["id"], {"stopped", "error"}, timeout=RUN_TIMEOUT)
    wall = time.monotonic() - started
    if finished["status"] != "stopped":
        raise RuntimeError(f"bench session ended {finished['status']}: {finished['lastStepSummary']}")
    rows = step_rows(server, session["id"])
    return {"id": session["id"], "wall": wall, "phase": reading_phase(rows), "steps": len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=48)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds the fake model takes per agent step")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--iterations", type=int, default=1, help="repeat the comparison; the figures are summarised")
    args = parser.parse_args()
    runs = [
        compare(args.pages, args.latency, show=not args.markdown, single_first=bool(n % 2))
        for n in range(max(1, args.iterations))
    ]
    if args.markdown or len(runs) > 1:
        summarise(runs, args.pages, args.latency)


def spread(values: list[float], digits: int = 1) -> str:
    ordered = sorted(values)
    return f"{ordered[0]:.{digits}f} / {statistics.median(ordered):.{digits}f} / {ordered[-1]:.{digits}f}"


def summarise(runs: list[dict[str, Any]], pages: int, latency: float) -> None:
    lines = [
        "",
        f"Over {len(runs)} runs ({pages} pages, model latency {latency:g} s/step), min / median / max:",
        "",
        "| figure (min / median / max) | value |",
        "|---|---|",
        *(
            f"| {label}: {what} (s) | {spread([r[side][key] for r in runs])} |"
            for side, label in (("batched", "read_pages"), ("single", "one by one"))
            for key, what in (("phase", "reading phase"), ("wall", "session wall"))
        ),
        f"| pages read (read_pages / one by one) | {min(r['batched']['read'] for r in runs)} / "
        f"{min(r['single']['read'] for r in runs)} of {pages} (worst run) |",
        f"| speed-up of the reading phase (goal ≥ 5x) | {spread([r['ratio'] for r in runs])}x |",
        f"| 1-min load average at the runs' starts | {spread([r['load'] for r in runs])} |",
        "| per run: load average → speed-up (read_pages / one by one, s) | "
        + ", ".join(
            f"{r['load']:.1f} → {r['ratio']:.1f}x ({r['batched']['phase']:.1f} / {r['single']['phase']:.1f})"
            for r in runs
        )
        + " |",
    ]
    sys.stdout.write("\n".join(lines) + "\n")


def compare(pages: int, latency: float, *, show: bool = True, single_first: bool = False) -> dict[str, Any]:
    """One side-by-side run: print its table (``show``) and return both sides' figures and the speed-up."""
    load = os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="read-pages-bench-") as home,
        FakeProvider() as fake,
        FixtureSites() as site,
    ):
        server = ServerProcess(home=Path(home), env={**fake.env(), "OPENAI_API_STYLE": "responses"}).start()
        try:
            catalog = f"{site.url}/catalog?n={pages}"

            def batched_side() -> dict[str, Any]:
                script = [
                    navigate(catalog),
                    agent_step([{"find_links": {"href_contains": "/catalog/item/"}}]),
                    agent_step([{"read_pages": {}}]),
                    done("read"),
                ]
                side = run_side(server, fake, site, script, latency)
                read = json.loads((Path(home) / "data" / "sessions" / side["id"] / "pages.json").read_text())
                side["read"] = sum(1 for page in read if page["jsonld"])
                return side

            def single_side() -> dict[str, Any]:
                site.state.hits.clear()
                items = [f"{site.url}/catalog/item/{n}" for n in range(1, pages + 1)]
                walk = [navigate(catalog), *[navigate(url) for url in items], done("read")]
                side = run_side(server, fake, site, walk, latency)
                side["read"] = len({path for _, path in site.state.hits if path.startswith("/catalog/item/")})
                return side

            # The server's first session runs on a cold process and browser: the sides take turns going first.
            if single_first:
                single = single_side()
                batched = batched_side()
            else:
                batched = batched_side()
                single = single_side()
        finally:
            server.stop()
    ratio = single["phase"] / batched["phase"]
    lines = [
        "| side | reading phase (s) | session wall (s) | steps | pages read |",
        "|---|---|---|---|---|",
        f"| read_pages | {batched['phase']:.1f} | {batched['wall']:.1f} | {batched['steps']} | {batched['read']} |",
        f"| one by one | {single['phase']:.1f} | {single['wall']:.1f} | {single['steps']} | {single['read']} |",
        "",
        f"Speed-up of the reading phase: **{ratio:.1f}x** ({pages} pages, model latency {latency:g} s/step; "
        f"1-min load average {load:.1f} at the start).",
    ]
    if show:
        sys.stdout.write("\n".join(lines) + "\n")
    return {"batched": batched, "single": single, "ratio": ratio, "load": load}


if __name__ == "__main__":
    main()
