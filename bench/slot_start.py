"""Slot start benchmark: whole-slot start next to a bare Chromium launch, measured in the same run.

    .venv/bin/python bench/slot_start.py [--iterations 8] [--settle 2.0]

Each iteration does, alternately so machine load hits both alike:

* **bare**: ``Popen`` the same Chromium with the same flags (``chromium_argv``) on an already running Xvfb,
  with a fresh user-data dir, and poll ``GET /json/version`` every 5 ms until it answers 200. This is the floor.
* **slot**: ``Slot.start()`` from nothing: browser lookup, Xvfb (``-displayfd``), websockify, x11vnc and Chromium,
  real readiness probes for all four, the single-active-tab fix-up. Then ``Slot.stop()`` is timed too
  (processes down, profile moved aside; its deletion runs in the background).

After the last slot start the slot idles for ``--settle`` seconds and its memory is read: PSS
(``psutil.Process.memory_full_info().pss``) summed over every process carrying the slot's environment tag,
which includes Chromium's renderers, zygotes, GPU/utility processes and crashpad handlers.
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
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.config import Settings
from openbrowse.slots.chromium import chromium_argv, find_browser_binary
from openbrowse.slots.layout import MAX_SLOT_INDEX, slot_layout
from openbrowse.slots.ledger import tagged_processes
from openbrowse.slots.probes import CdpVersionProbe
from openbrowse.slots.slot import Slot
from openbrowse.slots.x_files import socket_answers, x_display_taken

MiB = 1024 * 1024


def free_index(count: int) -> int:
    listening = {c.laddr.port for c in psutil.net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN and c.laddr}
    for base in range(100, MAX_SLOT_INDEX - count + 1):
        layouts = [slot_layout(base + i) for i in range(count)]
        if all(not (set(lay.ports) & listening) and not x_display_taken(lay) for lay in layouts):
            return base
    raise SystemExit("no free slot index")


async def bare_chromium(settings: Settings, display: str, index: int, scratch: Path) -> float:
    layout = slot_layout(index)
    user_data = scratch / "bare-user-data"
    shutil.rmtree(user_data, ignore_errors=True)
    argv = chromium_argv(find_browser_binary(settings), cdp_port=layout.cdp_port, user_data_dir=user_data)
    probe = CdpVersionProbe(layout.cdp_port)
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        env={**os.environ, "DISPLAY": display},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        while not await probe():
            await asyncio.sleep(0.005)
        return time.perf_counter() - started
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        await asyncio.to_thread(proc.wait)
        shutil.rmtree(user_data, ignore_errors=True)


def slot_processes(slot: Slot) -> dict[int, tuple[str, psutil.Process]]:
    """Every process of the slot: each child's process group (Chromium renderers, zygotes, GPU and utility
    processes clobber their environment with their process title, so the tag alone misses them) plus the
    tagged processes outside those groups (Chromium's crashpad handlers)."""
    leaders = {p.pid: p.name for p in slot.processes() if p.running}
    found: dict[int, tuple[str, psutil.Process]] = {}
    for proc in psutil.process_iter():
        try:
            pgid = os.getpgid(proc.pid)
        except OSError:
            continue
        if pgid in leaders:
            found[proc.pid] = (leaders[pgid], proc)
    for proc in tagged_processes(slot.tag):
        found.setdefault(proc.pid, ("Chromium", proc))
    return found


def slot_memory(slot: Slot) -> dict[str, float]:
    groups: dict[str, float] = {"Xvfb": 0.0, "x11vnc": 0.0, "websockify": 0.0, "Chromium": 0.0}
    count = 0
    for key, proc in slot_processes(slot).values():
        try:
            pss = proc.memory_full_info().pss / MiB
        except psutil.Error:
            continue
        count += 1
        groups[key] += pss
    groups["total"] = sum(groups.values())
    groups["processes"] = count
    return groups


async def _port_open(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return False
    writer.close()
    return True


async def bare_stack(settings: Settings, index: int, scratch: Path) -> float:
    """The same four processes started by hand (no supervision, ledger or tab fix-up): the stack's floor."""
    layout = slot_layout(index)
    user_data = scratch / "stack-user-data"
    shutil.rmtree(user_data, ignore_errors=True)
    procs: list[subprocess.Popen[bytes]] = []

    def spawn(argv: list[str], **kwargs: object) -> None:
        quiet: dict[str, object] = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        procs.append(subprocess.Popen(argv, start_new_session=True, **quiet, **kwargs))  # type: ignore[call-overload]

    started = time.perf_counter()
    read_fd, write_fd = os.pipe()
    try:
        xvfb = ["Xvfb", layout.display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", "-displayfd", str(write_fd)]
        spawn(xvfb, pass_fds=(write_fd,))
        os.close(write_fd)
        write_fd = -1
        novnc = [f"127.0.0.1:{layout.novnc_port}", f"127.0.0.1:{layout.vnc_port}"]
        spawn(["websockify", "--web", str(settings.NOVNC_WEB_DIR), *novnc])
        await asyncio.to_thread(os.read, read_fd, 16)
        vnc = ["x11vnc", "-display", layout.display, "-rfbport", str(layout.vnc_port), "-localhost", "-nopw"]
        spawn([*vnc, "-forever", "-shared", "-noxdamage", "-quiet", "-noipv6", "-viewonly"])
        argv = chromium_argv(find_browser_binary(settings), cdp_port=layout.cdp_port, user_data_dir=user_data)
        spawn(argv, env={**os.environ, "DISPLAY": layout.display})
        probe = CdpVersionProbe(layout.cdp_port)
        while not (await probe() and await _port_open(layout.vnc_port) and await _port_open(layout.novnc_port)):
            await asyncio.sleep(0.005)
        return time.perf_counter() - started
    finally:
        for fd in (read_fd, write_fd):
            if fd >= 0:
                os.close(fd)
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            await asyncio.to_thread(proc.wait)
        shutil.rmtree(user_data, ignore_errors=True)


def _median_row(rows: list[tuple[float, ...]]) -> tuple[float, ...]:
    return tuple(statistics.median(column) for column in zip(*rows, strict=True))


def _row(label: str, values: tuple[float, ...], bold: bool = False) -> str:
    bare, stack, start, lean, stop = values
    cells = [f"{bare:.3f}", f"{stack:.3f}", f"{start:.3f}", f"{start / bare:.2f}", f"{start / stack:.2f}"]
    cells += [f"{lean:.3f}", f"{stop:.3f}"]
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
    base = free_index(3)
    bare_display = slot_layout(base + 1)
    xvfb = subprocess.Popen(
        ["Xvfb", bare_display.display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    slot = Slot(settings, base)
    rows: list[tuple[float, ...]] = []
    memory: dict[str, float] = {}
    try:
        while not socket_answers(bare_display):
            await asyncio.sleep(0.01)
        await bare_chromium(settings, bare_display.display, base + 1, scratch)  # warm the page cache, untimed
        for i in range(args.iterations):
            bare = await bare_chromium(settings, bare_display.display, base + 1, scratch)
            stack = await bare_stack(settings, base + 2, scratch)
            started = time.perf_counter()
            await slot.start()
            start = time.perf_counter() - started
            if i == args.iterations - 1:
                await asyncio.sleep(args.settle)
                memory = slot_memory(slot)
            started = time.perf_counter()
            await slot.stop()
            stop = time.perf_counter() - started
            started = time.perf_counter()
            await slot.start(vnc=False)
            lean = time.perf_counter() - started
            await slot.stop()
            rows.append((bare, stack, start, lean, stop))
    finally:
        await slot.aclose()
        xvfb.terminate()
        xvfb.wait()
        shutil.rmtree(scratch, ignore_errors=True)

    lines = [
        "| run | bare Chromium → CDP (s) | bare 4-process stack (s) | slot start (s) | slot / bare Chromium "
        "| slot / bare stack | slot start, live view off (s) | slot stop (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [_row(str(i), row) for i, row in enumerate(rows, 1)]
    lines.append(_row("median", _median_row(rows), bold=True))
    lines += ["", "| slot process group | PSS (MiB) |", "|---|---|"]
    for key in ("Xvfb", "x11vnc", "websockify", "Chromium"):
        lines.append(f"| {key} | {memory.get(key, 0.0):.0f} |")
    lines.append(f"| **total ({int(memory.get('processes', 0))} processes)** | **{memory.get('total', 0.0):.0f}** |")
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
