"""The process-wide temp dir, pointed at a run's folder while browser-use constructs its objects."""

from __future__ import annotations

import contextlib
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

_TEMP_DIR_LOCK = threading.Lock()


@contextlib.contextmanager
def temp_dir_inside(folder: Path) -> Iterator[None]:
    """browser-use creates scratch dirs under the temp dir while constructing objects; keep them in ``folder``.

    The temp dir is process-wide and engines run on threads of their own: the lock keeps two runs from restoring
    each other's folder. The body must not await (it holds a thread lock).
    """
    with _TEMP_DIR_LOCK:
        previous = tempfile.tempdir
        tempfile.tempdir = str(folder)
        try:
            yield
        finally:
            tempfile.tempdir = previous
