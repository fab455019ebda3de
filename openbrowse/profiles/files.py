"""Private JSON files written atomically (temp file, fsync, rename): a run's base copy of its profile's jar, and
the jar files under ``data/profiles/`` of installs from before jars moved into the database (read once, adopted,
removed: ``ProfileService.adopt_files``).

Files are 0600 in a 0700 directory: a jar is a live credential. A reader sees the old file or the new one,
never half of either, even if the process is killed mid-write. Blocking; callers use ``asyncio.to_thread``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from openbrowse.profiles.jar import Jar, read_jar

FILE_MODE = 0o600
DIR_MODE = 0o700
BACKUP_SUFFIX = ".import-bak"


def ensure_private_dir(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    os.chmod(directory, DIR_MODE)


def write_private_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` atomically, mode 0600."""
    ensure_private_dir(path.parent)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_json_file(path: Path) -> Any:
    """The parsed file; raises ``OSError``/``ValueError`` when it is missing or unreadable."""
    return json.loads(path.read_text(encoding="utf-8"))


class JarFiles:
    """``{id}.json`` and ``{id}.json.import-bak`` in one private directory."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, profile_id: str) -> Path:
        return self.directory / f"{profile_id}.json"

    def backup_path(self, profile_id: str) -> Path:
        return self.directory / f"{profile_id}.json{BACKUP_SUFFIX}"

    def read(self, profile_id: str) -> Jar | None:
        """The jar on disk; None when the file is missing or cannot be parsed."""
        try:
            return read_jar(read_json_file(self.path(profile_id)))
        except (OSError, ValueError):
            return None

    def write(self, profile_id: str, jar: Jar) -> None:
        write_private_json(self.path(profile_id), jar)

    def delete(self, profile_id: str) -> None:
        for path in (self.path(profile_id), self.backup_path(profile_id)):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
