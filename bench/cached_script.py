"""Cached scripts (spec §27.3): a cached run of the fixture shop task against the agent's run of it.

    .venv/bin/python bench/cached_script.py [--iterations 3] [--markdown]

A real server (``tests/support/server.py``) with the fake provider answering at zero latency (OpenAI Responses
API, ``gpt-5.6-terra``) and the cached-script fixture shop (``tests/e2e/cached_shop.py``). Each iteration runs the
task "find the price of @{{product}}" on one workspace: first by the agent (``cacheScript: false``: the scripted
four steps, the goal pre-flight and the reviewer), then, after one agent run with the cache on has saved the
script, from the cache with another product. Measured per session: the wall time from the POST to the session's
end (slot start included on both sides) and the turn itself (from the ``planning`` row to the last one), and
the model calls the fake received for it. Every model call takes ``--latency`` seconds (default 1.0, fast for a
real model; 0 shows the agent side's floor); the cached side makes none.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from tests.e2e.cached_shop import PRICES, SEARCH_BOX, SEARCH_BUTTON, ShopLayout, cached_shop_app
from tests.fakes.llm_defaults import default_reply
from tests.fakes.llm_reply import Reply
from tests.fakes.llm_request import LLMRequest
from tests.fakes.llm_script import click_on, done, navigate, type_into
from tests.fakes.llm_server import FakeProvider
from tests.support.asgi_thread import ThreadedServer
from tests.support.server import ServerProcess

TERMINAL = {"stopped", "error", "idle", "timed_out"}


def _time(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(message["createdAt"]).timestamp()


def run(server: ServerProcess, task: str, workspace: str, cache: bool | None) -> tuple[float, float, dict[str, Any]]:
    started = time.monotonic()
    body = {"task": task, "workspaceId": workspace, "cacheScript": cache}
    created = httpx.post(f"{server.v3}/sessions", json=body, timeout=30).json()
    deadline = time.monotonic() + 300
    while (record := httpx.get(f"{server.v3}/sessions/{created['id']}", timeout=30).json())["status"] not in TERMINAL:
        if time.monotonic() > deadline:
            raise TimeoutError(created["id"])
        time.sleep(0.05)
    wall = time.monotonic() - started
    feed = httpx.get(f"{server.v3}/sessions/{created['id']}/messages", params={"limit": 1000}, timeout=30).json()
    messages = feed["messages"]
    start = next(_time(m) for m in messages if m["type"] == "planning")  # the slot is up: the turn begins
    return wall, max(_time(m) for m in messages) - start, record


def slowed(item: Any, latency: float) -> Any:
    """``item`` (a reply or a callable choosing one) answered after ``latency`` seconds, as a real model would."""

    def choose(request: LLMRequest) -> Reply:
        return Reply(content=item(request) if callable(item) else item, delay=latency)

    return choose


def one_iteration(
    server: ServerProcess, fake: FakeProvider, shop: ThreadedServer, n: int, latency: float
) -> dict[str, float]:
    workspace = httpx.post(f"{server.v3}/workspaces", json={"name": f"bench-{n}"}, timeout=30).json()["id"]
    marker = f"BENCH-CACHE-{n}-{time.monotonic_ns()}"

    def look_up(product: str) -> list[Any]:
        steps = [navigate(f"{shop.url}/"), type_into(SEARCH_BOX, product), click_on(SEARCH_BUTTON)]
        return [slowed(step, latency) for step in [*steps, done(f"{product} costs {PRICES[product]}")]]

    fake.script(marker, [*look_up("Blue Widget"), *look_up("Green Gizmo")], when=lambda r: r.is_agent_step)

    def task(product: str) -> str:
        return f"{marker} Find the price of @{{{{{product}}}}} at {shop.url}/ and say what it costs"

    before = len(fake.requests_matching(marker))
    agent_wall, agent_turn, agent = run(server, task("Blue Widget"), workspace, False)
    agent_calls = len(fake.requests_matching(marker)) - before
    run(server, task("Green Gizmo"), workspace, None)  # the agent again, with the cache on: saves the script
    before = len(fake.requests_matching(marker))
    cached_wall, cached_turn, cached = run(server, task("Red Gadget"), workspace, None)
    cached_calls = len(fake.requests_matching(marker)) - before
    assert agent["isTaskSuccessful"], agent
    assert cached["output"] == "Red Gadget costs 17.50", cached
    return {
        "agent_wall": agent_wall,
        "agent_turn": agent_turn,
        "agent_calls": float(agent_calls),
        "cached_wall": cached_wall,
        "cached_turn": cached_turn,
        "cached_calls": float(cached_calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds a model call takes (0: at once)")
    args = parser.parse_args()
    with (
        FakeProvider() as fake,
        ThreadedServer(cached_shop_app(ShopLayout())) as shop,
        tempfile.TemporaryDirectory() as home,
    ):
        fake.default(lambda request: Reply(content=default_reply(request), delay=args.latency))
        server = ServerProcess(home=Path(home), env={**fake.env(), "OPENAI_API_STYLE": "responses"}).start()
        try:
            samples = [one_iteration(server, fake, shop, n, args.latency) for n in range(args.iterations)]
        finally:
            server.stop()

    def median(key: str) -> float:
        return statistics.median(sample[key] for sample in samples)

    rows = [
        ("model latency (s per call)", f"{args.latency:.1f}"),
        ("agent run: POST to end (s, median)", f"{median('agent_wall'):.2f}"),
        ("cached run: POST to end (s, median)", f"{median('cached_wall'):.2f}"),
        ("ratio, POST to end", f"{median('agent_wall') / median('cached_wall'):.1f}×"),
        ("agent run: the turn (s, median)", f"{median('agent_turn'):.2f}"),
        ("cached run: the turn (s, median)", f"{median('cached_turn'):.2f}"),
        ("ratio, the turn", f"{median('agent_turn') / max(median('cached_turn'), 1e-3):.1f}×"),
        ("model calls: agent run / cached run (max)", f"{max(s['agent_calls'] for s in samples):.0f} / "
         f"{max(s['cached_calls'] for s in samples):.0f}"),
    ]  # fmt: skip
    if args.markdown:
        print("| measure | value |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
    else:
        for name, value in rows:
            print(f"{name:45} {value}")


if __name__ == "__main__":
    main()
