"""A burst of session creates against a one-slot server: the bounds hold and the control plane keeps answering.

    .venv/bin/python bench/burst.py [--iterations 5] [--count 2000] [--markdown]

Per iteration, a fresh server (``python -m openbrowse serve``, the zero-latency fake model,
``MAX_CONCURRENT_SESSIONS=1``, the default ``MAX_QUEUED`` of 1000) gets one session that holds its only slot (its
first agent step waits on a gate), so every later run has to queue. Then, in the same minute of the same machine:

* **idle**: a prober asks for ``/health``, the dashboard's front page ``/`` (rendered from the database) and
  ``GET /v3/sessions`` in turn, one request at a time, ``IDLE_ROUNDS`` rounds; latency p50 and p99 of each;
* **burst**: ``--count`` creates fired as fast as 64 connections allow, while the same prober keeps going until
  the last create is answered; the same figures, and their ratio to idle (the figure that matters on a shared
  two-core machine);
* **answers**: exactly ``MAX_QUEUED`` creates got 200 and every other one 429 (the held session is running, so
  each admitted one queues); no other status, no connection error, and no prober request failed or took longer
  than ``PROBE_TIMEOUT``.

Targets 127.0.0.1 only; the burst is bounded by ``--count`` and stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import MODEL, fmt, print_figures, served
from tests.fakes.llm_script import Gate, done, structured
from tests.support.server import ServerProcess

MAX_QUEUED = 1000
IDLE_ROUNDS = 150
CONNECTIONS = 64
PROBE_TIMEOUT = 10.0
NO_ANSWER: Counter[str] = Counter()
"""Why a create got no answer, across iterations (printed to stderr)."""
PROBED = {"/health": "/health", "dashboard": "/", "session list": "/v3/sessions?page_size=20"}


@dataclass
class Probe:
    """Latencies (ms) per probed path, and the failures seen."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: {name: [] for name in PROBED})
    failures: list[str] = field(default_factory=list)

    def percentile(self, name: str, share: float) -> float:
        values = sorted(self.latencies[name])
        return values[min(len(values) - 1, int(share * len(values)))]


@dataclass(frozen=True)
class Figures:
    idle: Probe
    burst: Probe
    statuses: Counter[int]
    burst_seconds: float


def probe_round(client: httpx.Client, base: str, into: Probe) -> None:
    for name, path in PROBED.items():
        started = time.perf_counter()
        try:
            status = client.get(base + path).status_code
        except httpx.HTTPError as exc:
            into.failures.append(f"{path}: {exc.__class__.__name__}")
            continue
        into.latencies[name].append((time.perf_counter() - started) * 1000)
        if status != 200:
            into.failures.append(f"{path}: {status}")


def probe_until(server: ServerProcess, stop: threading.Event, into: Probe) -> None:
    with httpx.Client(timeout=PROBE_TIMEOUT) as client:
        while not stop.is_set():
            probe_round(client, server.base_url, into)


async def fire(server: ServerProcess, count: int) -> Counter[int]:
    """``count`` creates as fast as the connections allow; the status of each (0: no answer)."""
    # idle connections closed by the client well before uvicorn's 5 s keep-alive timeout: never a request sent on
    # a connection the server is closing at that moment
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS, keepalive_expiry=1.0)
    statuses: Counter[int] = Counter()
    async with httpx.AsyncClient(base_url=server.v3, timeout=60, limits=limits) as client:
        semaphore = asyncio.Semaphore(CONNECTIONS)

        async def create(index: int) -> None:
            async with semaphore:
                try:
                    answer = await client.post("/sessions", json={"task": f"burst {index}", "model": MODEL})
                    statuses[answer.status_code] += 1
                except httpx.HTTPError as exc:
                    statuses[0] += 1
                    NO_ANSWER[f"{exc.__class__.__name__}: {exc}"[:120]] += 1

        await asyncio.gather(*(create(index) for index in range(count)))
    return statuses


def iteration(count: int) -> Figures:
    with served({"MAX_CONCURRENT_SESSIONS": "1", "PREWARM_SLOTS": "0", "MAX_QUEUED": str(MAX_QUEUED)}) as (
        server,
        fake,
    ):
        gate = Gate()
        marker = f"HOLD-{uuid.uuid4().hex[:8]}"
        fake.script(marker, [structured(done("held"), gate=gate)], when=lambda r: r.is_agent_step)
        holder = httpx.post(f"{server.v3}/sessions", json={"task": f"{marker} hold the slot", "model": MODEL})
        holder.raise_for_status()
        if not gate.wait_entered(120):
            raise TimeoutError(f"the holding session never reached its first step:\n{server.log()[-3000:]}")
        idle = Probe()
        with httpx.Client(timeout=PROBE_TIMEOUT) as client:
            for _ in range(IDLE_ROUNDS):
                probe_round(client, server.base_url, idle)
        burst = Probe()
        stop = threading.Event()
        prober = threading.Thread(target=probe_until, args=(server, stop, burst))
        prober.start()
        started = time.monotonic()
        try:
            statuses = asyncio.run(fire(server, count))
        finally:
            seconds = time.monotonic() - started
            stop.set()
            prober.join()
        gate.open()
        if statuses[0]:
            problems = [line for line in server.log().splitlines() if "ERROR" in line or "Error" in line]
            print("# server log:", *problems[-20:], sep="\n# ", file=sys.stderr)
        return Figures(idle, burst, statuses, seconds)


def ms(values: list[float]) -> str:
    return fmt(values, "ms", 1)


def rows_for(runs: list[Figures], count: int, loads: list[float]) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    for name in PROBED:
        for label, share in (("p50", 0.5), ("p99", 0.99)):
            idle = [run.idle.percentile(name, share) for run in runs]
            busy = [run.burst.percentile(name, share) for run in runs]
            ratio = [b / i for b, i in zip(busy, idle, strict=True) if i > 0]
            rows.append((f"{name} {label}, idle", ms(idle), "one request at a time, a slot held"))
            rows.append((f"{name} {label}, during the burst", ms(busy), f"burst/idle {fmt(ratio, 'x')}"))
    admitted = [run.statuses[200] for run in runs]
    refused = [run.statuses[429] for run in runs]
    other = [sum(n for status, n in run.statuses.items() if status not in {200, 429}) for run in runs]
    failures = [len(run.idle.failures) + len(run.burst.failures) for run in runs]
    rows += [
        ("creates answered 200", fmt(admitted, "", 0), f"MAX_QUEUED = {MAX_QUEUED}: every one of them queued"),
        ("creates answered 429", fmt(refused, "", 0), f"of {count}; one sentence each"),
        ("other answers or no answer", fmt(other, "", 0), "goal 0"),
        ("failed or slow (> 10 s) probes", fmt(failures, "", 0), "goal 0: the server answered throughout"),
        ("probe requests during the burst", fmt([sum(map(len, r.burst.latencies.values())) for r in runs], "", 0), ""),
        (
            "burst duration",
            fmt([run.burst_seconds for run in runs], "s"),
            f"{count} creates, {CONNECTIONS} connections",
        ),
        ("1-min load average at iteration start", fmt(loads, "", 1), "2 CPUs; shared with other work"),
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    runs: list[Figures] = []
    loads: list[float] = []
    for _ in range(args.iterations):
        loads.append(os.getloadavg()[0])
        runs.append(iteration(args.count))
        run = runs[-1]
        print(
            f"# {dict(run.statuses)} in {run.burst_seconds:.1f} s; failures {run.burst.failures[:5]}", file=sys.stderr
        )
        print(f"# no answer: {dict(NO_ANSWER)}", file=sys.stderr)
    print_figures(rows_for(runs, args.count, loads), markdown=args.markdown, widths=(44, 28))
    expected = {200: min(MAX_QUEUED, args.count), 429: max(0, args.count - MAX_QUEUED)}
    broken = [run for run in runs if dict(run.statuses) != expected or run.idle.failures or run.burst.failures]
    if broken:
        raise SystemExit(f"{len(broken)} iteration(s) broke the bounds: {[dict(r.statuses) for r in broken]}")
    if not args.markdown:
        print(
            "median burst/idle p99 of /health:",
            statistics.median(r.burst.percentile("/health", 0.99) / r.idle.percentile("/health", 0.99) for r in runs),
        )


if __name__ == "__main__":
    main()
