"""SlotTraces: what a slot leaves on the machine, made fresh before each start and cleared after each teardown.

Before a start the slot's directory (the profile, ``downloads/``, ``uploads/``) and its scratch dir are wiped and
made empty, and the directory is registered with the ledger so a crashed server's successor can remove it. A
sandboxed slot then gets both as one size-limited filesystem (:mod:`.slot_disk`).
After the children are gone, anything still carrying the slot's environment tag is killed (Chromium's crashpad
handlers run in their own process groups), SysV shared-memory segments whose creator was killed (x11vnc) are
removed, the filesystem is detached (its contents go with it) or, without one, the scratch dir is deleted and the
directory handed to a background janitor (:mod:`.slot_files`).
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from openbrowse.slots.chromium import prepare_fresh_dir
from openbrowse.slots.ledger import kill_tagged
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.slot_disk import disk_cap_problem, mount_area, unmount_area
from openbrowse.slots.slot_files import DirectoryJanitor
from openbrowse.slots.sysv_shm import KilledCreators, remove_orphan_segments

if TYPE_CHECKING:
    from openbrowse.slots.ledger import Ledger

__all__ = ["SlotTraces"]

logger = logging.getLogger(__name__)


class SlotTraces:
    """The files and leftovers of slot ``index``; :meth:`aclose` waits for the janitor's deletions."""

    def __init__(self, index: int, tag: str, directory: Path, temp_dir: Path, ledger: Ledger | None) -> None:
        self.index = index
        self.tag = tag
        self.directory = directory
        self.temp_dir = temp_dir
        self._ledger = ledger
        self._janitor = DirectoryJanitor(f"slot-{index}")
        self._killed = KilledCreators()
        self.capped = False
        """True while the directory and scratch dir are the slot's size-limited filesystem."""

    async def prepare(self, folders: Sequence[Path], cap: tuple[int, int] | None = None) -> None:
        """Fresh, empty directories for a start; ``folders`` are made inside the slot directory afterwards. With
        ``cap`` (a sandboxed slot: MiB and the slot's uid) both become one filesystem of that size, owned by that
        uid, where the host allows it."""
        if self._ledger is not None:
            self._ledger.add_dir(self.directory)
        # the sandbox binds the fresh dirs (and hands them to its uid), so they come first
        await asyncio.to_thread(prepare_fresh_dir, self.directory)
        await asyncio.to_thread(prepare_fresh_dir, self.temp_dir)
        if cap is not None and disk_cap_problem() is None:
            try:
                await asyncio.to_thread(mount_area, self.directory, self.temp_dir, *cap)
            except OSError as exc:
                logger.warning(
                    "Slot %d: no size-limited filesystem (%s); its disk use is counted instead", self.index, exc
                )
            else:
                self.capped = True
        for folder in folders:
            folder.mkdir()

    def child_exited(self, process: ManagedProcess) -> None:
        if process.returncode is not None and process.returncode < 0:  # killed: x11vnc leaves its SysV shm
            self._killed.killed(process.pid, process.started_at)

    async def clear(self) -> None:
        """Once every child is closed: kill tagged leftovers, free orphaned segments, remove the directories."""
        try:
            leftovers = await asyncio.to_thread(kill_tagged, self.tag)
        except Exception:
            logger.exception("Slot %d: sweeping tagged leftovers failed", self.index)
        else:
            if leftovers:
                logger.debug("Slot %d: killed leftover helpers %s", self.index, leftovers)
        if killed := self._killed.take():  # Xvfb is gone: nothing holds their segments any more
            await asyncio.to_thread(remove_orphan_segments, killed)
        if self.capped:
            self.capped = False
            held = await asyncio.to_thread(unmount_area, self.directory, self.temp_dir)
            if held is not None:
                self._janitor.close_later(held)
        await asyncio.to_thread(shutil.rmtree, self.temp_dir, True)
        self._janitor.discard(self.directory)
        if self._ledger is not None:
            self._ledger.remove_dir(self.directory)

    async def aclose(self) -> None:
        """Wait until the old slot directories are deleted."""
        await self._janitor.aclose()
