"""Resource caps of one slot's sandbox (spec §24.5): memory, processes and CPU, through the kernel's cgroups.

The host decides the flavour, detected once per process:

* cgroup v2 with controllers at ``/sys/fs/cgroup`` (``cgroup.controllers`` lists ``memory pids cpu``): one directory
  ``openbrowse/<instance>-<index>`` with ``memory.max``, ``memory.swap.max``, ``pids.max``, ``cpu.max``; an OOM kill
  shows up as ``oom_kill`` in ``memory.events``.
* cgroup v1 (our machines: a v1 hierarchy per controller, ``/sys/fs/cgroup/unified`` without controllers): the same
  directory under ``memory/``, ``pids/`` and ``cpu/``, with ``memory.limit_in_bytes``, ``pids.max`` and
  ``cpu.cfs_quota_us``; ``memory.oom_control`` counts ``oom_kill``.
* neither writable: no caps (a warning at the first slot; the sandbox itself still holds).

The CPU cap is an average, not a ceiling on every 100 ms: each group may also spend one period's unused quota in a
burst (``cpu.max.burst`` / ``cpu.cfs_burst_us``, kernel 5.14+), which a Chromium start, several processes busy at
once for half a second, uses (measured: ``docs/benchmarks.md``). The ``openbrowse`` parent keeps the default
weight: a heavier one made slot starts faster on a crowded host, but it also takes the CPU from the server process
(the API, the step loop) whenever the slots are busy, and the control plane must stay responsive under a hostile
page.

A process joins the group before it execs its real program: :meth:`SlotCgroup.join_argv` prefixes an argv with a
``/bin/sh`` that writes its own pid into every ``cgroup.procs`` and then ``exec``s, so every child it forks is born
inside. Nothing here polls; :meth:`SlotCgroup.oom_kills` is read by the slot's limit watcher.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import time
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

__all__ = ["CgroupFlavour", "CgroupLimits", "SlotCgroup", "cgroup_flavour"]

logger = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP_PARENT = "openbrowse"
V1_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000


class CgroupFlavour(StrEnum):
    V2 = "v2"
    V1 = "v1"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class CgroupLimits:
    memory_mb: int
    pids: int
    cpu: float


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


@cache
def cgroup_flavour(root: Path = CGROUP_ROOT) -> CgroupFlavour:
    """Which cgroup interface this host lets us use (cached for the process)."""
    controllers = root / "cgroup.controllers"
    if controllers.is_file():
        wanted = {"memory", "pids", "cpu"}
        if wanted <= set(controllers.read_text().split()) and _writable_dir(root):
            return CgroupFlavour.V2
    if all(_writable_dir(root / name) for name in V1_CONTROLLERS):
        return CgroupFlavour.V1
    return CgroupFlavour.NONE


def _write(path: Path, value: str) -> None:
    path.write_text(value)


class SlotCgroup:
    """The cgroup(s) of one slot. :meth:`create` sets the caps; :meth:`remove` deletes them once empty."""

    def __init__(self, name: str, limits: CgroupLimits, *, root: Path = CGROUP_ROOT) -> None:
        self.name = name
        self.limits = limits
        self.flavour = cgroup_flavour(root)
        self._root = root
        self._created = False

    @property
    def enabled(self) -> bool:
        return self.flavour is not CgroupFlavour.NONE

    def directories(self) -> list[Path]:
        """The group's directory per hierarchy (one for v2, one per controller for v1)."""
        if self.flavour is CgroupFlavour.V2:
            return [self._root / GROUP_PARENT / self.name]
        if self.flavour is CgroupFlavour.V1:
            return [self._root / controller / GROUP_PARENT / self.name for controller in V1_CONTROLLERS]
        return []

    def _directory(self, controller: str) -> Path:
        if self.flavour is CgroupFlavour.V2:
            return self._root / GROUP_PARENT / self.name
        return self._root / controller / GROUP_PARENT / self.name

    def create(self) -> None:
        """Create the group with its caps (blocking, tiny). A leftover group of the same name is reused."""
        if not self.enabled:
            return
        if self.flavour is CgroupFlavour.V2:
            parent = self._root / GROUP_PARENT
            parent.mkdir(exist_ok=True)
            with contextlib.suppress(OSError):  # let the children use the controllers
                _write(parent / "cgroup.subtree_control", "+memory +pids +cpu")
        for directory in self.directories():
            directory.mkdir(parents=True, exist_ok=True)
        memory = self.limits.memory_mb * 1024 * 1024
        quota = max(int(self.limits.cpu * CPU_PERIOD_US), 1000)
        if self.flavour is CgroupFlavour.V2:
            group = self._directory("memory")
            _write(group / "memory.max", str(memory))
            with contextlib.suppress(OSError):
                _write(group / "memory.swap.max", "0")
            _write(group / "pids.max", str(self.limits.pids))
            _write(group / "cpu.max", f"{quota} {CPU_PERIOD_US}")
            self._set_optional(group / "cpu.max.burst", str(quota))
        else:
            _write(self._directory("memory") / "memory.limit_in_bytes", str(memory))
            with contextlib.suppress(OSError):
                _write(self._directory("memory") / "memory.memsw.limit_in_bytes", str(memory))
            _write(self._directory("pids") / "pids.max", str(self.limits.pids))
            cpu = self._directory("cpu")
            _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
            _write(cpu / "cpu.cfs_quota_us", str(quota))
            self._set_optional(cpu / "cpu.cfs_burst_us", str(quota))
        self._created = True

    @staticmethod
    def _set_optional(path: Path, value: str) -> None:
        """A tuning knob an older kernel may lack: without it the slot only starts more slowly."""
        try:
            _write(path, value)
        except OSError as exc:
            logger.debug("Could not set %s to %s: %s", path, value, exc)

    def join_argv(self, argv: list[str]) -> list[str]:
        """``argv`` run by a shell that first moves itself into the group (so its children are born inside)."""
        if not self._created:
            return argv
        joins = " && ".join(f"echo $$ > {shlex.quote(str(d / 'cgroup.procs'))}" for d in self.directories())
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "sh", *argv]

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this group for going over the memory cap."""
        if not self._created:
            return 0
        name = "memory.events" if self.flavour is CgroupFlavour.V2 else "memory.oom_control"
        try:
            text = (self._directory("memory") / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def memory_bytes(self) -> int:
        """Memory charged to the group now (0 when unknown)."""
        if not self._created:
            return 0
        name = "memory.current" if self.flavour is CgroupFlavour.V2 else "memory.usage_in_bytes"
        try:
            return int((self._directory("memory") / name).read_text())
        except (OSError, ValueError):
            return 0

    def pids(self) -> list[int]:
        """Every process still in the group."""
        found: set[int] = set()
        for directory in self.directories():
            with contextlib.suppress(OSError, ValueError):
                found.update(int(line) for line in (directory / "cgroup.procs").read_text().split())
        return sorted(found)

    def remove(self, within: float = 2.0) -> None:
        """Delete the group's directories once their processes are gone (blocking; waits up to ``within`` s)."""
        if not self._created:
            return
        deadline = time.monotonic() + within
        for directory in self.directories():
            while True:
                try:
                    directory.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() >= deadline:
                        logger.warning("Could not remove cgroup %s: %s", directory, exc)
                        break
                    time.sleep(0.02)
        self._created = False
