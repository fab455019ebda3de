"""Lean state (spec §10.5): bytes sent to the model on a lean step against a full step, in one real run.

    .venv/bin/python bench/lean_state.py [--iterations 3] [--markdown]

Our ``AgentEngine`` runs exactly as a session runs it, on a fresh display slot, against the local fixture shop,
answered by the fake provider with zero latency (Anthropic Messages API, ``claude-sonnet-5``). The scripted
walk is: ``wait`` on the shop (full state), ``remember`` (full state), ``recall`` (lean: the previous step only
did store work), ``click`` on a product by the index noted two states earlier (lean again: ``recall`` is store
work too), then ``done`` on the product page (full state).

Measured per agent request as the fake received it:

* **state message**: the last user message of the request (browser-use's per-step state: the DOM element list,
  page details and the screenshot, or the stub) serialised as JSON — what lean state is about;
* **whole request**: the full request body (system prompt, history and tools included), for context.

Lean steps are the requests whose state carries the CODE MODE note; full steps are the others. Reported:
medians over all iterations and the lean / full ratio (goal: at most 0.1 for the state message). A run counts only
once the shop served the product page the click opens (not only because the fake's script reached ``done``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.bootstrap import prepare_process_environment

SCRATCH = Path(tempfile.mkdtemp(prefix="lean-bench-"))
prepare_process_environment(SCRATCH)

from openbrowse.config import Settings  # noqa: E402
from openbrowse.domain.ids import SessionId  # noqa: E402
from openbrowse.domain.sessions import SessionRecord, SessionStatus  # noqa: E402
from openbrowse.sessions.run import AgentEngine  # noqa: E402
from openbrowse.slots.pool import SlotPool  # noqa: E402
from openbrowse.store.db import Database  # noqa: E402
from openbrowse.store.feed import FeedRepo  # noqa: E402
from openbrowse.store.sessions import SessionRepo  # noqa: E402
from tests.fakes.llm_request import LLMRequest, find_index  # noqa: E402
from tests.fakes.llm_script import agent_step, done  # noqa: E402
from tests.fakes.llm_server import FakeProvider  # noqa: E402
from tests.fakes.site import FixtureSites  # noqa: E402
from tests.support.slot_range import free_slot_base, release_slot_base  # noqa: E402

MODEL = "claude-sonnet-5"


def walk() -> list[Any]:
    noted: dict[str, int] = {}

    def wait_and_note(request: LLMRequest) -> dict[str, Any]:
        noted["index"] = find_index(request, "Blue Widget")
        return agent_step({"wait": {"seconds": 1}})

    def click_noted(_request: LLMRequest) -> dict[str, Any]:
        return agent_step({"click": {"index": noted["index"]}})

    return [
        wait_and_note,
        agent_step({"remember": {"key": "product", "value": "Blue Widget"}}),
        agent_step({"recall": {"key": "product"}}),
        click_noted,
        done("Opened the Blue Widget."),
    ]


@dataclass
class Sizes:
    lean_state: list[int] = field(default_factory=list)
    full_state: list[int] = field(default_factory=list)
    lean_request: list[int] = field(default_factory=list)
    full_request: list[int] = field(default_factory=list)


def state_message_bytes(request: LLMRequest) -> int:
    messages = (request.body or {}).get("messages") or (request.body or {}).get("input") or []
    last_user = next(m for m in reversed(messages) if m.get("role") == "user")
    return len(json.dumps(last_user, ensure_ascii=False).encode())


def measure(fake: FakeProvider, marker: str, sizes: Sizes) -> None:
    for request in fake.requests_matching(marker):
        if not request.is_agent_step:
            continue
        lean = "CODE MODE" in (request.browser_state or "")
        (sizes.lean_state if lean else sizes.full_state).append(state_message_bytes(request))
        (sizes.lean_request if lean else sizes.full_request).append(len(request.raw_body))


async def run_once(
    pool: SlotPool, fake: FakeProvider, site: FixtureSites, settings: Settings, db: Database, n: int, sizes: Sizes
) -> None:
    marker = f"LEAN-{n}"
    fake.script(marker, walk(), when=lambda r: r.is_agent_step)
    since = len(site.state.hits)
    sessions, feed = SessionRepo(db), FeedRepo(db)
    now = datetime.now(UTC)
    task = f"{marker} Open {site.url}/ and open the Blue Widget."
    record = SessionRecord(
        id=SessionId(f"lean-{n}"), status=SessionStatus.RUNNING, model=MODEL, llm_model=MODEL,
        reasoning_effort="none", created_at=now, updated_at=now, task=task,
    )  # fmt: skip
    await sessions.insert(record)
    engine = AgentEngine(settings, record, sessions, feed)
    async with pool.acquire(marker) as lease:
        await engine.launch(lease.start_browser(), task)
        outcome = await engine.run_turn(task)
        await engine.close()
    assert outcome.is_task_successful, outcome.summary
    if "/product/blue" not in {path for _, path in site.state.hits[since:]}:
        raise RuntimeError("the click on the noted index never opened the Blue Widget's page")
    measure(fake, marker, sizes)


def report(sizes: Sizes, markdown: bool) -> None:
    rows = [
        ("state message (bytes)", sizes.lean_state, sizes.full_state),
        ("whole request (bytes)", sizes.lean_request, sizes.full_request),
    ]
    lines = ["| measure (median) | full step | lean step | lean / full |", "|---|---|---|---|"]
    for label, lean, full in rows:
        lean_median, full_median = statistics.median(lean), statistics.median(full)
        lines.append(f"| {label} | {full_median:,.0f} | {lean_median:,.0f} | {lean_median / full_median:.3f} |")
    counts = f"requests measured: {len(sizes.full_state)} full, {len(sizes.lean_state)} lean"
    text = "\n".join(lines) + "\n\n" + counts
    print(text if markdown else text.replace("|", " "))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    sizes = Sizes()
    with FixtureSites() as site, FakeProvider() as fake:
        base = free_slot_base(2)  # locked like the tests' ranges, so nothing else on the machine takes it meanwhile
        settings = Settings(
            OPENBROWSE_HOME=SCRATCH, ANTHROPIC_API_KEY="fake", ANTHROPIC_BASE_URL=fake.anthropic_base_url,
            SLOT_BASE_INDEX=base,
            NETWORK_POLICY="open",  # the fixture shop is on loopback, which the default policy refuses
        )  # fmt: skip
        try:
            async with Database(settings.db_path) as db, SlotPool(settings, base_index=base, size=1) as pool:
                for n in range(args.iterations):
                    await run_once(pool, fake, site, settings, db, n, sizes)
        finally:
            release_slot_base(base)
    report(sizes, args.markdown)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    finally:
        shutil.rmtree(SCRATCH, ignore_errors=True)
