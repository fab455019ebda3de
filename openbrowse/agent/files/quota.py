"""The size cap of an owner's file area (spec §24.5 and §25.1: ``SLOT_DISK_MB`` for a session's or raw browser's
``data/sessions/{id}`` or ``data/browsers/{id}``).

Everything that brings bytes into a file area from a slot or a script checks the room left first: downloads moved
out of the slot, private copies of files a page was given, the script helper ``files.write``, recordings. Sizes are
apparent sizes (``st_size``): a sparse file counts for what a copy of it would write, not for the blocks it takes.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEFAULT_AREA_MB", "MIB", "AreaQuota", "apparent_bytes"]

MIB = 1024 * 1024
DEFAULT_AREA_MB = 1024
"""``SLOT_DISK_MB``'s default, for the parts built without settings (tests)."""


def apparent_bytes(root: Path) -> int:
    """The apparent sizes of the regular files below ``root`` added up (blocking; links are not followed)."""
    total = 0
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


@dataclass(frozen=True, slots=True)
class AreaQuota:
    """At most ``limit`` bytes in the file area ``root``."""

    root: Path
    limit: int

    @classmethod
    def of(cls, root: Path, limit_mb: int) -> AreaQuota:
        return cls(root, limit_mb * MIB)

    @property
    def limit_mb(self) -> int:
        return self.limit // MIB

    def room(self) -> int:
        """Bytes that may still be added (blocking: walks the area)."""
        return max(self.limit - apparent_bytes(self.root), 0)
