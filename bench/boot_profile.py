"""Where boot's seconds go: spawn → ``/health`` split by the server's own log, and the imports that cost most.

    .venv/bin/python bench/boot_profile.py [--iterations 3] [--imports 15] [--baseline-ref REF ...]

Each iteration starts ``python -m openbrowse serve`` (zero-latency fake model, one warm spare, as ``served.py``)
with ``PYTHONPROFILEIMPORTTIME=1`` (the interpreter's ``-X importtime``: one line per import on stderr, which goes
to the server log) and times, from the spawn:

* **first log line**: the imports of ``python -m openbrowse`` and the app, settings, uvicorn's start;
* **spare ready**: the pool's ``Spare slot N is ready`` (Xvfb and Chromium in their sandbox);
* **startup complete**: uvicorn's ``Application startup complete`` (the lifespan ended: every service entered and
  browser-use imported, on a thread, while the spare starts);
* **/health**: the first ``200``, as ``bench/warm_spare.py`` times boot.

Log times have millisecond resolution on the server's clock (``time.time`` here too). The import table lists the
imports with the largest cumulative time (microseconds as printed by the interpreter; an import on a thread
shares the CPUs with the lifespan, so read them as shares) and whether each happens before ``/health``. With
``--baseline-ref`` the same for each git revision, in the same run, iterations alternating between trees.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import statistics
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.api_load import source_tree
from bench.served import fmt, served

IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|(\s*)(\S+)$")
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")
MARKS = {"spare ready": "is ready", "startup complete": "Application startup complete"}


def log_times(log: str) -> dict[str, float]:
    """Wall-clock times (``time.time``) of the first log line and of each mark's first line."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        stamp = LOG_TIME.match(line)
        if stamp is None:
            continue
        moment = datetime.strptime(stamp.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        found.setdefault("first log line", moment)
        for mark, needle in MARKS.items():
            if needle in line:
                found.setdefault(mark, moment)
    return found


def top_imports(log: str) -> dict[str, float]:
    """Cumulative import time in seconds of each top-level import (the least indented lines)."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        match = IMPORT_LINE.match(line)
        if match is not None and len(match.group(3)) == 1:
            found[match.group(4)] = int(match.group(2)) / 1e6
    return found


def boot_once(tree: Path | None) -> tuple[dict[str, float], dict[str, float]]:
    env = {"PYTHONPROFILEIMPORTTIME": "1", **({"PYTHONPATH": str(tree)} if tree else {})}
    spawned = time.time()
    with served(env) as (server, _fake):
        healthy = time.time()  # served() returns at the first 200 of /health
        log = server.log()
    phases = {name: moment - spawned for name, moment in log_times(log).items()}
    phases["/health"] = healthy - spawned
    return phases, top_imports(log)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--imports", type=int, default=15)
    parser.add_argument("--baseline-ref", action="append", default=[])
    args = parser.parse_args()
    phases: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    imports: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    loads: list[float] = []
    with contextlib.ExitStack() as stack:
        trees: dict[str, Path | None] = {"ours": None}
        for ref in args.baseline_ref:
            trees[ref] = stack.enter_context(source_tree(ref))
        for _ in range(args.iterations):
            loads.append(os.getloadavg()[0])
            for name, tree in trees.items():
                found, imported = boot_once(tree)
                for phase, seconds in found.items():
                    phases[name][phase].append(seconds)
                for module, seconds in imported.items():
                    imports[name][module].append(seconds)
    names = list(trees)
    order = ["first log line", "spare ready", "startup complete", "/health"]
    print("| from spawn | " + " | ".join(names) + " |\n|---|" + "---|" * len(names))
    for phase in order:
        print(f"| {phase} | " + " | ".join(fmt(phases[n][phase]) if phases[n][phase] else "—" for n in names) + " |")
    print(f"| 1-min load average | {fmt(loads, '', 1)} |" + " |" * (len(names) - 1))
    for name in names:
        ranked = sorted(imports[name].items(), key=lambda item: statistics.median(item[1]), reverse=True)
        print(f"\n#### Top-level imports by cumulative time, {name} (median seconds)\n")
        print("| module | seconds |\n|---|---|")
        for module, runs in ranked[: args.imports]:
            print(f"| `{module}` | {statistics.median(runs):.3f} |")


if __name__ == "__main__":
    main()
