"""Control API overhead: the route handlers of ``/snapshot`` and ``/act`` next to bare Playwright, same browser.

    .venv/bin/python bench/control.py [--iterations 30] [--markdown]

One headless Chromium on its own DevTools port, one fixture form page. Two Playwright clients attach to it over
CDP: ours (:class:`openbrowse.control.engine.ControlEngine`, called through the registered route handlers the API
layer serves, no HTTP) and a bare ``connect_over_cdp``. Measured, alternating sides each iteration:

* **snapshot**: ``GET /snapshot`` (ai format) vs ``page.aria_snapshot(mode="ai")``;
* **act click**: ``POST /act {kind:"click", ref}`` vs ``page.locator("aria-ref=<ref>").click()``;
* **batch x20**: ``POST /act {kind:"batch"}`` of 20 ``type`` actions vs 20 ``locator.fill`` calls.

Reported: median milliseconds per operation per side, and ours / bare (goal: at most 1.3).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import Page, async_playwright

from openbrowse.control.engine import ControlEngine
from openbrowse.control.target import ControlTarget
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.slots.chromium import BASE_FLAGS
from openbrowse.slots.probes import CdpVersionProbe
from openbrowse.slots.process import ManagedProcess
from tests.integration.control.control_site import call, serve_sites
from tests.support.server import free_port

CHROMIUM = Path("/usr/lib/chromium/chromium")
BATCH_SIZE = 20


async def timed(operation: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await operation()
    return (time.perf_counter() - started) * 1000


async def measure(cdp_url: str, form_url: str, scratch: Path, iterations: int) -> dict[str, dict[str, list[float]]]:
    folders = BrowserFolders(uploads=scratch / "uploads", downloads=scratch / "downloads").ensure()
    target = ControlTarget(cdp_url=cdp_url, folders=folders, files_dir=scratch, file_url=lambda name: name)
    engine = ControlEngine(target)
    samples: dict[str, dict[str, list[float]]] = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.connect_over_cdp(cdp_url)
        try:
            ours_page = await engine.page(None)
            await ours_page.goto(form_url)
            bare_page = browser.contexts[0].pages[0]
            await bare_page.wait_for_load_state()
            for iteration in range(iterations):
                for name, (ours, bare) in _operations(engine, bare_page).items():
                    sides = samples.setdefault(name, {"ours": [], "bare": []})
                    order = [("ours", ours), ("bare", bare)]
                    for side, run in order if iteration % 2 == 0 else order[::-1]:
                        sides[side].append(await run())
        finally:
            await engine.aclose()
            await browser.close()
    return samples


def _operations(engine: ControlEngine, bare: Page) -> dict[str, tuple[Callable[[], Awaitable[float]], ...]]:
    """Each operation as (ours, bare): a coroutine that prepares untimed, then returns the timed milliseconds.

    Both clients attach to the same page, and Playwright's ai refs belong to the client that took the snapshot:
    each side snapshots (untimed) before it acts.
    """

    async def ours_refs() -> dict[str, str]:
        snap = await call(engine, "GET", "/snapshot")
        return {info.get("name", ""): ref for ref, info in snap["refs"].items()}

    async def bare_refs() -> dict[str, str]:
        text = await bare.aria_snapshot(mode="ai")
        found = re.findall(r'- \w+ "([^"]*)"[^\n]*?\[ref=(\w+)\]', text)
        return dict(found)

    async def ours_snapshot() -> float:
        return await timed(lambda: call(engine, "GET", "/snapshot"))

    async def bare_snapshot() -> float:
        return await timed(lambda: bare.aria_snapshot(mode="ai"))

    async def ours_click() -> float:
        go = (await ours_refs())["Go"]
        return await timed(lambda: call(engine, "POST", "/act", {"kind": "click", "ref": go}))

    async def bare_click() -> float:
        go = (await bare_refs())["Go"]
        return await timed(lambda: bare.locator(f"aria-ref={go}").click())

    async def ours_batch() -> float:
        name = (await ours_refs())["Name"]
        actions = [{"kind": "type", "ref": name, "text": f"n{index}"} for index in range(BATCH_SIZE)]
        return await timed(lambda: call(engine, "POST", "/act", {"kind": "batch", "actions": actions}))

    async def bare_batch() -> float:
        field = bare.locator(f"aria-ref={(await bare_refs())['Name']}")

        async def fill_all() -> None:
            for index in range(BATCH_SIZE):
                await field.fill(f"n{index}")

        return await timed(fill_all)

    return {
        "snapshot": (ours_snapshot, bare_snapshot),
        "act click": (ours_click, bare_click),
        f"batch x{BATCH_SIZE}": (ours_batch, bare_batch),
    }


def report(samples: dict[str, dict[str, list[float]]], markdown: bool) -> None:
    lines = ["| operation (median ms) | bare Playwright | ours | ours / bare |", "|---|---|---|---|"]
    for name, sides in samples.items():
        bare, ours = statistics.median(sides["bare"]), statistics.median(sides["ours"])
        lines.append(f"| {name} | {bare:.1f} | {ours:.1f} | {ours / bare:.2f} |")
    text = "\n".join(lines) + f"\n\niterations: {len(next(iter(samples.values()))['ours'])}"
    print(text if markdown else text.replace("|", " "))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="control-bench-") as scratch_dir, serve_sites() as sites:
        scratch = Path(scratch_dir)
        port = free_port()
        argv = [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            f"--remote-debugging-port={port}",
            "--remote-debugging-address=127.0.0.1",
            f"--user-data-dir={scratch / 'profile'}",
            *BASE_FLAGS,
            "about:blank",
        ]
        async with ManagedProcess("chromium", argv) as process:
            await process.wait_ready(CdpVersionProbe(port), within=30)
            samples = await measure(f"http://127.0.0.1:{port}", f"{sites.main}/form", scratch, args.iterations)
    report(samples, args.markdown)


if __name__ == "__main__":
    asyncio.run(main())
