"""Warm spare: POST → ``running`` with a pre-started spare (``PREWARM_SLOTS=1``) against a cold start
(``PREWARM_SLOTS=0``) in the same run; boot → ``/health``; the PSS of a session's slot with and without a viewer.

    .venv/bin/python bench/warm_spare.py [--iterations 5] [--markdown]

Each iteration starts two servers (``python -m openbrowse serve``, zero-latency fake model), one with a spare and
one without, timing each from spawn to the first ``200`` of ``/health`` (browser-use is imported before that).
Sessions then alternate between them, two each: before a warm POST the bench waits until ``/health/details``
lists a ready spare, as a client arriving at an idle server finds it. Last, with both servers gone, a keep-alive
session on a lone server without a spare opens the fixture page with the cross-origin iframe and parks; the PSS of
its slot (Xvfb, Chromium and helpers, from ``/health/details``) is read without a viewer and again while one is
connected to the live view. PSS shares a page among all processes mapping it, so a neighbouring Chromium would
make the slot look lighter, hence the lone server. The one ratio (warm/cold) is of medians measured in this run;
there is no ratio against figures of another run.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx
import websockets
from websockets.typing import Subprotocol

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.served import MODEL, TERMINAL, fmt, health_details, print_figures, ready_spare, run_session, served
from tests.fakes.llm_script import done, navigate
from tests.fakes.llm_server import FakeProvider
from tests.fakes.site import FixtureSites
from tests.support.server import ServerProcess, wait_until


def slot_pss(server: ServerProcess, owner: str) -> float:
    slots = [s for s in health_details(server)["slots"] if s["owner"] == owner]
    assert len(slots) == 1, slots
    return float(slots[0]["pssMib"])


async def watch_and_measure(server: ServerProcess, session_id: str) -> float:
    url = f"ws://127.0.0.1:{server.port}/vnc/{session_id}/websockify"
    async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=30) as ws:
        assert await asyncio.wait_for(ws.recv(), 30) == b"RFB 003.008\n"
        await asyncio.sleep(1.0)  # let the first frame be sent, as a viewer would see it
        return await asyncio.to_thread(slot_pss, server, session_id)


def parked_session_pss(
    server: ServerProcess, fake: FakeProvider, site: FixtureSites, client: httpx.Client
) -> tuple[float, float]:
    marker = f"PSS-{uuid.uuid4().hex[:8]}"
    fake.script(
        marker,
        [navigate(f"{site.url}/jobs"), done("Opened the jobs page.")],
        when=lambda request: request.is_agent_step,
    )
    body = {"task": f"{marker} Open the jobs page.", "model": MODEL, "keepAlive": True}
    session_id = client.post(f"{server.v3}/sessions", json=body).raise_for_status().json()["id"]
    wait_until(
        lambda: client.get(f"{server.v3}/sessions/{session_id}").json()["status"] in TERMINAL,
        120,
        what="the keep-alive session to park",
    )
    time.sleep(1.0)  # the page settles (its iframe loaded, the renderer idle), as a parked browser would
    without = slot_pss(server, session_id)
    with_viewer = asyncio.run(watch_and_measure(server, session_id))
    client.post(f"{server.v3}/sessions/{session_id}/stop", json={"strategy": "session"})
    return without, with_viewer


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    boot: dict[str, list[float]] = {"warm": [], "cold": []}
    running: dict[str, list[float]] = {"warm": [], "cold": []}
    spare_pss: list[float] = []
    pss_without: list[float] = []
    pss_with: list[float] = []
    for _ in range(args.iterations):
        with ExitStack() as stack, httpx.Client(timeout=60) as client:
            servers = {}
            for kind, prewarm in (("warm", "1"), ("cold", "0")):
                started = time.monotonic()
                servers[kind] = stack.enter_context(served({"PREWARM_SLOTS": prewarm}))
                boot[kind].append(time.monotonic() - started)
            for _ in range(2):
                for kind in ("warm", "cold"):
                    server, fake = servers[kind]
                    if kind == "warm":
                        spare_pss.append(ready_spare(server))
                    running[kind].append(run_session(server, fake, client).running)
        # PSS splits shared pages among every process mapping them, so a neighbouring Chromium (a spare, the
        # other server's) would make this slot look lighter: measure it on a lone server without a spare.
        with (
            served({"PREWARM_SLOTS": "0"}) as (server, fake),
            FixtureSites() as site,
            httpx.Client(timeout=60) as client,
        ):
            without, with_viewer = parked_session_pss(server, fake, site, client)
            pss_without.append(without)
            pss_with.append(with_viewer)
    rows = [
        ("POST → running, warm spare", fmt(running["warm"]), "goal ≤ 0.2 s"),
        (
            "POST → running, cold start (PREWARM_SLOTS=0)",
            fmt(running["cold"]),
            f"warm/cold {statistics.median(running['warm']) / statistics.median(running['cold']):.2f}x",
        ),
        ("boot → /health, PREWARM_SLOTS=1", fmt(boot["warm"]), "browser-use imported before /health"),
        ("boot → /health, PREWARM_SLOTS=0", fmt(boot["cold"]), ""),
        ("PSS of an idle spare", fmt(spare_pss, "MiB", 0), "Xvfb + Chromium at about:blank"),
        ("PSS of a session's slot, no viewer", fmt(pss_without, "MiB", 0), "goal ≤ 450 MiB; /jobs page, OOPIF"),
        (
            "PSS of a session's slot, one viewer",
            fmt(pss_with, "MiB", 0),
            "x11vnc + websockify started",
        ),
    ]
    print_figures(rows, markdown=args.markdown, widths=(48, 30))


if __name__ == "__main__":
    main()
