"""What a slot's children inherit and where their files go: the environment built for them, Chromium's scratch
dir under /tmp, and the janitor that deletes a used slot directory (the profile) in the background.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from openbrowse.shielding import run_shielded
from openbrowse.slots.ledger import TAG_ENV, instance_id
from openbrowse.slots.slot_disk import release_stale_mounts

__all__ = [
    "INHERITED_ENV",
    "RUN_SCRATCH",
    "DirectoryJanitor",
    "child_environment",
    "release_slot_mounts",
    "remove_scratch_dirs",
    "scratch_dir",
    "scratch_root",
]

logger = logging.getLogger(__name__)

# The only variables of the service's environment a slot's children see (spec §24.3): where programs are, the
# language and the time zone. Everything else is built for the child (HOME, TMPDIR, DISPLAY, XDG dirs); in
# particular no proxy variable (HTTP(S)_PROXY may carry credentials, and Chromium's one way out is the egress
# enforcer, given as --proxy-server), no key, no token.
INHERITED_ENV = frozenset({"PATH", "LANG", "LANGUAGE", "TZ"})
FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"

RUN_SCRATCH = Path("/run/openbrowse")
"""Where a root server keeps its slots' scratch dirs: ``/run`` is root's, so no other user can plant a name there
(in ``/tmp`` anyone could create an instance's predictable path first)."""


def scratch_root(run_dir: Path) -> Path:
    """The parent of this instance's scratch dirs: ``/run/openbrowse/scratch-<instance>`` for a root server (every
    sandboxed one), ``/tmp/openbrowse-<instance>`` for an unsandboxed one that cannot write ``/run``."""
    if os.geteuid() == 0:
        return RUN_SCRATCH / f"scratch-{instance_id(run_dir)}"
    return Path("/tmp") / f"openbrowse-{instance_id(run_dir)}"


def scratch_dir(run_dir: Path, index: int) -> Path:
    """Chromium's TMPDIR for one slot (inside its sandbox too). Short on purpose: Chromium puts its SingletonSocket
    there, and a Unix socket path must fit in 108 bytes. A sandboxed slot's scratch dir is a bind of its size-limited
    filesystem (:mod:`.slot_disk`), so what is written here counts towards ``SLOT_DISK_MB``. Chromium leaves
    ``org.chromium.*`` dirs behind when it is killed, so the slot removes the whole dir at teardown."""
    return scratch_root(run_dir) / str(index)


def release_slot_mounts(run_dir: Path) -> list[Path]:
    """Detach the slot filesystems (:mod:`.slot_disk`) a previous process of this instance left (blocking)."""
    return release_stale_mounts(run_dir / "slots", str(scratch_root(run_dir) / "*"))


def remove_scratch_dirs(run_dir: Path) -> None:
    """Chromium temp dirs a previous process of this instance left, and the slot filesystems still mounted
    (blocking)."""
    release_slot_mounts(run_dir)
    shutil.rmtree(scratch_root(run_dir), ignore_errors=True)


def child_environment(tag: str) -> dict[str, str]:
    """The environment of a slot's children, built from scratch: ``PATH``, the locale and time zone of the
    service (:data:`INHERITED_ENV`, ``LC_*``), ``HOME`` (the sandbox replaces it with the slot's own), and the slot
    tag. Nothing else of the server's environment reaches a slot."""
    env = {key: value for key, value in os.environ.items() if key in INHERITED_ENV or key.startswith("LC_")}
    env.setdefault("PATH", FALLBACK_PATH)
    env["HOME"] = os.path.expanduser("~")  # unsandboxed children run as the server's user (not a secret)
    env[TAG_ENV] = tag
    return env


class DirectoryJanitor:
    """Moves a used slot directory out of the way at once and deletes it in the background.

    Deleting a used profile (~200 files) takes 0.3 s on a disk mounted with ``discard``; renaming it takes
    microseconds, so a stop hands the slot on at once. The deletions run one after another in a task the janitor
    owns; :meth:`aclose` waits for them. A process that dies first leaves the trash to the pool's start-up
    cleanup, which wipes the whole ``slots`` directory.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._serial = 0
        self._task: asyncio.Task[None] | None = None

    def close_later(self, fd: int) -> None:
        """Close ``fd`` in the background: the last hold on a detached slot filesystem, whose memory is freed then
        (:func:`~.slot_disk.unmount_area`)."""
        self._chain(lambda: os.close(fd))

    def _chain(self, work: Callable[[], None]) -> None:
        previous = self._task

        async def run() -> None:
            if previous is not None:
                await previous
            await asyncio.to_thread(work)

        self._task = asyncio.get_running_loop().create_task(run(), name=f"{self._name}-janitor")

    def discard(self, directory: Path) -> None:
        if not directory.exists():
            return
        self._serial += 1
        trash = directory.with_name(f".trash-{directory.name}-{os.getpid()}-{self._serial}")
        try:
            directory.rename(trash)
        except OSError:
            logger.exception("%s: could not move %s aside; deleting it in place", self._name, directory)
            trash = directory
        self._chain(lambda: shutil.rmtree(trash, True))

    async def aclose(self) -> None:
        """Wait until every directory handed over so far is deleted."""
        if self._task is not None:
            await run_shielded(self._task)
