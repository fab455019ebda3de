"""Control API latency as a user sees it: ``/snapshot``, ``/act`` click and a 20-action batch over HTTP, next to
the same operations in bare Playwright on the same browser.

    .venv/bin/python bench/control.py [--iterations 30] [--markdown]

A real server (``python -m openbrowse serve`` in a scratch home, :mod:`served`) starts one raw browser
(``POST /v3/browsers``); ``/navigate`` opens the fixture form in it. Three clients then drive that one page,
their order rotating every iteration:

* **HTTP**: the control API at ``/v3/browsers/{id}/browser`` (httpx, one keep-alive connection, the API key);
* **bare**: Playwright ``connect_over_cdp`` on the browser's own ``cdpUrl`` (the server's token-checked proxy);
* **bare, port**: Playwright ``connect_over_cdp`` on the browser's loopback DevTools port (read from its command
  line), the way the server's own engine attaches: the floor, without the proxy;
* **in-process**: the registered route handlers called directly on a
  :class:`~openbrowse.control.engine.ControlEngine` attached to that port (no HTTP, no server): what the HTTP
  layer and the server add is the difference to the HTTP column.

Operations: ``GET /snapshot?format=ai`` vs ``page.aria_snapshot(mode="ai")``; ``POST /act {kind:"click", ref}`` vs
``page.locator("aria-ref=<ref>").click()``; ``POST /act {kind:"batch"}`` of 20 ``type`` actions vs 20
``locator.fill`` calls. Playwright's ai refs belong to the client that took the snapshot, so each side snapshots
(untimed) before it acts. Reported: median milliseconds per side and HTTP / bare (goal: at most 1.3).
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
from typing import Any, Protocol

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.async_api import Browser, Page, async_playwright

from bench.served import served
from openbrowse.control.engine import ControlEngine
from openbrowse.control.target import ControlTarget
from openbrowse.domain.browser_folders import BrowserFolders
from tests.integration.control.control_site import call, serve_sites
from tests.support.server import ServerProcess, wait_until

API_KEY = "control-bench-key"
BATCH_SIZE = 20
GOAL = 1.3
SIDES = ("bare", "HTTP", "bare, port", "in-process")


class Side(Protocol):
    async def snapshot(self) -> Any: ...
    async def refs(self) -> dict[str, str]: ...
    async def click(self, ref: str) -> Any: ...
    async def batch(self, ref: str) -> Any: ...


def _texts() -> list[str]:
    return [f"n{index}" for index in range(BATCH_SIZE)]


class Bare:
    def __init__(self, page: Page) -> None:
        self.page = page

    async def snapshot(self) -> Any:
        return await self.page.aria_snapshot(mode="ai")

    async def refs(self) -> dict[str, str]:
        return dict(re.findall(r'- \w+ "([^"]*)"[^\n]*?\[ref=(\w+)\]', await self.snapshot()))

    async def click(self, ref: str) -> Any:
        await self.page.locator(f"aria-ref={ref}").click()

    async def batch(self, ref: str) -> Any:
        field = self.page.locator(f"aria-ref={ref}")
        for text in _texts():
            await field.fill(text)


class Http:
    def __init__(self, client: httpx.AsyncClient, base: str, target_id: str) -> None:
        self.client, self.base, self.target_id = client, base, target_id

    async def _ok(self, response: Awaitable[httpx.Response]) -> Any:
        answered = await response
        if answered.status_code != 200:
            raise RuntimeError(f"{answered.request.url} → {answered.status_code}: {answered.text[:500]}")
        return answered.json()

    async def snapshot(self) -> Any:
        params = {"format": "ai", "targetId": self.target_id}
        return await self._ok(self.client.get(f"{self.base}/snapshot", params=params))

    async def refs(self) -> dict[str, str]:
        return {info.get("name", ""): ref for ref, info in (await self.snapshot())["refs"].items()}

    async def act(self, body: dict[str, Any]) -> Any:
        return await self._ok(self.client.post(f"{self.base}/act", json={**body, "targetId": self.target_id}))

    async def click(self, ref: str) -> Any:
        return await self.act({"kind": "click", "ref": ref})

    async def batch(self, ref: str) -> Any:
        return await self.act({"kind": "batch", "actions": [{"kind": "type", "ref": ref, "text": t} for t in _texts()]})


class InProcess:
    def __init__(self, engine: ControlEngine, target_id: str) -> None:
        self.engine, self.target_id = engine, target_id

    async def snapshot(self) -> Any:
        return await call(self.engine, "GET", "/snapshot", format="ai", targetId=self.target_id)

    async def refs(self) -> dict[str, str]:
        return {info.get("name", ""): ref for ref, info in (await self.snapshot())["refs"].items()}

    async def click(self, ref: str) -> Any:
        return await call(self.engine, "POST", "/act", {"kind": "click", "ref": ref, "targetId": self.target_id})

    async def batch(self, ref: str) -> Any:
        actions = [{"kind": "type", "ref": ref, "text": t} for t in _texts()]
        return await call(
            self.engine, "POST", "/act", {"kind": "batch", "actions": actions, "targetId": self.target_id}
        )


async def timed(operation: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await operation()
    return (time.perf_counter() - started) * 1000


async def run_operation(name: str, side: Side) -> float:
    """One timed operation; the refs it needs are taken first, untimed."""
    if name == "snapshot":
        return await timed(side.snapshot)
    if name == "act click":
        go = (await side.refs())["Go"]
        return await timed(lambda: side.click(go))
    field = (await side.refs())["Name"]
    return await timed(lambda: side.batch(field))


OPERATIONS = ("snapshot", "act click", f"batch x{BATCH_SIZE}")


async def measure(sides: dict[str, Side], iterations: int, warmup: int = 2) -> dict[str, dict[str, list[float]]]:
    samples: dict[str, dict[str, list[float]]] = {name: {side: [] for side in sides} for name in OPERATIONS}
    order = list(sides)
    for iteration in range(warmup + iterations):
        for name in OPERATIONS:
            for side in order[iteration % len(order) :] + order[: iteration % len(order)]:
                took = await run_operation(name, sides[side])
                if iteration >= warmup:
                    samples[name][side].append(took)
    return samples


def devtools_port(server: ServerProcess) -> int:
    """The raw browser's own DevTools port, from its Chromium command line (the only browser of this server)."""
    for process in server.children():
        for arg in process.cmdline():
            if arg.startswith("--remote-debugging-port="):
                return int(arg.split("=", 1)[1])
    raise RuntimeError("no Chromium with a DevTools port among the server's processes")


async def form_page(browser: Browser, form: str) -> Page:
    context = browser.contexts[0]
    await asyncio.to_thread(wait_until, lambda: any(p.url == form for p in context.pages), 30, what="the form tab")
    return next(p for p in context.pages if p.url == form)


async def bench(iterations: int) -> dict[str, dict[str, list[float]]]:
    with (
        served({"API_KEY": API_KEY, "PREWARM_SLOTS": "0", "MAX_CONCURRENT_SESSIONS": "1"}) as (server, _fake),
        serve_sites() as sites,
        tempfile.TemporaryDirectory(prefix="control-bench-") as scratch_dir,
    ):
        headers = {"Authorization": f"Bearer {API_KEY}"}
        async with httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=60) as client:
            created = (await client.post("/v3/browsers", json={})).raise_for_status().json()
            base = f"/v3/browsers/{created['id']}/browser"
            form = f"{sites.main}/form"
            opened = (await client.post(f"{base}/navigate", json={"url": form})).raise_for_status().json()
            target_id = opened["targetId"]
            scratch = Path(scratch_dir)
            folders = BrowserFolders(uploads=scratch / "uploads", downloads=scratch / "downloads").ensure()
            port_url = f"http://127.0.0.1:{devtools_port(server)}"
            target = ControlTarget(
                cdp_url=port_url, folders=folders, files_dir=scratch, file_url=lambda area, name: f"{area}/{name}"
            )
            engine = ControlEngine(target)
            async with async_playwright() as playwright:
                proxied = await playwright.chromium.connect_over_cdp(created["cdpUrl"])
                direct = await playwright.chromium.connect_over_cdp(port_url)
                try:
                    await engine.attach()
                    sides: dict[str, Side] = {
                        "bare": Bare(await form_page(proxied, form)),
                        "HTTP": Http(client, base, target_id),
                        "bare, port": Bare(await form_page(direct, form)),
                        "in-process": InProcess(engine, target_id),
                    }
                    return await measure(sides, iterations)
                finally:
                    await engine.aclose()
                    await direct.close()
                    await proxied.close()
                    await client.patch(f"/v3/browsers/{created['id']}", json={"action": "stop"})


def report(samples: dict[str, dict[str, list[float]]], markdown: bool) -> None:
    lines = [
        "| operation (median ms) | bare Playwright, cdpUrl | HTTP API | HTTP / bare | bare Playwright, DevTools port "
        "| in-process handlers, same port | HTTP / bare on the port |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, sides in samples.items():
        bare, http, port, inproc = (statistics.median(sides[side]) for side in SIDES)
        verdict = "" if http / bare <= GOAL else " ✗"
        lines.append(
            f"| {name} | {bare:.1f} | {http:.1f} | **{http / bare:.2f}**{verdict} | {port:.1f} | {inproc:.1f} "
            f"| {http / port:.2f} |"
        )
    count = len(samples[OPERATIONS[0]]["bare"])
    text = "\n".join(lines) + f"\n\niterations: {count} per side; goal: HTTP / bare ≤ {GOAL} at the median"
    print(text if markdown else text.replace("|", " "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    report(asyncio.run(bench(args.iterations)), args.markdown)


if __name__ == "__main__":
    main()
