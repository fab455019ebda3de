"""Recordings (spec §22.1): what ffmpeg costs while it records a slot, and a session's wall time with and without.

    .venv/bin/python bench/recording.py [--iterations 5] [--markdown]

One server (zero-latency fake model, fixture shop site). Each iteration runs two sessions that each open the shop
and then answer, one with ``enableRecording`` and one without, alternating which goes first; their POST → ended
times are compared in the same run. A third, recorded session opens the shop and holds its answer for
:data:`HOLD_SECONDS` while the recorder's CPU is read from ``/proc`` (user + system time of the ffmpeg process,
through psutil) over that window: % of one core. The recording's size per minute is read from the finished file.
"""

from __future__ import annotations

import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import MODEL, TERMINAL, fmt, print_figures, served
from tests.fakes.llm_script import Gate, done, navigate, structured
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess, wait_until

HOLD_SECONDS = 10.0
CPU_GOAL = 10.0
"""% of one core (spec §22.1)."""


def recorder(server: ServerProcess) -> psutil.Process | None:
    assert server.process is not None
    found = [p for p in psutil.Process(server.process.pid).children(recursive=True) if p.name() == "ffmpeg"]
    return found[0] if found else None


def ended(server: ServerProcess, client: httpx.Client, session_id: str) -> dict[str, Any]:
    row: dict[str, Any] = {}

    def done_yet() -> bool:
        nonlocal row
        row = client.get(f"{server.v3}/sessions/{session_id}").json()
        return row["status"] in TERMINAL

    wait_until(done_yet, 120, what=f"session {session_id} to end")
    if not row.get("isTaskSuccessful"):
        raise RuntimeError(f"session {session_id} failed: {row.get('lastStepSummary')}\n{server.log()[-3000:]}")
    return row


def timed_session(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, client: httpx.Client, *, record: bool
) -> float:
    marker = f"BENCH-REC-{uuid.uuid4().hex[:8]}"
    fake.script(marker, [navigate(f"{site.url}/"), done("Opened the shop.")], when=lambda r: r.is_agent_step)
    started = time.monotonic()
    body = {"task": f"{marker} Open the shop.", "model": MODEL, "enableRecording": record}
    session_id = client.post(f"{server.v3}/sessions", json=body).raise_for_status().json()["id"]
    row = ended(server, client, session_id)
    seconds = time.monotonic() - started
    assert bool(row["recordingUrls"]) is record, row
    return seconds


def recorder_cpu(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, client: httpx.Client
) -> tuple[float, float]:
    """% of one core that ffmpeg used over :data:`HOLD_SECONDS`, and the file's MiB per minute."""
    marker = f"BENCH-REC-CPU-{uuid.uuid4().hex[:8]}"
    gate = Gate()
    fake.script(
        marker,
        [navigate(f"{site.url}/"), structured(done("Held."), gate=gate)],
        when=lambda r: r.is_agent_step,
    )
    body = {"task": f"{marker} Open the shop and wait.", "model": MODEL, "enableRecording": True}
    session_id = client.post(f"{server.v3}/sessions", json=body).raise_for_status().json()["id"]
    try:
        if not gate.wait_entered(120):
            raise TimeoutError(server.log()[-3000:])
        process = recorder(server)
        assert process is not None, "no recorder is running"
        before, wall = process.cpu_times(), time.monotonic()
        time.sleep(HOLD_SECONDS)
        after, elapsed = process.cpu_times(), time.monotonic() - wall
    finally:
        gate.open()
    row = ended(server, client, session_id)
    used = (after.user + after.system) - (before.user + before.system)
    name = row["recordingUrls"][0].split("?")[0].rsplit("/", 1)[-1]
    files = server.home / "data" / "sessions" / session_id / "recordings"
    size_mib = (files / name).stat().st_size / 1024**2
    started_ms = int(name.rsplit("-", 1)[-1].removesuffix(".mp4"))
    minutes = max(time.time() - started_ms / 1000, 1.0) / 60
    return used / elapsed * 100, size_mib / minutes


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: list[float] = []
    size: list[float] = []
    with served({"PREWARM_SLOTS": "0"}) as (server, fake), FixtureSites() as site, httpx.Client(timeout=60) as client:
        timed_session(server, fake, site, client, record=False)  # warm-up: the first session pays the imports
        for iteration in range(args.iterations):
            for record in (True, False) if iteration % 2 == 0 else (False, True):
                wall[record].append(timed_session(server, fake, site, client, record=record))
            percent, per_minute = recorder_cpu(server, fake, site, client)
            cpu.append(percent)
            size.append(per_minute)
    ratio = statistics.median(wall[True]) / statistics.median(wall[False])
    rows = [
        ("recorder CPU, % of one core", fmt(cpu, "%", 1), f"goal ≤ {CPU_GOAL:.0f} %; ffmpeg x11grab 3 fps, shop page"),
        ("recording size", fmt(size, "MiB/min", 2), "1920x1080 H.264, fragmented MP4"),
        ("session POST → ended, recorded", fmt(wall[True]), f"{ratio:.2f}x unrecorded"),
        ("session POST → ended, not recorded", fmt(wall[False]), "baseline, same run"),
    ]
    print_figures(rows, markdown=args.markdown, widths=(40, 30))


if __name__ == "__main__":
    main()
