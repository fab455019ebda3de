"""What the seam between the server and a sandboxed slot costs per connection (issue 31).

    .venv/bin/python bench/seam_costs.py [--rounds 50]

On one running slot (live view off, as a warm spare is): a socket made inside the slot's network namespace, a
``/json/version`` through the host-side CDP gate (answered from the pinned copy) and in the namespace (Chromium
itself), a WebSocket connect plus one CDP call through the gate, and the warm spare's hand-over probe. Run the same
file from a checkout of an older tree to compare (it falls back to the host loopback where there is no namespace).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.config import Settings
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.slot import Slot
from openbrowse.slots.spares import Spare, SpareKeeper
from tests.support.slot_range import free_slot_base, release_slot_base


async def _timed(work: Callable[[], Awaitable[object]], rounds: int) -> list[float]:
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        await work()
        spent.append(time.perf_counter() - started)
    return spent


async def _measure(slot: Slot, rounds: int) -> dict[str, list[float]]:
    network = getattr(slot, "network", None)

    async def connect_inside() -> None:
        if network is not None:
            (await network.connect(slot.cdp_port)).close()

    async def cdp_call() -> None:
        async with websockets.connect(slot.cdp_ws_url, max_size=None) as ws:
            await ws.send('{"id": 1, "method": "Browser.getVersion"}')
            await ws.recv()

    keeper = SpareKeeper([slot], 0, take_index=lambda: None, give_back=lambda _index: None)
    spare = Spare(0, slot)
    spare.ok = True
    spare.started.set()
    return {
        "socket inside the namespace": await _timed(connect_inside, rounds),
        "/json/version, host port": await _timed(lambda: loopback_http_json(slot.cdp_port, "/json/version"), rounds),
        "/json/version, in the namespace": await _timed(
            lambda: loopback_http_json(slot.cdp_port, "/json/version", **({"network": network} if network else {})),
            rounds,
        ),
        "WebSocket + 1 CDP call, host port": await _timed(cdp_call, rounds),
        "spare hand-over probe": await _timed(lambda: keeper._problem(spare, None), rounds),
    }


async def main(rounds: int) -> None:
    base = free_slot_base(1)
    try:
        with tempfile.TemporaryDirectory() as home:
            settings = Settings(OPENBROWSE_DATA_DIR=Path(home) / "data", MAX_CONCURRENT_SESSIONS=1)
            slot = Slot(settings, base)
            try:
                await slot.start(vnc=False)
                figures = await _measure(slot, rounds)
            finally:
                await slot.aclose()
    finally:
        release_slot_base(base)
    for name, spent in figures.items():
        ordered = sorted(spent)
        median, p90 = statistics.median(ordered) * 1000, ordered[int(len(ordered) * 0.9)] * 1000
        print(f"{name:36} median {median:7.2f} ms   p90 {p90:7.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=50)
    asyncio.run(main(parser.parse_args().rounds))
