"""A slot's writable area as a filesystem of its own, with a hard size (spec §24.5 ``SLOT_DISK_MB``).

Why a filesystem. Counting what a slot wrote (walking its directory) can be fooled (a sparse file takes no blocks,
a file written and deleted between two walks is never seen) and only notices after the fact. A size-limited
filesystem is enforced by the kernel on every write, whoever writes: Chromium (profile, cache, downloads), the
script host, and Chromium's scratch space (its ``TMPDIR``: with ``--disable-dev-shm-usage`` its shared memory files
go there too). A write past the cap fails with ``ENOSPC``.

Why tmpfs (measured on our 2-core Debian 12 machine): mounting a tmpfs with ``size=`` takes under 1 ms and unmounting
it under 1 ms whatever it holds; a loop-mounted ext4 image took 12 ms (``truncate`` + ``mkfs.ext4`` without journal)
+ 8 ms (``losetup`` + ``mount``) to set up, and its unmount writes back whatever is dirty (up to the whole cap) and
leaves an image file and a loop device to clean up after a crash. Both are paid when the slot (or its warm spare)
starts, never on a warm start. The price of tmpfs: its pages are memory, charged to the memory cgroup of the process
that writes them. Slot processes write from the slot's cgroup, so what a slot stores counts against its
``SLOT_MEMORY_MB`` too: a slot can never hold more than its memory cap in processes *and* files together, and the
host's memory is bounded by the slots' memory caps alone (files the server copies in, uploads, are charged to the
server). Chromium's disk cache lives in that area as well; it is capped at 1/16 of ``SLOT_DISK_MB`` (see
:func:`disk_cache_flags`) so that it never crowds out pages and downloads.

The layout: one tmpfs at the slot's directory (``data/run/slots/slot-<i>``: profile, ``downloads/``, ``uploads/``),
and the slot's scratch dir (:func:`~.slot_files.scratch_dir`, a short path in ``/tmp`` because Chromium puts Unix
sockets there) as a bind mount of that tmpfs' ``.scratch/`` folder: one cap for both. At teardown both are detached
(``MNT_DETACH``: nothing can keep them busy); at start-up the mounts a crashed process of this instance left are
detached the same way (:func:`release_stale_mounts`).

Without the sandbox (no root, or ``ALLOW_UNSANDBOXED``) slots run on plain directories: nothing caps what they write,
and :func:`report_disk_cap` says so in the start-up log and ``/health/details``; the copies into the owner's file area
are still capped. Where a sandboxed slot's mount fails, the limit watcher counts what it finds instead (:mod:`.limits`,
apparent sizes so a sparse file counts in full).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import shutil
from functools import cache
from pathlib import Path

__all__ = [
    "SCRATCH_FOLDER",
    "disk_cache_flags",
    "disk_cap_problem",
    "disk_usage",
    "mount_area",
    "release_stale_mounts",
    "report_disk_cap",
    "unmount_area",
]

logger = logging.getLogger(__name__)

SCRATCH_FOLDER = ".scratch"
"""The folder of the slot's filesystem that is bound at its scratch dir."""
_MS_NOSUID, _MS_NODEV, _MS_BIND = 0x2, 0x4, 0x1000
_MNT_DETACH, _UMOUNT_NOFOLLOW = 0x2, 0x8


@cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    return libc


def _mount(source: str, target: Path, fstype: str | None, flags: int, data: str | None) -> None:
    result = _libc().mount(
        source.encode(),
        os.fsencode(target),
        fstype.encode() if fstype else None,
        flags,
        data.encode() if data else None,
    )
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {fstype or 'bind'} at {target}: {os.strerror(code)}")


def _unmount(target: Path) -> bool:
    """Detach the mount at ``target``; False when there is none (blocking)."""
    if _libc().umount2(os.fsencode(target), _MNT_DETACH | _UMOUNT_NOFOLLOW) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOENT):  # not a mount point (any more), or gone
        return False
    raise OSError(code, f"umount {target}: {os.strerror(code)}")


@cache
def disk_cap_problem() -> str | None:
    """Why slot areas cannot be size-limited filesystems here, or None when they can (blocking; cached)."""
    if os.geteuid() != 0:
        return "the server does not run as root, which mounting a slot's size-limited filesystem needs"
    return None


def report_disk_cap(sandbox_problem: str | None) -> list[str]:
    """Say at start-up (logged, and returned for ``/health/details``) when slots get no size-limited filesystem."""
    problem = sandbox_problem or disk_cap_problem()
    if problem is None:
        return []
    warning = (
        f"Slots get no size-limited filesystem because {problem}: what a browser or script writes in its slot is "
        "not capped by SLOT_DISK_MB (what is copied into a session's or browser's file area still is)"
    )
    logger.warning("%s", warning)
    return [warning]


def mount_area(directory: Path, scratch: Path, size_mb: int, owner_uid: int | None) -> None:
    """A fresh tmpfs of ``size_mb`` MiB at the (existing, empty) ``directory``, its ``.scratch/`` bound at the
    (existing, empty) ``scratch``; both handed to ``owner_uid`` (blocking, about 1 ms). On failure nothing stays
    mounted."""
    _mount("openbrowse-slot", directory, "tmpfs", _MS_NOSUID | _MS_NODEV, f"size={size_mb}m,mode=0755")
    try:
        inner = directory / SCRATCH_FOLDER
        inner.mkdir(mode=0o700)
        if owner_uid is not None:
            os.chown(directory, owner_uid, owner_uid)
            os.chown(inner, owner_uid, owner_uid)
        _mount(str(inner), scratch, None, _MS_BIND, None)
    except BaseException:
        _unmount(directory)
        raise


def unmount_area(directory: Path, scratch: Path) -> int | None:
    """Detach the scratch bind and the slot's tmpfs and remove the scratch mount point (blocking, well under 1 ms).

    Return a descriptor that still holds the detached tmpfs (None if there was none to hold): its memory is freed
    when the descriptor is closed, which takes about 0.5 ms per MiB stored, so the caller closes it in the
    background and the slot's paths are free at once."""
    try:
        held: int | None = os.open(directory, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        held = None
    try:
        _unmount(scratch)
        _unmount(directory)
    except BaseException:
        if held is not None:
            os.close(held)
        raise
    try:
        scratch.rmdir()
    except FileNotFoundError:
        pass
    except OSError as exc:
        logger.warning("Could not remove the scratch mount point %s: %s", scratch, exc)
    return held


def _mount_points() -> list[Path]:
    points: list[Path] = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
        for line in table:
            fields = line.split(" ")
            if len(fields) > 4:  # the mount point is field 5, with spaces and such escaped as \\ooo
                points.append(Path(fields[4].encode("latin-1", "surrogateescape").decode("unicode_escape")))
    return points


def release_stale_mounts(slots_dir: Path, scratch_pattern: str) -> list[Path]:
    """Detach what an earlier process of this instance left mounted: anything under ``slots_dir`` and the scratch
    dirs in ``/tmp`` named like ``scratch_pattern`` (a glob). Deepest first; return what was detached (blocking)."""
    if disk_cap_problem() is not None:
        return []
    scratch = Path(scratch_pattern)
    stale = [
        point
        for point in _mount_points()
        if point.is_relative_to(slots_dir) or (point.parent == scratch.parent and point.match(scratch.name))
    ]
    released: list[Path] = []
    for point in sorted(set(stale), key=lambda path: len(path.parts), reverse=True):
        try:
            if _unmount(point):
                released.append(point)
        except OSError as exc:
            logger.warning("Could not detach the stale slot mount %s: %s", point, exc)
    if released:
        logger.warning("Detached %d slot mount(s) left by an earlier run: %s", len(released), released)
    return released


def disk_usage(directory: Path) -> tuple[int, int]:
    """``(used, size)`` in bytes of the filesystem at ``directory`` (blocking, one ``statvfs``)."""
    usage = shutil.disk_usage(directory)
    return usage.used, usage.total


def disk_cache_flags(size_mb: int) -> list[str]:
    """Chromium's HTTP cache capped at 1/16 of the slot's area (it sizes itself by the free space otherwise)."""
    return [f"--disk-cache-size={max(size_mb // 16, 1) * 1024 * 1024}"]
