"""Slot start benchmark: a whole slot's start and stop, and its memory.

    .venv/bin/python bench/slot_start.py [--iterations 8] [--settle 2.0]

Each iteration times ``Slot.start()`` from nothing (the sandbox, Xvfb, websockify, x11vnc and Chromium behind the
egress enforcer, real readiness probes, the single-active-tab fix-up), ``Slot.stop()``, and a start with the live
view off. There is no "bare Chromium" floor any more: it ran as root with ``--no-sandbox`` and no egress proxy, so
it measured other work than a slot does (issue 33), and a floor on equal terms is the slot itself.

After the last slot start the slot idles for ``--settle`` seconds and its memory is read as ``/health/details``
reads it (``slots.memory.pss_by_tag``): PSS summed over every process carrying the slot's environment tag and all
their descendants (Chromium's renderers, zygotes, GPU/utility processes and crashpad handlers).
Prints a table; ``--markdown`` prints it as Markdown for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.config import Settings
from openbrowse.slots.ledger import instance_id
from openbrowse.slots.memory import pss_by_tag
from openbrowse.slots.seam import seam_dir
from openbrowse.slots.slot import Slot
from openbrowse.slots.slot_files import scratch_root
from tests.support.slot_range import free_slot_base, release_slot_base

MiB = 1024 * 1024


def slot_pss(slot: Slot, settings: Settings) -> float:
    """The slot's PSS in MiB as ``/health/details`` counts it: its tagged processes and all their descendants."""
    return pss_by_tag(instance_id(settings.run_dir)).get(slot.tag, 0) / MiB


def _median_row(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(statistics.median(column) for column in zip(*rows, strict=True))


def _row(label: str, values: tuple[float, ...], bold: bool = False) -> str:
    cells = [f"{value:.3f}" for value in values]
    if bold:
        cells = [f"**{cell}**" for cell in cells]
        label = f"**{label}**"
    return "| " + " | ".join([label, *cells]) + " |"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=8)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="slot-bench-"))
    settings = Settings(OPENBROWSE_DATA_DIR=scratch / "data", MAX_CONCURRENT_SESSIONS=1)
    base = free_slot_base(1)  # locked like the tests' ranges, so nothing else on the machine takes it meanwhile
    slot = Slot(settings, base)
    rows: list[tuple[float, ...]] = []
    memory = 0.0
    try:
        await slot.start()  # warm the page cache, untimed
        await slot.stop()
        for i in range(args.iterations):
            started = time.perf_counter()
            await slot.start()
            start = time.perf_counter() - started
            if i == args.iterations - 1:
                await asyncio.sleep(args.settle)
                memory = await asyncio.to_thread(slot_pss, slot, settings)
            started = time.perf_counter()
            await slot.stop()
            stop = time.perf_counter() - started
            started = time.perf_counter()
            await slot.start(vnc=False)
            lean = time.perf_counter() - started
            await slot.stop()
            rows.append((start, lean, stop))
    finally:
        await slot.aclose()
        release_slot_base(base)
        for parent in (seam_dir(settings.run_dir, 0).parent, scratch_root(settings.run_dir)):
            with contextlib.suppress(OSError):  # a lone slot leaves its instance's (empty) parents behind
                os.rmdir(parent)
        shutil.rmtree(scratch, ignore_errors=True)

    lines = [
        "| run | slot start (s) | slot start, live view off (s) | slot stop (s) |",
        "|---|---|---|---|",
    ]
    lines += [_row(str(i), row) for i, row in enumerate(rows, 1)]
    lines.append(_row("median", _median_row(rows), bold=True))
    lines += ["", f"| slot PSS after the last start and {args.settle:g} s idle, live view on |", "|---|"]
    lines.append(f"| {memory:.0f} MiB |")
    if args.markdown:
        print("\n".join(lines))
    else:
        for line in lines:
            if not line.startswith("|---"):
                print(line.replace("**", "").strip("|").replace(" | ", "  |  "))
    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; base slot index {base}")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt  # run the finally blocks (they stop every process the bench started)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _interrupt)
    asyncio.run(main())
