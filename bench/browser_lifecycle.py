"""Raw-browser lifecycle, in the style of the public BrowserArena board: create, connect, goto, release.

    .venv/bin/python bench/browser_lifecycle.py [--iterations 50] [--slots 1] [--markdown]

One real server (``python -m openbrowse serve``) with the product's defaults: one display slot
(``MAX_CONCURRENT_SESSIONS=1``) and one warm spare (``PREWARM_SLOTS=1``). A single client (concurrency 1) runs
``--iterations`` lifecycles per mode, each timed phase by phase:

* **create**: ``POST /v3/browsers`` until its 201 (the browser is up and has a ``cdpUrl``);
* **connect**: Playwright's ``connect_over_cdp(cdpUrl)`` through the proxied, token-authorised socket;
* **goto**: ``page.goto`` of a local fixture page until its ``load`` event;
* **release**: ``PATCH /v3/browsers/{id} {"action":"stop"}`` until its 200.

Modes, on the same server one after the other:

* **1.5 s gaps**: 1.5 s between iterations (a spare has usually been started again by then);
* **back to back**: the next create right after the release answered;
* **warm spare**: before each iteration (untimed) the bench waits until ``/health/details`` lists a ready spare.

Reported per mode: p50 and p90 of each phase and of the whole lifecycle, and how many lifecycles succeeded (every
phase answered as expected within 60 s).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Playwright, async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import ready_spare, served
from tests.e2e.browser_support import fixture_site
from tests.support.server import ServerProcess

PHASES = ("create", "connect", "goto", "release", "total")
MODES = {"1.5 s gaps": 1.5, "back to back": 0.0, "warm spare": 0.0}
GOALS = {"release": 40.0, "back to back": 400.0, "warm spare": 150.0}
"""Milliseconds at p50 (issue text): release, and the whole lifecycle back to back and with a warm spare."""
PHASE_TIMEOUT = 60.0


@dataclass
class ModeResult:
    samples: dict[str, list[float]] = field(default_factory=lambda: {phase: [] for phase in PHASES})
    succeeded: int = 0
    failures: list[str] = field(default_factory=list)


async def _timed(times: dict[str, float], phase: str, work: Awaitable[Any]) -> Any:
    started = time.perf_counter()
    result = await asyncio.wait_for(work, PHASE_TIMEOUT)
    times[phase] = (time.perf_counter() - started) * 1000
    return result


async def lifecycle(client: httpx.AsyncClient, playwright: Playwright, page_url: str) -> dict[str, float]:
    """One create → connect → goto → release; the phases' milliseconds. Raises on any failure."""
    times: dict[str, float] = {}
    started = time.perf_counter()
    response = await _timed(times, "create", client.post("/v3/browsers", json={}))
    if response.status_code != 201:
        raise RuntimeError(f"create answered {response.status_code}: {response.text[:200]}")
    created = response.json()
    browser = None
    try:
        browser = await _timed(times, "connect", playwright.chromium.connect_over_cdp(created["cdpUrl"]))
        context = browser.contexts[0] if browser.contexts else await browser.new_context()
        page = context.pages[0] if context.pages else await context.new_page()
        await _timed(times, "goto", page.goto(page_url, wait_until="load"))
    finally:
        stopped = await _timed(times, "release", client.patch(f"/v3/browsers/{created['id']}", json={"action": "stop"}))
        times["total"] = (time.perf_counter() - started) * 1000
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()  # the server closed the connection already; this only frees Playwright's side
    if stopped.status_code != 200 or stopped.json().get("status") != "stopped":
        raise RuntimeError(f"release answered {stopped.status_code}: {stopped.text[:200]}")
    return times


async def run_mode(
    server: ServerProcess,
    playwright: Playwright,
    page_url: str,
    iterations: int,
    gap: float,
    *,
    spare: bool,
) -> ModeResult:
    result = ModeResult()
    async with httpx.AsyncClient(base_url=server.base_url, timeout=PHASE_TIMEOUT) as client:
        for iteration in range(iterations):
            if iteration and gap:
                await asyncio.sleep(gap)
            if spare:
                await asyncio.to_thread(ready_spare, server)
            try:
                times = await lifecycle(client, playwright, page_url)
            except Exception as exc:
                result.failures.append(f"{type(exc).__name__}: {exc}"[:300])
                continue
            result.succeeded += 1
            for phase in PHASES:
                result.samples[phase].append(times[phase])
    return result


def percentile(values: list[float], fraction: float) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[round(fraction * 100) - 1]


def report(
    results: dict[str, ModeResult],
    iterations: int,
    slots: int,
    prewarm: int,
    markdown: bool,
    loads: tuple[float, float],
) -> None:
    header = "| mode | " + " | ".join(f"{phase} p50 / p90 (ms)" for phase in PHASES) + " | success | goal (p50) |"
    lines = [header, "|" + "---|" * (len(PHASES) + 3)]
    for mode, result in results.items():
        cells = [f"{percentile(result.samples[p], 0.5):.0f} / {percentile(result.samples[p], 0.9):.0f}" for p in PHASES]
        goals = [f"release ≤ {GOALS['release']:.0f} ms"]
        if mode in GOALS:
            goals.append(f"total ≤ {GOALS[mode]:.0f} ms")
        success = f"{result.succeeded}/{iterations}"
        lines.append(f"| {mode} | {' | '.join(cells)} | {success} | {', '.join(goals)}; 100 % success |")
    # a shared machine's load moves these figures more than most changes do: say what it was
    note = (
        f"\nconcurrency 1, {slots} display slot(s), PREWARM_SLOTS={prewarm}; "
        f"load average {loads[0]:.1f} at the start, {loads[1]:.1f} at the end"
    )
    text = "\n".join(lines) + "\n" + note
    print(text if markdown else text.replace("|", " "))
    for mode, result in results.items():
        for failure in result.failures[:3]:
            print(f"{mode}: {failure}", file=sys.stderr)


async def measure(server: ServerProcess, page_url: str, iterations: int) -> dict[str, ModeResult]:
    results: dict[str, ModeResult] = {}
    async with async_playwright() as playwright:
        for mode, gap in MODES.items():
            spare = mode == "warm spare"
            results[mode] = await run_mode(server, playwright, page_url, iterations, gap, spare=spare)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--slots", type=int, default=1, help="MAX_CONCURRENT_SESSIONS (product default: 1)")
    parser.add_argument("--prewarm", type=int, default=1, help="PREWARM_SLOTS (product default: 1)")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    env = {"MAX_CONCURRENT_SESSIONS": str(args.slots), "PREWARM_SLOTS": str(args.prewarm)}
    with fixture_site() as site, served(env) as (server, _fake):
        load_at_start = os.getloadavg()[0]
        results = asyncio.run(measure(server, f"{site.url}/hello", args.iterations))
    loads = (load_at_start, os.getloadavg()[0])
    report(results, args.iterations, args.slots, args.prewarm, args.markdown, loads)


if __name__ == "__main__":
    main()
