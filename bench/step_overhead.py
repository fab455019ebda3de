"""Per-step overhead: our agent run next to a stock browser-use Agent, same pages, same fake model, same run.

    .venv/bin/python bench/step_overhead.py [--iterations 3] [--markdown]

Both sides drive the same Chromium build on a fresh display slot, against the same local fixture shop, with the
same scripted seven-step walk (open the shop, open three product pages and go back twice, then ``done``)
answered by the fake provider with zero latency over HTTP (Anthropic Messages API, ``claude-sonnet-5``).

* **stock**: ``browser_use.Agent`` with its defaults (``ChatAnthropic`` pointed at the fake), connected with
  ``BrowserSession(cdp_url=...)``.
* **ours**: ``openbrowse.sessions.run.AgentEngine`` exactly as a session runs it (metered client, goal pre-flight,
  card-carrying schema, our prompt, feed rows and per-step persistence into a real SQLite database).

Reported per side: wall time per step (turn time divided by steps; ours starts counting after its goal
pre-flight, which runs while the browser starts), browser-use's own step duration, and bytes sent to the model
per agent step (request bodies as received by the fake). Ratios are ours / stock. Iterations alternate which side
goes first. A run counts only once the shop served its three product pages to that side (not only because the
fake's script reached ``done``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.bootstrap import prepare_process_environment

# browser-use leaves scratch dirs in the temp dir (one at import time): keep them all in one folder we delete.
SCRATCH = Path(tempfile.mkdtemp(prefix="step-bench-"))
prepare_process_environment(SCRATCH)

from browser_use import Agent, BrowserSession, ChatAnthropic  # noqa: E402

from openbrowse.config import Settings  # noqa: E402
from openbrowse.domain.ids import SessionId  # noqa: E402
from openbrowse.domain.sessions import SessionRecord, SessionStatus  # noqa: E402
from openbrowse.sessions.run import AgentEngine  # noqa: E402
from openbrowse.slots.pool import SlotPool  # noqa: E402
from openbrowse.store.db import Database  # noqa: E402
from openbrowse.store.feed import FeedRepo  # noqa: E402
from openbrowse.store.sessions import SessionRepo  # noqa: E402
from tests.fakes.llm_script import click_on, done, navigate  # noqa: E402
from tests.fakes.llm_server import FakeProvider  # noqa: E402
from tests.fakes.site import FixtureSites  # noqa: E402
from tests.support.slot_range import free_slot_base, release_slot_base  # noqa: E402

MODEL = "claude-sonnet-5"
PRODUCT_PAGES = {"/product/blue", "/product/red", "/product/green"}


def check_walked(site: FixtureSites, since: int, side: str) -> None:
    """Raise unless the shop served the walk's three product pages since its hit ``since``."""
    served = {path for _, path in site.state.hits[since:]}
    if not PRODUCT_PAGES.issubset(served):
        raise RuntimeError(f"{side}: the shop never served {sorted(PRODUCT_PAGES - served)}")


def walk(site: str, *, cards: bool) -> list[Any]:
    return [
        navigate(f"{site}/", cards=cards),
        click_on("Blue Widget", cards=cards),
        click_on("Back to shop", cards=cards),
        click_on("Red Gadget", cards=cards),
        click_on("Back to shop", cards=cards),
        click_on("Green Gizmo", cards=cards),
        done("Visited three products.", cards=cards),
    ]


@dataclass
class Sample:
    wall_per_step: float
    agent_step_seconds: float
    bytes_per_step: float
    steps: int


@dataclass
class Results:
    stock: list[Sample] = field(default_factory=list)
    ours: list[Sample] = field(default_factory=list)


def bytes_per_agent_step(fake: FakeProvider, marker: str) -> float:
    sizes = [len(r.raw_body) for r in fake.requests_matching(marker) if r.is_agent_step]
    return sum(sizes) / max(1, len(sizes))


async def run_stock(pool: SlotPool, fake: FakeProvider, site: FixtureSites, scratch: Path, n: int) -> Sample:
    marker = f"STOCK-{n}"
    fake.script(marker, walk(site.url, cards=False), when=lambda r: r.is_agent_step)
    since = len(site.state.hits)
    async with pool.acquire(marker) as lease:
        slot = await lease.start_browser()
        browser = BrowserSession(
            cdp_url=slot.cdp_url,
            headless=False,
            user_data_dir=str(scratch / f"stock-{n}"),
            downloads_path=str(scratch / f"stock-dl-{n}"),
        )
        llm = ChatAnthropic(model=MODEL, api_key="fake", base_url=fake.anthropic_base_url, max_retries=0)
        agent: Agent[Any, Any] = Agent(
            task=f"{marker} Visit three products on {site.url}/ and finish.",
            llm=llm,
            browser_session=browser,
            enable_signal_handler=False,
            file_system_path=str(scratch / f"stock-files-{n}"),
        )
        started = time.perf_counter()
        history = await agent.run(max_steps=20)
        elapsed = time.perf_counter() - started
        await browser.kill()
    check_walked(site, since, "stock browser-use")
    # Count agent steps only: browser-use records its initial navigation (step 0) as a history item too,
    # and the product's stepCount does not count it either.
    agent_items = [h for h in history.history if h.metadata and h.metadata.step_number >= 1]
    steps = len(agent_items)
    durations = [h.metadata.duration_seconds for h in agent_items if h.metadata]
    return Sample(elapsed / steps, statistics.mean(durations), bytes_per_agent_step(fake, marker), steps)


async def run_ours(
    pool: SlotPool, fake: FakeProvider, site: FixtureSites, settings: Settings, db: Database, n: int
) -> Sample:
    marker = f"OURS-{n}"
    fake.script(marker, walk(site.url, cards=True), when=lambda r: r.is_agent_step)
    since = len(site.state.hits)
    sessions, feed = SessionRepo(db), FeedRepo(db)
    now = datetime.now(UTC)
    task = f"{marker} Visit three products on {site.url}/ and finish."
    record = SessionRecord(
        id=SessionId(f"bench-{n}"), status=SessionStatus.RUNNING, model=MODEL, llm_model=MODEL,
        reasoning_effort="none", created_at=now, updated_at=now, task=task,
    )  # fmt: skip
    await sessions.insert(record)
    engine = AgentEngine(settings, record, sessions, feed)
    async with pool.acquire(marker) as lease:
        await engine.launch(lease.start_browser(), task)
        started = time.perf_counter()
        outcome = await engine.run_turn(task)
        elapsed = time.perf_counter() - started
        await engine.close()
    assert outcome.is_task_successful, outcome.summary
    check_walked(site, since, "ours")
    stored = await sessions.get(record.id)
    steps = stored.step_count
    rows = [m for m in await feed.all(record.id) if m.type in {"browser_action", "result"}]
    durations = [json.loads(m.data)["durationSeconds"] for m in rows]
    return Sample(elapsed / steps, statistics.mean(durations), bytes_per_agent_step(fake, marker), steps)


def report(results: Results, markdown: bool) -> None:
    def med(samples: list[Sample], attr: str) -> float:
        return float(statistics.median(getattr(s, attr) for s in samples))

    rows = [
        ("wall time per step (s)", "wall_per_step", "{:.3f}"),
        ("browser-use step duration (s)", "agent_step_seconds", "{:.3f}"),
        ("bytes sent per agent step", "bytes_per_step", "{:,.0f}"),
    ]
    lines = ["| measure (median) | stock browser-use | ours | ours / stock |", "|---|---|---|---|"]
    for label, attr, fmt in rows:
        stock, ours = med(results.stock, attr), med(results.ours, attr)
        lines.append(f"| {label} | {fmt.format(stock)} | {fmt.format(ours)} | {ours / stock:.2f} |")
    steps = f"steps per run: stock {results.stock[0].steps}, ours {results.ours[0].steps}"
    text = "\n".join(lines) + "\n\n" + steps
    print(text if markdown else text.replace("|", " "))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with FixtureSites() as site, FakeProvider() as fake:
        scratch = SCRATCH
        base = free_slot_base(2)  # locked like the tests' ranges, so nothing else on the machine takes it meanwhile
        settings = Settings(
            OPENBROWSE_HOME=scratch, ANTHROPIC_API_KEY="fake", ANTHROPIC_BASE_URL=fake.anthropic_base_url,
            SLOT_BASE_INDEX=base,
            NETWORK_POLICY="open",  # the fixture shop is on loopback, which the default policy refuses
        )  # fmt: skip
        results = Results()
        try:
            async with Database(settings.db_path) as db, SlotPool(settings, base_index=base, size=1) as pool:
                for n in range(args.iterations):
                    if n % 2 == 0:
                        results.stock.append(await run_stock(pool, fake, site, scratch, n))
                    results.ours.append(await run_ours(pool, fake, site, settings, db, n))
                    if n % 2 == 1:
                        results.stock.append(await run_stock(pool, fake, site, scratch, n))
        finally:
            release_slot_base(base)
    report(results, args.markdown)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
