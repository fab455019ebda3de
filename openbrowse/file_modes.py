"""The startup check of spec §25.4: ``.env`` and the data files must not be open to other users.

``.env`` holds the API key and the provider keys; the data directory holds every session's files and the
database, whose rows hold ``sensitiveData`` until their session ends. This server creates them private (0700 and
0600); files made before, by hand or by an older version, keep their modes, and each one that its group or other
users can read gets a warning in the startup log and in ``/health/details``. Nothing is changed: an operator may
have a reason, and a chmod behind their back would hide it.
"""

from __future__ import annotations

import logging
import stat
from pathlib import Path

from openbrowse.config import Settings

__all__ = ["loose_file_warnings"]

logger = logging.getLogger(__name__)

_FILE_BITS = stat.S_IRGRP | stat.S_IROTH
_DIR_BITS = stat.S_IRWXG | stat.S_IRWXO


def _warning(path: Path, what: str, fix: str) -> str | None:
    try:
        info = path.stat()
    except OSError:
        return None
    bits = _DIR_BITS if stat.S_ISDIR(info.st_mode) else _FILE_BITS
    if not info.st_mode & bits:
        return None
    mode = stat.S_IMODE(info.st_mode)
    return f"{path} ({what}) has mode {mode:04o}: other users on this host can read it; run: chmod {fix} {path}"


def loose_file_warnings(settings: Settings) -> list[str]:
    """One sentence per file or directory that is group- or world-readable (blocking; call it once at start)."""
    db = settings.db_path
    candidates = [
        (settings.OPENBROWSE_HOME / ".env", ".env with the keys", "600"),
        (settings.data_dir, "the data directory", "700"),
        (db, "the database", "600"),
        (db.with_name(db.name + "-wal"), "the database's WAL", "600"),
        (db.with_name(db.name + "-shm"), "the database's shared memory", "600"),
    ]
    found = [_warning(path, what, fix) for path, what, fix in candidates]
    return [warning for warning in found if warning is not None]


def log_loose_files(settings: Settings) -> list[str]:
    warnings = loose_file_warnings(settings)
    for warning in warnings:
        logger.warning("Insecure file mode: %s", warning)
    return warnings
