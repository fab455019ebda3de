"""Chromium flags against memory: each candidate flag next to the slot's current command line, same run, same Xvfb.

    .venv/bin/python bench/chromium_flags.py [--iterations 5] [--settle 3] [--markdown] [--only NAME ...]

For every variant, in rounds so machine load hits all alike: Chromium is started with ``chromium_argv`` (exactly
the slot's flags) plus the variant's flags on one Xvfb and opens the fixture shop's ``/jobs`` page, whose iframe
comes from a second port; the page is opened as ``localhost`` so that frame is cross-site. The bench waits until
the iframe is an out-of-process frame (site isolation still on) and the page is loaded, takes a screenshot
(compositing works), idles ``--settle`` seconds, then sums PSS and USS over the run's tagged processes and their
descendants (renderers, GPU/utility processes, zygotes, crashpad handlers) and counts them. USS (memory only
this browser uses) does not depend on what else runs on the machine; PSS does, as shared library pages are split
among every Chromium on the host. The table gives medians and the saving against ``baseline`` of the same rounds
(positive: the variant uses less).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openbrowse.config import Settings
from openbrowse.slots.chromium import block_local_files, chromium_argv, find_browser_binary
from openbrowse.slots.layout import slot_layout
from tests.e2e.browser_support import CdpClient
from tests.fakes.site import FixtureSites
from tests.support.slot_range import claim_slot_base, free_slot_base, release_slot_base

MiB = 1024 * 1024
TAG = "OPENBROWSE_FLAG_BENCH"

VARIANTS: dict[str, tuple[str, ...]] = {
    "baseline": (),
    "disable-gpu": ("--disable-gpu",),
    "in-process-gpu": ("--in-process-gpu",),
    "no-spare-renderer": ("--disable-features=SpareRendererForSitePerProcess",),
    "network-in-process": ("--enable-features=NetworkServiceInProcess",),
    "renderer-limit-2": ("--renderer-process-limit=2",),
    "low-end-device": ("--enable-low-end-device-mode",),
    "no-extensions": ("--disable-extensions", "--disable-component-extensions-with-background-pages"),
    "no-crash-reporter": ("--disable-crash-reporter", "--disable-breakpad"),
    "no-services": (
        "--disable-features=Translate,OptimizationHints,MediaRouter,DialMediaRouteProvider,"
        "AutofillServerCommunication,CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
    ),
    "v8-lite-mode": ("--js-flags=--lite-mode",),
}


@dataclass(frozen=True)
class Sample:
    pss: float
    uss: float
    processes: int


def tagged(tag: str) -> list[psutil.Process]:
    """Processes carrying ``tag`` and their descendants (Chromium's zygotes start with a clean environment)."""
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get(TAG) == tag:
                found[proc.pid] = proc
                found.update((child.pid, child) for child in proc.children(recursive=True))
    return list(found.values())


XVFB_VARIANTS: dict[str, tuple[str, ...]] = {
    "Xvfb with GLX": (),
    "Xvfb -extension GLX (adopted)": ("-extension", "GLX"),
}


@contextlib.contextmanager
def xvfb(display: str, extra: tuple[str, ...] = ("-extension", "GLX")) -> Iterator[psutil.Process]:
    read_fd, write_fd = os.pipe()
    argv = ["Xvfb", display, "-screen", "0", "1920x1080x24", "-nolisten", "tcp", *extra, "-displayfd", str(write_fd)]
    process = subprocess.Popen(argv, pass_fds=(write_fd,), start_new_session=True, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    try:
        with os.fdopen(read_fd) as ready:
            ready.readline()
        yield psutil.Process(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)


def wait_for(probe: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(Exception):
            if probe():
                return
        time.sleep(0.05)
    raise TimeoutError(what)


def measure(display: str, port: int, flags: tuple[str, ...], site: FixtureSites, settle: float) -> Sample:
    binary = find_browser_binary(Settings(OPENBROWSE_DATA_DIR=Path(tempfile.gettempdir())))
    tag = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="flag-bench-") as home:
        profile = Path(home) / "user-data"
        block_local_files(profile)
        argv = chromium_argv(binary, cdp_port=port, user_data_dir=profile, extra_args=flags)
        env = {**os.environ, "DISPLAY": display, TAG: tag, "TMPDIR": home}
        process = subprocess.Popen(
            argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            version: dict[str, str] = {}
            wait_for(
                lambda: version.update(httpx.get(f"http://127.0.0.1:{port}/json/version", timeout=1).json()) or True,
                30,
                "CDP",
            )
            cdp = CdpClient(version["webSocketDebuggerUrl"])
            try:
                session = cdp.page_session()
                cdp.call("Page.enable", session=session)
                # 127.0.0.1:A and 127.0.0.1:B are one site; from localhost the panel is another site, its own process
                main_page = site.url.replace("127.0.0.1", "localhost") + "/jobs"
                cdp.call("Page.navigate", {"url": main_page}, session)

                def oopif() -> bool:
                    targets = cdp.call("Target.getTargets")["targetInfos"]
                    return any(t["type"] == "iframe" and t["url"].startswith(site.panel_url) for t in targets)

                wait_for(oopif, 30, "the cross-origin iframe as its own process")
                wait_for(
                    lambda: (
                        cdp.call("Runtime.evaluate", {"expression": "document.readyState"}, session)["result"]["value"]
                        == "complete"
                    ),
                    30,
                    "the page to load",
                )
                shot = cdp.call("Page.captureScreenshot", {"format": "png"}, session)
                assert len(base64.b64decode(shot["data"])) > 1000
            finally:
                cdp.close()
            time.sleep(settle)
            procs = tagged(tag)
            pss = uss = 0
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    info = proc.memory_full_info()
                    pss += info.pss
                    uss += info.uss
            return Sample(pss / MiB, uss / MiB, len(procs))
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
            for proc in tagged(tag):  # crashpad handlers run in their own process groups
                with contextlib.suppress(psutil.Error):
                    proc.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--only", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()
    names = ["baseline", *[n for n in args.only if n != "baseline"]]
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    base = free_slot_base(1)
    claim_slot_base(base)
    layout = slot_layout(base)
    xvfb_memory: dict[str, list[tuple[float, float]]] = {name: [] for name in XVFB_VARIANTS}
    failures: dict[str, list[str]] = {}
    try:
        with FixtureSites() as site:
            with xvfb(layout.display):
                for _ in range(args.iterations):
                    for name in names:
                        try:
                            sample = measure(layout.display, layout.cdp_port, VARIANTS[name], site, args.settle)
                        except (TimeoutError, AssertionError, RuntimeError) as exc:
                            failures.setdefault(name, []).append(f"{type(exc).__name__}: {exc}")
                            continue
                        samples[name].append(sample)
            for _ in range(args.iterations):  # Xvfb itself, with the slot's Chromium drawing the same page on it
                for name, extra in XVFB_VARIANTS.items():
                    with xvfb(layout.display, extra) as server:
                        measure(layout.display, layout.cdp_port, (), site, args.settle)
                        info = server.memory_full_info()
                        xvfb_memory[name].append((info.pss / MiB, info.uss / MiB))
    finally:
        release_slot_base(base)
    measured = [name for name in names if samples[name]]
    med = {
        name: Sample(*(statistics.median(getattr(s, f) for s in samples[name]) for f in ("pss", "uss", "processes")))
        for name in measured
    }
    if args.markdown:
        print("| variant | flags | PSS MiB median (min–max) | USS MiB median | processes | saving (PSS / USS) |")
        print("|---|---|---|---|---|---|")
    for name in names:
        flags = " ".join(f"`{f}`" for f in VARIANTS[name]) or "(slot flags as they are)"
        broken = f"page broke in {len(failures[name])} round(s): {failures[name][0][:80]}" if name in failures else ""
        if name not in med:
            print(f"| {name} | {flags} | – | – | – | {broken} |" if args.markdown else f"{name:20} {broken}")
            continue
        values = [s.pss for s in samples[name]]
        saving = (
            f"{med['baseline'].pss - med[name].pss:+.0f} / {med['baseline'].uss - med[name].uss:+.0f} MiB"
            if name != "baseline" and "baseline" in med
            else ""
        )
        saving = "; ".join(part for part in (saving, broken) if part)
        pss = f"{med[name].pss:.0f} ({min(values):.0f}–{max(values):.0f})"
        if args.markdown:
            print(f"| {name} | {flags} | {pss} | {med[name].uss:.0f} | {med[name].processes:.0f} | {saving} |")
        else:
            print(f"{name:20} PSS {pss:18} USS {med[name].uss:6.0f}  procs {med[name].processes:3.0f}  {saving}")
    if args.markdown:
        print("\n| X server | PSS MiB median (min–max) | USS MiB median |\n|---|---|---|")
    for name, pairs in xvfb_memory.items():
        pss_values = [v[0] for v in pairs]
        pss = f"{statistics.median(pss_values):.0f} ({min(pss_values):.0f}–{max(pss_values):.0f})"
        uss = f"{statistics.median(v[1] for v in pairs):.0f}"
        print(f"| {name} | {pss} | {uss} |" if args.markdown else f"{name:32} PSS {pss:18} USS {uss}")


if __name__ == "__main__":
    main()
