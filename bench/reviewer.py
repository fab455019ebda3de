"""Reviewer overhead: how many LLM calls and how much wall time the judge adds to a successful run.

    .venv/bin/python bench/reviewer.py [--iterations 5] [--markdown]

A real server (``tests/support/server.py``) runs sessions against the local fixture shop with the fake provider
answering at zero latency (OpenAI Responses API, ``gpt-5.6-terra``). Each session is the same scripted
successful walk (open the shop, open two product pages, ``done``); the reviewer passes it in one round.

Measured per session: the turn's wall time from the ``planning`` row to the ``completion`` row (server-side feed
timestamps); the reviewer's own time as the server logs it (``Reviewer call took X s``: building the prompt, the
judge call through the metered client, parsing the verdict); and from the fake, the judge requests per review
round.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from tests.fakes.llm_script import click_on, done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess

TERMINAL = {"stopped", "error", "idle", "timed_out"}
REVIEW_LOG = re.compile(r"Reviewer call took ([0-9.]+) s")


def _time(message: dict[str, Any]) -> float:
    return datetime.fromisoformat(message["createdAt"]).timestamp()


def _data(message: dict[str, Any]) -> dict[str, Any]:
    return json.loads(message["data"]) if message["data"] else {}


def one_session(server: ServerProcess, fake: FakeProvider, site: FixtureSites, n: int) -> dict[str, float]:
    marker = f"BENCH-REVIEW-{n}-{time.monotonic_ns()}"
    fake.script(
        marker,
        [navigate(f"{site.url}/"), click_on("Blue Widget"), click_on("Back to shop"), done("Visited the shop.")],
        when=lambda r: r.is_agent_step,
    )
    created = httpx.post(f"{server.v3}/sessions", json={"task": f"{marker} Look at {site.url}/"}, timeout=30).json()
    deadline = time.monotonic() + 300
    while httpx.get(f"{server.v3}/sessions/{created['id']}", timeout=30).json()["status"] not in TERMINAL:
        if time.monotonic() > deadline:
            raise TimeoutError(created["id"])
        time.sleep(0.2)
    feed = httpx.get(f"{server.v3}/sessions/{created['id']}/messages", params={"limit": 1000}, timeout=30).json()
    messages = feed["messages"]
    start = next(_time(m) for m in messages if m["type"] == "planning")
    end = next(_time(m) for m in messages if m["type"] == "completion")
    reviews = [m for m in messages if m["type"] == "event" and _data(m).get("category") == "judge"]
    judge_requests = [r for r in fake.requests_matching(marker) if r.is_review]
    judge_calls = len(judge_requests)
    return {
        "turn": end - start,
        "review": 0.0,
        "rounds": float(len(reviews)),
        "judge_calls": float(judge_calls),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    with FakeProvider() as fake, FixtureSites() as site, tempfile.TemporaryDirectory() as home:
        server = ServerProcess(home=Path(home), env={**fake.env(), "OPENAI_API_STYLE": "responses"}).start()
        try:
            samples = [one_session(server, fake, site, n) for n in range(args.iterations)]
            calls = [float(m) for m in REVIEW_LOG.findall(server.log())]
            for sample, seconds in zip(samples, calls, strict=True):
                sample["review"] = seconds
        finally:
            server.stop()
    turn = statistics.median(s["turn"] for s in samples)
    review = statistics.median(s["review"] for s in samples)
    calls_per_round = max(s["judge_calls"] / max(1.0, s["rounds"]) for s in samples)
    rows = [
        ("turn wall time (s, median)", f"{turn:.3f}"),
        ("reviewer call, request to verdict (s, median)", f"{review:.3f}"),
        ("reviewer share of the turn", f"{100 * review / turn:.1f} %"),
        ("judge LLM calls per review round (max)", f"{calls_per_round:.0f}"),
    ]
    if args.markdown:
        print("| measure | value |\n|---|---|")
        for name, value in rows:
            print(f"| {name} | {value} |")
    else:
        for name, value in rows:
            print(f"{name:50} {value}")


if __name__ == "__main__":
    main()
