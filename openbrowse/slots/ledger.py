"""Crash safety for slot children: a ledger of what we spawned, and start-up cleanup of what a dead owner left.

Three independent ways to recognise a leftover, so that a ``kill -9`` of the service never leaves a browser a
later session could attach to (a known peer attaches to the old Chromium on 9222 after a crash):

1. **The ledger** ``<run_dir>/slots-ledger.json``: pid, process start time, process name and argv[0] of every
   child, written when it is spawned and removed when it is reaped, plus the user-data dirs in use. An entry is
   only acted on when pid, start time *and* name still match, so a reused pid is never killed.
2. **The environment tag** ``OPENBROWSE_SLOT_TAG=<instance>/<slot>`` that every child inherits, down to
   Chromium's ``chrome_crashpad_handler`` processes (which live in their own process groups, reparented to
   PID 1). ``<instance>`` is a hash of the run dir, so another instance's processes never match.
3. **The ports** of this instance's slots: a listener on a VNC, noVNC or CDP port that is an Xvfb, x11vnc,
   websockify or Chromium process is killed.

Stale X lock files (``/tmp/.X<n>-lock``) and sockets of our displays are removed when their owner is dead, and
the per-slot user-data dirs are wiped. A ``flock`` on ``<run_dir>/slots.lock`` makes sure two live processes
never share (and clean up under) one run dir; the kernel drops it when its holder dies, even by SIGKILL.

Everything here is blocking (``/proc`` scans, small file writes): the pool runs the cleanup through
``asyncio.to_thread``; ledger updates are a sub-millisecond write of a small JSON file.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from openbrowse.errors import ConfigError
from openbrowse.slots.layout import slot_layout
from openbrowse.slots.sysv_shm import remove_orphan_segments
from openbrowse.slots.x_files import remove_dead_x_files

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from openbrowse.slots.process import ManagedProcess

__all__ = [
    "TAG_ENV",
    "CleanupReport",
    "Ledger",
    "cleanup_leftovers",
    "instance_id",
    "kill_tagged",
    "remove_recorded_x_files",
    "slot_tag",
    "tagged_processes",
]

logger = logging.getLogger(__name__)

TAG_ENV = "OPENBROWSE_SLOT_TAG"
LEDGER_NAME = "slots-ledger.json"
LOCK_NAME = "slots.lock"
SLOT_PROCESS_WORDS = ("xvfb", "x11vnc", "websockify", "chrom", "bwrap", "nsenter", "socat")
_CREATE_TIME_TOLERANCE = 0.05


def instance_id(run_dir: Path) -> str:
    """A short stable id for the instance that owns ``run_dir``."""
    return hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:12]


def slot_tag(run_dir: Path, index: int) -> str:
    return f"{instance_id(run_dir)}/{index}"


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    pid: int
    create_time: float
    name: str
    argv0: str
    kind: str
    slot: int


@dataclass
class CleanupReport:
    killed: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    wiped_dirs: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.killed or self.removed_files or self.wiped_dirs)


class Ledger:
    """The on-disk list of live slot children of this process, and the run-dir lock."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LEDGER_NAME
        self.lock_path = run_dir / LOCK_NAME
        self._entries: dict[int, LedgerEntry] = {}
        self._dirs: set[str] = set()
        self._lock_fd: int | None = None

    # -- lock -----------------------------------------------------------------------------------------------
    def lock(self) -> None:
        """Take the run-dir lock or raise :class:`ConfigError` if another live process holds it."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)  # non-inheritable: children never hold it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_text(self.lock_path).strip() or "?"
            os.close(fd)
            raise ConfigError(
                f"Another OpenBrowse process (pid {holder}) is using {self.run_dir}; "
                "give each instance its own OPENBROWSE_DATA_DIR"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._lock_fd = fd

    def unlock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)  # closing releases the flock

    # -- entries --------------------------------------------------------------------------------------------
    def record(self, process: ManagedProcess, *, kind: str, slot: int) -> None:
        try:
            info = psutil.Process(process.pid)
            entry = LedgerEntry(process.pid, info.create_time(), info.name(), process.argv[0], kind, slot)
        except psutil.Error:
            return  # already gone
        self._entries[process.pid] = entry
        self._write()

    def forget(self, pid: int) -> None:
        if self._entries.pop(pid, None) is not None:
            self._write()

    def add_dir(self, path: Path) -> None:
        self._dirs.add(str(path))
        self._write()

    def remove_dir(self, path: Path) -> None:
        self._dirs.discard(str(path))
        self._write()

    @property
    def entries(self) -> list[LedgerEntry]:
        return list(self._entries.values())

    def reset(self) -> None:
        self._entries.clear()
        self._dirs.clear()
        self._write()

    def _write(self) -> None:
        document = {
            "owner": {"pid": os.getpid(), "create_time": _own_create_time()},
            "processes": [vars_of(entry) for entry in self._entries.values()],
            "user_data_dirs": sorted(self._dirs),
        }
        tmp = self.path.with_suffix(".tmp")
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(document, indent=1))
            tmp.replace(self.path)
        except OSError:
            logger.exception("Could not write the slot ledger %s", self.path)

    @staticmethod
    def load(path: Path) -> tuple[list[LedgerEntry], list[str]]:
        try:
            document = json.loads(path.read_text())
            entries = [LedgerEntry(**item) for item in document.get("processes", [])]
            dirs = [str(d) for d in document.get("user_data_dirs", [])]
        except FileNotFoundError:
            return [], []
        except (OSError, ValueError, TypeError) as exc:
            logger.warning("Ignoring unreadable slot ledger %s: %s", path, exc)
            return [], []
        return entries, dirs


def vars_of(entry: LedgerEntry) -> dict[str, Any]:
    return {
        "pid": entry.pid,
        "create_time": entry.create_time,
        "name": entry.name,
        "argv0": entry.argv0,
        "kind": entry.kind,
        "slot": entry.slot,
    }


_OWN_CREATE_TIME: float | None = None


def _own_create_time() -> float:
    global _OWN_CREATE_TIME
    if _OWN_CREATE_TIME is None:
        _OWN_CREATE_TIME = psutil.Process().create_time()
    return _OWN_CREATE_TIME


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _alive(proc: psutil.Process) -> bool:
    try:
        return bool(proc.is_running()) and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _tag_of(proc: psutil.Process) -> str | None:
    try:
        tag = proc.environ().get(TAG_ENV)
    except psutil.Error:
        return None
    return str(tag) if tag is not None else None


def _tagged(prefix: str) -> Iterator[psutil.Process]:
    """Live processes whose tag equals ``prefix`` or starts with ``prefix + '/'`` (never this process)."""
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        tag = _tag_of(proc)
        if tag is not None and (tag == prefix or tag.startswith(prefix + "/")) and _alive(proc):
            yield proc


def _describe(proc: psutil.Process) -> str:
    try:
        return f"{proc.name()} (pid {proc.pid})"
    except psutil.Error:
        return f"pid {proc.pid}"


def _kill(procs: Iterable[psutil.Process], timeout: float = 5.0) -> list[str]:
    """SIGKILL each process (and its group when it leads one); wait until they are gone or zombies."""
    victims: dict[int, psutil.Process] = {}
    for proc in procs:
        victims.setdefault(proc.pid, proc)
    creators: dict[int, float] = {}
    for proc in victims.values():
        with contextlib.suppress(psutil.Error):
            for member in (proc, *proc.children(recursive=True)):
                creators[member.pid] = member.create_time()
    killed: list[str] = []
    for proc in victims.values():
        killed.append(_describe(proc))
        with contextlib.suppress(ProcessLookupError, PermissionError, psutil.Error):
            if os.getpgid(proc.pid) == proc.pid and proc.pid != os.getpgid(0):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + timeout
    pending = [p for p in victims.values() if _alive(p)]
    while pending and time.monotonic() < deadline:
        time.sleep(0.02)
        pending = [p for p in pending if _alive(p)]
    for proc in pending:
        logger.error("Leftover %s did not die after SIGKILL", _describe(proc))
    remove_orphan_segments(creators)  # a SIGKILLed x11vnc leaves its ~60 SysV segments behind
    return killed


def tagged_processes(tag: str) -> list[psutil.Process]:
    """Live processes carrying ``tag`` (or a sub-tag of it) in their environment."""
    return list(_tagged(tag))


def kill_tagged(tag: str) -> list[str]:
    """Kill every live process carrying ``tag`` (e.g. crashpad handlers that outlived their Chromium)."""
    return _kill(list(_tagged(tag)))


def _ledger_leftovers(entries: Iterable[LedgerEntry]) -> Iterator[psutil.Process]:
    orphaned_groups: dict[int, float] = {}
    for entry in entries:
        try:
            proc = psutil.Process(entry.pid)
            same = abs(proc.create_time() - entry.create_time) < _CREATE_TIME_TOLERANCE and proc.name() == entry.name
        except psutil.NoSuchProcess:
            orphaned_groups[entry.pid] = entry.create_time
            continue
        except psutil.Error:
            continue
        if same and _alive(proc):
            yield proc
        elif same:
            orphaned_groups[entry.pid] = entry.create_time  # a zombie leader: its group may live on
        else:
            logger.info("Ledger pid %d (%s) now belongs to another process; leaving it alone", entry.pid, entry.name)
    if orphaned_groups:
        yield from _group_members(orphaned_groups)


def _group_members(groups: dict[int, float]) -> Iterator[psutil.Process]:
    """Slot programs still in the process group of a dead leader (e.g. Chromium helpers whose environment
    was overwritten by their process title, so the tag cannot find them). Members are younger than the leader."""
    for proc in psutil.process_iter():
        try:
            pgid = os.getpgid(proc.pid)
            leader_started = groups.get(pgid)
            if leader_started is None or proc.create_time() + _CREATE_TIME_TOLERANCE < leader_started:
                continue
        except (OSError, psutil.Error):
            continue
        if _is_slot_program(proc) and _alive(proc):
            yield proc


def _is_slot_program(proc: psutil.Process) -> bool:
    try:
        words = " ".join([proc.name(), *proc.cmdline()[:2]]).lower()
    except psutil.Error:
        return False
    return any(word in words for word in SLOT_PROCESS_WORDS)


def remove_recorded_x_files(entries: Iterable[LedgerEntry]) -> list[str]:
    """Remove the X files each recorded (and now dead) Xvfb left: see :func:`remove_dead_x_files`."""
    removed: list[str] = []
    for entry in entries:
        if entry.kind == "Xvfb" and not _pid_alive(entry.pid):
            removed += remove_dead_x_files(slot_layout(entry.slot), entry.pid)
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        return _alive(psutil.Process(pid))
    except psutil.Error:
        return False


def cleanup_leftovers(ledger_path: Path, run_dir: Path, slots_dir: Path) -> CleanupReport:
    """Kill what a previous process of this instance left behind and remove its files (blocking).

    Only what this instance recorded is touched: ledger entries (pid, start time and name all matching), the
    process groups of dead ledger leaders, processes carrying this instance's environment tag, X lock files
    our recorded Xvfb wrote, and directories under the run dir. A foreign program on a slot's port or display
    is never killed (the pool skips that slot, see :mod:`openbrowse.slots.foreign`). No step's failure (e.g. a
    ``PermissionError`` for a non-root service) stops start-up: it is logged and the next step runs.
    """
    report = CleanupReport()
    entries, dirs = Ledger.load(ledger_path)
    try:
        victims = [*_ledger_leftovers(entries), *_tagged(instance_id(run_dir))]
    except (OSError, psutil.Error) as exc:
        logger.warning("Could not look for processes left by an earlier run: %s", exc)
        victims = []
    if victims:
        report.killed = _kill(victims)
        logger.warning("Killed %d process(es) left by an earlier run: %s", len(report.killed), report.killed)
    report.removed_files += remove_recorded_x_files(entries)
    for directory in {*dirs, str(slots_dir)}:
        path = Path(directory)
        if not path.resolve().is_relative_to(run_dir.resolve()):
            logger.warning("Not wiping %s from the ledger: it is outside %s", path, run_dir)
            continue
        try:
            exists = path.exists()
        except OSError as exc:
            logger.warning("Could not look at %s: %s", path, exc)
            continue
        if exists:
            shutil.rmtree(path, ignore_errors=True)
            report.wiped_dirs.append(directory)
    return report
