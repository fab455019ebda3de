"""MCP browser tools: what one more owner costs in the shared browser, against a raw browser on its own slot.

    .venv/bin/python bench/mcp_shared.py [--iterations 5] [--markdown]

One real server (``python -m openbrowse serve``, ``PREWARM_SLOTS=0`` so no spare skews the memory figures, as many
slots as iterations so every raw browser gets one). Side by side, in the same run:

* **shared browser, one context per owner** (spec §23.3): a first MCP session starts the shared browser and loads
  the fixture page (untimed). Then ``--iterations`` new MCP sessions (owners) are added one by one; each is timed
  from its first tool call to its answer: ``list_pages`` (the owner's context and first page are created) and then
  ``navigate_page`` to the fixture page (loaded). The PSS of the server's descendant processes (the shared
  Chromium's process tree and its Playwright driver) is taken before the first added owner and after the last;
  the difference divided by the owners added is the **PSS per added owner**, also split by kind of process
  (``renderer``, ``browser``, ``gpu-process``…) to show where it goes.
* **raw browser on its own slot** (``POST /v3/browsers``): ``--iterations`` (at most 3) raw browsers are added one
  by one; each is timed from the POST to its 201 (the browser is up with its first tab) and then through
  ``connect_over_cdp`` and ``page.goto`` of the same fixture page (loaded). PSS as above, per added browser.

Goals (issue 22): PSS per added owner ≤ 40 MiB; time to a first page for a new owner ≤ 150 ms (p50).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import httpx2
import psutil
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from playwright.async_api import async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import MiB, served
from tests.e2e.browser_support import fixture_site
from tests.support.server import ServerProcess

API_KEY = "bench-mcp-key"
GOALS = {"pss": 40.0, "first_page": 150.0}
RAW_SLOTS = 3
SETTLE_S = 1.0  # let freshly loaded renderers finish their first layout before memory is read


@dataclass(frozen=True)
class Memory:
    pss: float
    uss: float

    def __sub__(self, other: Memory) -> Memory:
        return Memory(self.pss - other.pss, self.uss - other.uss)

    def per(self, count: int) -> Memory:
        return Memory(self.pss / count, self.uss / count)


Kinds = dict[str, tuple[int, float]]
"""Process count and PSS (MiB) by :func:`process_kind`."""


def process_kind(proc: psutil.Process) -> str:
    """Chromium's own name for a process (``renderer``, ``gpu-process``, a utility's service), else the program's."""
    line = proc.cmdline()
    for arg in line:
        if arg.startswith("--utility-sub-type="):
            return arg.split("=", 1)[1].split(".")[0]
    kind = next((arg.removeprefix("--type=") for arg in line if arg.startswith("--type=")), None)
    return kind or ("browser" if proc.name() == "chromium" else proc.name())


def descendants_memory(server: ServerProcess) -> tuple[Memory, Kinds]:
    """PSS and USS (MiB) of the server's descendant processes, and the PSS by kind, from one reading of each; USS
    is what a process alone holds, which moves far less than PSS with whatever else runs on the machine."""
    pss = uss = 0
    kinds: Kinds = {}
    for proc in server.children():
        with contextlib.suppress(psutil.Error):
            kind, info = process_kind(proc), proc.memory_full_info()
            pss, uss = pss + info.pss, uss + info.uss
            count, total = kinds.get(kind, (0, 0.0))
            kinds[kind] = (count + 1, total + info.pss / MiB)
    return Memory(pss / MiB, uss / MiB), kinds


def per_kind(before: Kinds, after: Kinds, count: int) -> str:
    """What one added owner cost, by kind of process: ``renderer +15.2 MiB (+1.0 processes)``; moves under 1 MiB
    are left out."""
    parts = []
    for kind in sorted(set(before) | set(after)):
        (was_n, was_pss), (now_n, now_pss) = before.get(kind, (0, 0.0)), after.get(kind, (0, 0.0))
        processes, pss = (now_n - was_n) / count, (now_pss - was_pss) / count
        if processes or abs(pss) >= 1:
            parts.append(f"{kind} {pss:+.1f} MiB" + (f" ({processes:+.1f} processes)" if processes else ""))
    return "; ".join(parts)


@dataclass
class Result:
    memory: Memory
    first_page: list[float]
    loaded: list[float]
    repeat: list[float] = field(default_factory=list)
    """A later ``list_pages`` of the same owner: the MCP round trip alone, for comparison."""
    breakdown: str = ""
    """PSS per added one by kind of process (:func:`per_kind`)."""


async def open_session(stack: AsyncExitStack, server: ServerProcess) -> ClientSession:
    """An MCP session that stays open (its owner context alive) until ``stack`` closes."""
    http = await stack.enter_async_context(
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}, timeout=httpx2.Timeout(30, read=90))
    )
    read, write = await stack.enter_async_context(streamable_http_client(f"{server.base_url}/v3/mcp", http_client=http))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session


async def tool(session: ClientSession, name: str, **arguments: object) -> float:
    started = time.perf_counter()
    result = await session.call_tool(name, arguments)
    if result.is_error:
        raise RuntimeError(f"{name} failed: {result.content}")
    return (time.perf_counter() - started) * 1000


async def shared_owners(server: ServerProcess, page_url: str, owners: int) -> Result:
    first_page: list[float] = []
    loaded: list[float] = []
    repeat: list[float] = []
    async with AsyncExitStack() as stack:
        warm = await open_session(stack, server)
        await tool(warm, "navigate_page", type="url", url=page_url)
        await asyncio.sleep(SETTLE_S)
        before, kinds_before = descendants_memory(server)
        for _ in range(owners):
            session = await open_session(stack, server)
            first_page.append(await tool(session, "list_pages"))
            loaded.append(first_page[-1] + await tool(session, "navigate_page", type="url", url=page_url))
            repeat.append(await tool(session, "list_pages"))
        await asyncio.sleep(SETTLE_S)
        after, kinds_after = descendants_memory(server)
    return Result((after - before).per(owners), first_page, loaded, repeat, per_kind(kinds_before, kinds_after, owners))


async def raw_browsers(server: ServerProcess, page_url: str, count: int) -> Result:
    first_page: list[float] = []
    loaded: list[float] = []
    headers = {"Authorization": f"Bearer {API_KEY}"}
    async with (
        httpx.AsyncClient(base_url=server.base_url, headers=headers, timeout=60) as client,
        async_playwright() as playwright,
    ):
        before, _ = descendants_memory(server)
        created: list[str] = []
        connected = []
        try:
            for _ in range(count):
                started = time.perf_counter()
                response = await client.post("/v3/browsers", json={})
                response.raise_for_status()
                first_page.append((time.perf_counter() - started) * 1000)
                body = response.json()
                created.append(body["id"])
                browser = await playwright.chromium.connect_over_cdp(body["cdpUrl"])
                connected.append(browser)
                context = browser.contexts[0] if browser.contexts else await browser.new_context()
                page = context.pages[0] if context.pages else await context.new_page()
                await page.goto(page_url, wait_until="load")
                loaded.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(SETTLE_S)
            after, _ = descendants_memory(server)
        finally:
            for browser in connected:
                with contextlib.suppress(Exception):
                    await browser.close()
            for browser_id in created:
                await client.patch(f"/v3/browsers/{browser_id}", json={"action": "stop"})
    return Result((after - before).per(count), first_page, loaded)


def p50(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(rows: dict[str, Result], iterations: int, markdown: bool) -> None:
    lines = [
        "| added per iteration | PSS / USS per added one (MiB) | first page p50 / max (ms) | page loaded p50 / max (ms)"
        " | goal |",
        "|---|---|---|---|---|",
    ]
    for name, result in rows.items():
        memory, first, loaded = result.memory, result.first_page, result.loaded
        goal = f"PSS ≤ {GOALS['pss']:.0f} MiB, first page ≤ {GOALS['first_page']:.0f} ms" if "owner" in name else "—"
        timing = f"{p50(first):.0f} / {max(first):.0f} | {p50(loaded):.0f} / {max(loaded):.0f}"
        lines.append(f"| {name} | {memory.pss:.1f} / {memory.uss:.1f} | {timing} | {goal} |")
    repeat = [value for result in rows.values() for value in result.repeat]
    lines.append(
        f"\n{iterations} owners added, raw browsers up to {RAW_SLOTS}. First page: shared = the owner's first call "
        "(its context and first page, through /v3/mcp); raw = POST /v3/browsers until its 201. Page loaded: from "
        f"the same start through a fixture page's load. A later list_pages of the same owner (the MCP round trip "
        f"alone): p50 {p50(repeat):.0f} ms."
    )
    for name, result in rows.items():
        if result.breakdown:
            lines.append(f"\nPSS per added one by process ({name}): {result.breakdown}.")
    text = "\n".join(lines)
    print(text if markdown else text.replace("|", " "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    # The bench server's slot range holds 4 indexes: at most 3 raw browsers, and the shared browser's slot after them.
    raw_count = min(max(1, args.iterations), RAW_SLOTS)
    env = {"API_KEY": API_KEY, "PREWARM_SLOTS": "0", "MAX_CONCURRENT_SESSIONS": str(RAW_SLOTS)}
    with fixture_site() as site, served(env) as (server, _fake):
        page_url = f"{site.url}/hello"
        rows = {
            "owner context in the shared browser (MCP)": asyncio.run(shared_owners(server, page_url, args.iterations)),
            "raw browser on its own slot": asyncio.run(raw_browsers(server, page_url, raw_count)),
        }
    report(rows, args.iterations, args.markdown)


if __name__ == "__main__":
    main()
