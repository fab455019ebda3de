"""The two folders of a slot that its sandboxed Chromium shares with the server (spec §22.2, §24.6).

A slot's directory is bound into its sandbox at the same path, so a path under it names the same file on
both sides. ``uploads/`` holds what may be put into a page's file input, ``downloads/`` what the browser
saved. Containment is judged on real paths: a symbolic link never carries a path out of its folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BrowserFolders", "is_inside", "real_path_inside"]


@dataclass(frozen=True, slots=True)
class BrowserFolders:
    uploads: Path
    downloads: Path

    @property
    def file_input_roots(self) -> tuple[Path, Path]:
        """Where a file given to a page's file input (or dropped on it) may live."""
        return (self.uploads, self.downloads)

    def ensure(self) -> BrowserFolders:
        """Create both folders if they are missing (blocking, tiny); return self.

        A folder made here belongs to whoever owns the slot's directory: the sandbox's uid must write to it.
        """
        for folder in (self.uploads, self.downloads):
            folder.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(folder, 0o755)
            except FileExistsError:
                continue
            owner = os.stat(folder.parent)
            if os.geteuid() == 0 and owner.st_uid != 0:
                os.chown(folder, owner.st_uid, owner.st_gid, follow_symlinks=False)
        return self


def real_path_inside(path: str | os.PathLike[str], roots: Iterable[Path]) -> str | None:
    """``path``'s real path if it lies inside one of ``roots`` (each resolved too), else None.

    A relative ``path`` is refused: the browser would resolve it against a working directory nobody chose.
    """
    text = os.fspath(path)
    if not text or "\x00" in text or not os.path.isabs(text):
        return None
    real = os.path.realpath(text)
    for root in roots:
        real_root = os.path.realpath(root)
        if real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep):
            return real
    return None


def is_inside(path: str | os.PathLike[str], root: Path) -> bool:
    """True if ``path`` resolves (links followed) to ``root`` or something under it."""
    return real_path_inside(path, (root,)) is not None
