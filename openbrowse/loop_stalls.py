"""Who held the event loop: stacks of the loop's thread sampled while it stalls, aggregated by code location.

The loop-lag monitor (:mod:`openbrowse.loop_lag`) beats every sample interval. A watchdog thread sleeps until a
beat is :data:`STALL_THRESHOLD` overdue; if none came, the loop is held by whatever runs on it, so the watchdog
reads that thread's current frame and keeps reading it, every :data:`SAMPLE_PERIOD` at first and less often as
the stall goes on, until the loop beats again. Each stall is then charged to the site seen most often in its samples.

How a stack is read matters. A thread reading ``sys._current_frames`` needs the GIL, and the loop's thread gives
it up at the next blocking call (a socket send, a ``stat``) far sooner than at the switch interval, so such
samples would name the loop's cheap system calls instead of the Python that took the time. When the loop runs
in the main thread (uvicorn, pytest) the watchdog therefore sends that thread ``SIGPROF`` and the handler, which
Python runs on the loop between two bytecodes, records the frame it interrupted; elsewhere it falls back to
``sys._current_frames``.

A site names two frames: the innermost frame of the project's own code or browser-use (``owner``: what
decided to do the work) and the innermost frame of all (``where``: what the time was spent in, often a
library). :class:`StallBook` is pure (no threads, no clock) and unit-tested on its own.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import FrameType

STALL_THRESHOLD = 0.02
"""A beat this late (beyond the sample interval) is a stall worth a stack."""
SAMPLE_PERIOD = 0.01
MAX_SAMPLE_PERIOD = 0.16
"""The sample period doubles within a stall up to this: a long stall gets fewer samples, and fewer signals."""
OWNER_PREFIXES = ("openbrowse.", "browser_use.")
MAX_SITES = 200
"""Distinct sites remembered; later new sites are counted under :data:`OTHER`."""
OTHER = "other"
STACK_DEPTH = 40
MAX_SAMPLES = 500
"""Stacks kept of one stall (five seconds at the sample period); a longer stall is charged on those."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame as a dotted module, a function and a line."""

    module: str
    function: str
    line: int

    @property
    def label(self) -> str:
        return f"{self.module}.{self.function}"

    def __str__(self) -> str:
        return f"{self.module}.{self.function}:{self.line}"


@dataclass(frozen=True, slots=True)
class Site:
    owner: str
    where: str

    @property
    def label(self) -> str:
        return self.where if self.owner == self.where else f"{self.owner} > {self.where}"


@dataclass(slots=True)
class SiteFigures:
    """A site's stalls: how many, their summed and worst lag in seconds, and one stack that showed it."""

    stalls: int = 0
    samples: int = 0
    total: float = 0.0
    worst: float = 0.0
    stack: tuple[str, ...] = ()


def module_of(filename: str) -> str:
    """A dotted module name from a code file's path: the part after ``site-packages``, the project's package or
    the standard library's folder."""
    path = filename.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            path = path.rsplit(marker, 1)[1]
            break
    else:
        for package in ("/openbrowse/", "/tests/", "/bench/"):
            if package in path:
                path = package.strip("/") + "/" + path.rsplit(package, 1)[1]
                break
        else:
            stdlib = f"/python{sys.version_info.major}.{sys.version_info.minor}/"
            if stdlib in path:
                path = path.rsplit(stdlib, 1)[1]
    if path.endswith(".py"):
        path = path[:-3]
    return path.removesuffix("/__init__").replace("/", ".")


def frames_of(frame: FrameType | None, depth: int = STACK_DEPTH) -> list[Frame]:
    """The stack from ``frame`` outward, innermost first, at most ``depth`` frames."""
    found: list[Frame] = []
    while frame is not None and len(found) < depth:
        code = frame.f_code
        found.append(Frame(module_of(code.co_filename), code.co_name, frame.f_lineno))
        frame = frame.f_back
    return found


def site_of(stack: Sequence[Frame], owners: tuple[str, ...] = OWNER_PREFIXES) -> Site:
    """The site of a stack given innermost first; the owner is the innermost frame under one of ``owners``."""
    if not stack:
        return Site(OTHER, OTHER)
    where = stack[0].label
    owner = next((frame.label for frame in stack if frame.module.startswith(owners)), where)
    return Site(owner, where)


@dataclass
class StallBook:
    """Stalls charged to sites. Not thread-safe by itself: :class:`StallWatchdog` holds a lock around it."""

    max_sites: int = MAX_SITES
    sites: dict[Site, SiteFigures] = field(default_factory=dict)
    stalls: int = 0

    def charge(self, samples: Iterable[Sequence[Frame]], lag: float) -> Site:
        """Charge one stall of ``lag`` seconds, sampled as ``samples`` (stacks innermost first), to its most
        frequent site."""
        stacks = list(samples)
        counts = Counter(site_of(stack) for stack in stacks)
        site, seen = counts.most_common(1)[0] if counts else (Site(OTHER, OTHER), 0)
        if site not in self.sites and len(self.sites) >= self.max_sites:
            site = Site(OTHER, OTHER)
        figures = self.sites.setdefault(site, SiteFigures())
        figures.stalls += 1
        figures.samples += seen
        figures.total += lag
        if lag >= figures.worst:
            figures.worst = lag
            example = next((stack for stack in stacks if site_of(stack) == site), ())
            figures.stack = tuple(str(frame) for frame in example)
        self.stalls += 1
        return site

    def top(self, count: int) -> list[tuple[Site, SiteFigures]]:
        """The ``count`` sites with the most summed lag, worst first; the rest summed into one ``other`` row."""
        ranked = sorted(self.sites.items(), key=lambda item: item[1].total, reverse=True)
        head, tail = ranked[:count], ranked[count:]
        if tail:
            rest = SiteFigures()
            for _, figures in tail:
                rest.stalls += figures.stalls
                rest.samples += figures.samples
                rest.total += figures.total
                rest.worst = max(rest.worst, figures.worst)
            head.append((Site(OTHER, OTHER), rest))
        return head


class StallWatchdog:
    """The thread that samples the loop's stack while the loop misses its beat; :meth:`beat` is called on the loop."""

    def __init__(
        self, interval: float, threshold: float = STALL_THRESHOLD, sample_period: float = SAMPLE_PERIOD
    ) -> None:
        self._interval = interval
        self._threshold = threshold
        self._period = sample_period
        self._lock = threading.RLock()  # the signal handler takes it on the loop's thread, maybe inside beat()
        self._book = StallBook()
        self._last_beat = time.monotonic()
        self._beats = 0
        self._lag = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._loop_thread = 0
        self._signalled: list[list[Frame]] = []
        self._handled = 0
        self._previous_handler: signal._HANDLER = signal.SIG_DFL
        self._installed = False

    def start(self) -> None:
        """Watch the calling thread (the loop's)."""
        self._loop_thread = threading.get_ident()
        self._last_beat = time.monotonic()
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGPROF, self._on_signal)
            self._installed = True
        self._thread = threading.Thread(target=self._watch, name="loop-stall-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """End the watchdog (blocking: joins its thread); the signal handler is put back by :meth:`restore`."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def restore(self) -> None:
        """Put back the previous ``SIGPROF`` handler (on the loop's thread, after :meth:`stop`)."""
        if self._installed:
            signal.signal(signal.SIGPROF, self._previous_handler or signal.SIG_DFL)
            self._installed = False

    def _on_signal(self, _signum: int, frame: FrameType | None) -> None:
        with self._lock:
            self._handled += 1
            if len(self._signalled) < MAX_SAMPLES:
                self._signalled.append(frames_of(frame))

    def beat(self, lag: float) -> None:
        """The loop woke its timer ``lag`` seconds late."""
        with self._lock:
            self._last_beat = time.monotonic()
            self._beats += 1
            self._lag = lag

    def top(self, count: int) -> list[tuple[Site, SiteFigures]]:
        with self._lock:
            return [(site, _copy(figures)) for site, figures in self._book.top(count)]

    def _watch(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                beats, due = self._beats, self._last_beat + self._interval + self._threshold
            if self._stop.wait(max(0.0, due - time.monotonic())):
                return
            by_signal = self._installed
            with self._lock:
                self._signalled = []
                sent = self._handled
            samples: list[list[Frame]] = []
            taken = 0
            while not self._stop.is_set():
                with self._lock:
                    if self._beats != beats:
                        stacks = self._signalled if by_signal else samples
                        if stacks:
                            self._book.charge(stacks, self._lag)
                        self._signalled = []
                        break
                if by_signal:
                    # A new signal only once the last one was handled: a thread in a long system call or C code
                    # (a fork above all, which the kernel restarts when a signal arrives) is interrupted once.
                    with self._lock:
                        handled = self._handled
                    if handled >= sent:
                        sent = handled + 1
                        signal.pthread_kill(self._loop_thread, signal.SIGPROF)
                else:
                    frame = sys._current_frames().get(self._loop_thread)
                    if frame is None:
                        return  # the loop's thread ended
                    if len(samples) < MAX_SAMPLES:
                        samples.append(frames_of(frame))
                    del frame
                taken += 1
                self._stop.wait(min(self._period * (1 << min(taken, 4)), MAX_SAMPLE_PERIOD))


def _copy(figures: SiteFigures) -> SiteFigures:
    return SiteFigures(figures.stalls, figures.samples, figures.total, figures.worst, figures.stack)
