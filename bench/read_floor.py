"""The floor of reading pages in real foreground tabs: the same pages read by bare CDP, with no browser-use, no
server and no product code, on a Chromium started with the slot's own command line.

    .venv/bin/python bench/read_floor.py [--pages 48] [--iterations 3]

``bench/read_pages.py --floor`` runs it in the same process as its two sides. It answers "how fast could any
``read_pages`` be on this machine, if it keeps spec §11.2's rule that every page is read in a real foreground
tab?". The loop does the least such a reader must do: 8 tabs opened once, then per page: focus the tab, wait in
the page until it is complete, shown and has rendered one frame, read its title and text, and start loading the
tab's page of the next wave. ``hidden`` reads the same pages without ever focusing a tab (what §11.2 forbids),
for scale. Reported: the wall time of the reading and the CPU seconds Chromium spent in it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from websockets.asyncio.client import ClientConnection, connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.chromium_flags import TAG, tagged, wait_for, xvfb
from openbrowse.config import Settings
from openbrowse.slots.chromium import block_local_files, chromium_argv, find_browser_binary
from openbrowse.slots.layout import slot_layout
from tests.fakes.site import FixtureSites
from tests.support.slot_range import free_slot_base, release_slot_base

WAVE = 8
READ = """new Promise(resolve => {
  const done = () => resolve({title: document.title, chars: document.body ? document.body.innerText.length : 0});
  const ready = () => document.readyState === 'complete' && (%s);
  const go = () => %s;
  if (ready()) go(); else { const poll = setInterval(() => { if (ready()) { clearInterval(poll); go(); } }, 5); }
})"""
FOREGROUND_READ = READ % ("document.visibilityState === 'visible'", "requestAnimationFrame(() => setTimeout(done, 0))")
HIDDEN_READ = READ % ("true", "done()")


@dataclass(frozen=True)
class FloorRun:
    wall: float
    cpu: float
    read: int


class Cdp:
    """Flat-mode CDP over one websocket, replies matched by id."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            future = self._waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(message)

    async def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        call_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[call_id] = future
        message: dict[str, Any] = {"id": call_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        await self._ws.send(json.dumps(message))
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def aclose(self) -> None:
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._ws.close()


def chromium_cpu(tag: str) -> float:
    total = 0.0
    for proc in tagged(tag):
        with contextlib.suppress(psutil.Error):
            times = proc.cpu_times()
            total += times.user + times.system
    return total


async def read_all(cdp: Cdp, urls: list[str], *, foreground: bool) -> int:
    """Read ``urls`` in waves of 8 reused tabs; the number of pages whose own text was read."""
    script = FOREGROUND_READ if foreground else HIDDEN_READ
    home = next(t for t in (await cdp.call("Target.getTargets"))["targetInfos"] if t["type"] == "page")["targetId"]
    waves = [urls[i : i + WAVE] for i in range(0, len(urls), WAVE)]
    created = await asyncio.gather(
        *(cdp.call("Target.createTarget", {"url": url, "background": True}) for url in waves[0])
    )
    tabs = [str(c["targetId"]) for c in created]
    attached = await asyncio.gather(
        *(cdp.call("Target.attachToTarget", {"targetId": tab, "flatten": True}) for tab in tabs)
    )
    sessions = [str(a["sessionId"]) for a in attached]
    loads: list[asyncio.Task[Any] | None] = [None] * len(tabs)
    read = 0
    try:
        for number, wave in enumerate(waves):
            for index, url in enumerate(wave):
                if (load := loads[index]) is not None:
                    await load
                while True:  # until the tab shows its own page, not the one it is navigating away from
                    if foreground:
                        await cdp.call("Target.activateTarget", {"targetId": tabs[index]})
                    reply = await cdp.call(
                        "Runtime.evaluate",
                        {"expression": script, "awaitPromise": True, "returnByValue": True},
                        sessions[index],
                    )
                    page = reply["result"].get("value") or {}
                    if str(page.get("title", "")).endswith(f" {url.rsplit('/', 1)[-1]}"):
                        break
                    await asyncio.sleep(0.005)
                read += page.get("chars", 0) > 0
                if number + 1 < len(waves) and index < len(waves[number + 1]):
                    next_url = waves[number + 1][index]
                    loads[index] = asyncio.create_task(cdp.call("Page.navigate", {"url": next_url}, sessions[index]))
        if foreground:
            await cdp.call("Target.activateTarget", {"targetId": home})
    finally:
        await asyncio.gather(*(load for load in loads if load is not None), return_exceptions=True)
        await asyncio.gather(*(cdp.call("Target.closeTarget", {"targetId": tab}) for tab in tabs))
    return read


async def _measure(ws_url: str, urls: list[str], tag: str, foreground: bool) -> FloorRun:
    cdp = Cdp(await connect(ws_url, max_size=None))
    try:
        cpu = chromium_cpu(tag)
        started = time.monotonic()
        read = await read_all(cdp, urls, foreground=foreground)
        wall = time.monotonic() - started
        return FloorRun(wall, chromium_cpu(tag) - cpu, read)
    finally:
        await cdp.aclose()


def measure_floor(site: FixtureSites, pages: int, *, foreground: bool = True) -> FloorRun:
    """One bare-CDP reading of the catalog's item pages on a fresh Xvfb + Chromium (the slot's command line)."""
    base = free_slot_base(1)
    layout = slot_layout(base)
    binary = find_browser_binary(Settings(OPENBROWSE_DATA_DIR=Path(tempfile.gettempdir())))
    tag = f"floor-{os.getpid()}-{time.monotonic_ns()}"
    urls = [f"{site.url}/catalog/item/{n}" for n in range(1, pages + 1)]
    try:
        with xvfb(layout.display), tempfile.TemporaryDirectory(prefix="read-floor-") as home:
            profile = Path(home) / "user-data"
            block_local_files(profile)
            argv = chromium_argv(binary, cdp_port=layout.cdp_port, user_data_dir=profile)
            env = {**os.environ, "DISPLAY": layout.display, TAG: tag, "TMPDIR": home}
            process = subprocess.Popen(
                argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                version: dict[str, str] = {}
                wait_for(
                    lambda: (
                        version.update(httpx.get(f"http://127.0.0.1:{layout.cdp_port}/json/version", timeout=1).json())
                        or True
                    ),
                    30,
                    "CDP",
                )
                time.sleep(1.0)  # the browser's own start-up work settles, as in a slot that took a session
                return asyncio.run(_measure(version["webSocketDebuggerUrl"], urls, tag, foreground))
            finally:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(10)
                for proc in tagged(tag):
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
    finally:
        release_slot_base(base)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=48)
    parser.add_argument("--iterations", type=int, default=3)
    args = parser.parse_args()
    runs: dict[str, list[FloorRun]] = {"foreground": [], "hidden": []}
    with FixtureSites() as site:
        for _ in range(args.iterations):
            for name in runs:
                runs[name].append(measure_floor(site, args.pages, foreground=name == "foreground"))
    for name, found in runs.items():
        walls = [r.wall for r in found]
        cpus = [r.cpu for r in found]
        sys.stdout.write(
            f"{name}: wall {min(walls):.2f} / {statistics.median(walls):.2f} / {max(walls):.2f} s, "
            f"Chromium CPU {statistics.median(cpus):.2f} s, pages read {min(r.read for r in found)} of {args.pages}\n"
        )


if __name__ == "__main__":
    main()
