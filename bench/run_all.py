"""``make bench``: run every benchmark of ``bench/`` and write their tables into ``docs/benchmarks.md``.

    .venv/bin/python bench/run_all.py [--iterations 5] [--only api_load ...]

This is the only writer of the "Latest run" section. Each benchmark runs with ``--iterations`` (at least 5) and
``--markdown``; its table replaces the block between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` (added
when missing), under a line giving that block's own start and end (UTC) and the 1-, 5- and 15-minute load averages
at both: an ``--only`` rerun replaces its blocks alone and says when it ran, so a block never carries another
run's date. The machine block names the machine only. The hand-written method sections stay as they are.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
LATEST = "## Latest run (`make bench`)"
BENCHMARKS = {
    "machine": "Machine",
    "slot_start": "Slot start and stop, and a slot's memory",
    "step_overhead": "Step overhead (against stock browser-use)",
    "lean_state": "Lean state",
    "read_pages": "read_pages against visiting pages one by one",
    "reviewer": "Reviewer overhead",
    "session_start": "Session start: the first session after a start and later ones (against the original)",
    "api_load": "API under load and event-loop lag (against the original)",
    "server_memory": "Server memory after many sessions (against 623df5f, same run)",
    "warm_spare": "Warm spare against a cold start; boot → /health; slot PSS with and without a viewer",
    "isolation": "Cost of isolation (against 623df5f, same run)",
    "burst": "A burst of 2,000 creates against a one-slot server: /health and the dashboard meanwhile",
    "control": "Control API (snapshot, act click, a 20-action batch) against bare Playwright on the same browser",
    "browser_lifecycle": "Raw-browser lifecycle: create, connect, goto, release (BrowserArena style)",
    "recording": "Recordings: the recorder's CPU, and a session's wall time with and without recording",
    "mcp_shared": "MCP browser tools: an added owner context in the shared browser against a raw browser on its slot",
    "store_rows": "Session rows: the pydantic mapping against the hand mapping of dda951a",
    "store_backends": "PostgreSQL against SQLite: GET session p99 (20 clients), the 4-step task, server RSS",
    "browser_looks": "How the browser looks to detectors: BotD and the probe page in a session, a raw browser, stock",
    "software_gl": "Software WebGL: a slot's CPU with SwiftShader against the slot without GL flags",
    "cached_script": "Cached scripts: a cached run of the fixture shop task against the agent's run of it",
    "proxy_overhead": "Page loads through an upstream proxy (pproxy on loopback) against direct ones",
}
TITLES: dict[str, str] = {}
PLACEHOLDERS: dict[str, str] = {}


def machine() -> str:
    memory = psutil.virtual_memory().total / 1024**3
    return (
        f"{platform.platform()}, {psutil.cpu_count()} CPUs, {memory:.1f} GiB RAM, Python {platform.python_version()}. "
        "Written by `make bench` only; each block below says when it ran and how loaded the machine was."
    )


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def run(name: str, iterations: int) -> str:
    started, start_load, started_at = time.monotonic(), load(), datetime.now(UTC)
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / f"{name}.py"), "--iterations", str(iterations), "--markdown"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.monotonic() - started
    stamp = (
        f"Run {started_at:%Y-%m-%d %H:%M}–{datetime.now(UTC):%H:%M} UTC ({seconds:.0f} s, {iterations} iterations); "
        f"load average (1/5/15 min) {start_load} at the start, {load()} at the end, on {psutil.cpu_count()} CPUs."
    )
    if result.returncode != 0:
        return f"{stamp}\n\nFailed (exit {result.returncode}):\n\n```\n{result.stderr[-2000:]}\n```"
    table = "\n".join(line for line in result.stdout.splitlines() if line.startswith("|") or not line.strip())
    return f"{stamp}\n\n{table.strip()}"


def replace_block(text: str, name: str, body: str) -> str:
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{start}\n### {BENCHMARKS.get(name) or TITLES.get(name, name)}\n\n{body}\n{end}"
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    if LATEST not in text:
        text = text.rstrip() + f"\n\n{LATEST}\n"
    return text.rstrip() + f"\n\n{block}\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--only", nargs="*", default=list(BENCHMARKS))
    args = parser.parse_args()
    iterations = max(5, args.iterations)
    text = DOC.read_text(encoding="utf-8")
    text = replace_block(text, "machine", machine())
    for name in [n for n in args.only if n != "machine"]:
        print(f"running bench/{name}.py ...", flush=True)
        text = replace_block(text, name, run(name, iterations))
        DOC.write_text(text, encoding="utf-8")
    for name, note in PLACEHOLDERS.items():
        text = replace_block(text, name, note)
    DOC.write_text(text, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
