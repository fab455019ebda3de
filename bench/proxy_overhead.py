"""Page loads through an upstream proxy against direct ones, in one run (spec §28.1; goal: proxied ≤ 1.2× direct).

    .venv/bin/python bench/proxy_overhead.py [--loads 40] [--markdown]     (``--iterations`` = ``--loads``)

One real server with two display slots and ``PROXY_POOL=us=<pproxy HTTP, with authentication>`` on loopback. Two
raw browsers are up at once: one direct (``proxyCountryCode: null``), one through the pool's proxy
(``proxyCountryCode: "us"``), both driven by Playwright over their ``cdpUrl``. Loads alternate between them
(direct, proxied, direct, ...), so both see the same machine load; each is a ``page.goto`` of a local fixture page
with a fresh query (no cache) until its ``load`` event. Direct loads go browser → egress enforcer → site; proxied
ones browser → egress enforcer → pproxy (CONNECT, Basic auth) → site. Reported: p50 and p90 of each, and the
ratio of the p50s.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.async_api import Page, async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import served
from tests.e2e.browser_support import fixture_site
from tests.support.upstream_proxy import upstream_proxies

GOAL_RATIO = 1.2


async def timed_load(page: Page, url: str) -> float:
    began = time.perf_counter()
    await page.goto(url, wait_until="load")
    return (time.perf_counter() - began) * 1000


async def measure(base_url: str, page_url: str, loads: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct": [], "proxied": []}
    async with httpx.AsyncClient(base_url=base_url, timeout=120) as client, async_playwright() as playwright:
        created: dict[str, Any] = {}
        for mode, country in (("direct", None), ("proxied", "us")):
            response = await client.post("/v3/browsers", json={"proxyCountryCode": country})
            response.raise_for_status()
            created[mode] = response.json()
        try:
            pages = {}
            for mode, browser in created.items():
                remote = await playwright.chromium.connect_over_cdp(browser["cdpUrl"])
                pages[mode] = remote.contexts[0].pages[0]
                await timed_load(pages[mode], f"{page_url}?warm={mode}")  # connections and caches of both warm
            for index in range(loads):
                for mode in ("direct", "proxied") if index % 2 == 0 else ("proxied", "direct"):
                    samples[mode].append(await timed_load(pages[mode], f"{page_url}?load={index}-{mode}"))
        finally:
            for browser in created.values():
                await client.patch(f"/v3/browsers/{browser['id']}", json={"action": "stop"})
    return samples


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def report(samples: dict[str, list[float]], markdown: bool) -> str:
    direct, proxied = statistics.median(samples["direct"]), statistics.median(samples["proxied"])
    ratio = proxied / direct
    verdict = "meets" if ratio <= GOAL_RATIO else "misses"
    if not markdown:
        return (
            f"direct p50 {direct:.1f} ms p90 {p90(samples['direct']):.1f} ms; proxied p50 {proxied:.1f} ms "
            f"p90 {p90(samples['proxied']):.1f} ms; ratio {ratio:.2f} ({verdict} the {GOAL_RATIO}x goal)"
        )
    return "\n".join(
        [
            "| Page load | p50 (ms) | p90 (ms) | loads |",
            "| --- | --- | --- | --- |",
            f"| direct (enforcer only) | {direct:.1f} | {p90(samples['direct']):.1f} | {len(samples['direct'])} |",
            f"| through pproxy (HTTP CONNECT, auth) | {proxied:.1f} | {p90(samples['proxied']):.1f} | "
            f"{len(samples['proxied'])} |",
            "",
            f"Ratio of the p50s: **{ratio:.2f}×** ({verdict} the ≤ {GOAL_RATIO}× goal).",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loads", "--iterations", dest="loads", type=int, default=40)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="proxy-bench-") as scratch,
        upstream_proxies(Path(scratch), "bench-user", "bench-password") as upstream,
        fixture_site() as site,
    ):
        env = {"MAX_CONCURRENT_SESSIONS": "2", "PROXY_POOL": f"us={upstream.url('http')}"}
        with served(env) as (server, _fake):
            samples = asyncio.run(measure(server.base_url, f"{site.url}/hello", args.loads))
    print(report(samples, args.markdown))


if __name__ == "__main__":
    main()
