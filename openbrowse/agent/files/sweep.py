"""The session's files as a sink of the redactor (spec §25.3).

Scripts, drafts, readouts, answer files and downloads land in the session's file area from several writers, some
of them inside the sandbox (a script can write any file there), so rather than trusting each writer the area is
swept: after every step, at the end of each turn and when the run closes, every regular file changed since the
last sweep is rewritten with the session's secrets hidden. Binary files are not spared: a value in them is still
the value, and a file that held a secret is better spoilt than served. The one exception is ``recordings/``: the
recorder writes there from outside the page's reach (screen pixels, not text), and rewriting a video while ffmpeg
appends to it would spoil the whole recording.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from openbrowse.domain.redaction import Redactor

__all__ = ["FileSweep"]

UNSWEPT_FOLDERS = frozenset({"recordings"})

logger = logging.getLogger(__name__)


class FileSweep:
    """Remembers what it has seen (by size and mtime) so each sweep reads only what changed."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._seen: dict[str, tuple[int, int]] = {}

    def sweep(self, redactor: Redactor) -> list[str]:
        """Redact every changed file under the root (blocking); returns the paths that were rewritten."""
        if not redactor or not self._root.is_dir():
            return []
        rewritten = []
        for folder, dirs, files in os.walk(self._root, followlinks=False):
            top = folder == str(self._root)
            dirs[:] = [
                name
                for name in dirs
                if not os.path.islink(os.path.join(folder, name)) and not (top and name in UNSWEPT_FOLDERS)
            ]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    if self._redact_file(path, redactor):
                        rewritten.append(path)
                except OSError:
                    logger.warning("Could not redact %s", path, exc_info=True)
        return rewritten

    def _redact_file(self, path: str, redactor: Redactor) -> bool:
        info = os.lstat(path)
        if not os.path.isfile(path) or os.path.islink(path):
            return False
        stamp = (info.st_size, info.st_mtime_ns)
        if self._seen.get(path) == stamp:
            return False
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
        with os.fdopen(fd, "r+b") as handle:
            data = handle.read()
            cleaned = redactor.data(data)
            if cleaned != data:
                handle.seek(0)
                handle.write(cleaned)
                handle.truncate()
        after = os.lstat(path)
        self._seen[path] = (after.st_size, after.st_mtime_ns)
        return cleaned != data
