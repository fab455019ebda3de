"""Process environment set before browser-use or CloakBrowser is imported (platform notes §3, spec §3).

Turns off every outbound call browser-use makes by default (telemetry, version check, cloud sync, extension
downloads, the LLM API-key check), stops it from reconfiguring the root logger, and keeps its config and cache
under our data dir.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from openbrowse.errors import ConfigError
from openbrowse.upstream.key_check import SKIP_KEY_CHECK_ENV, SKIP_KEY_CHECK_VALUE

_FIXED = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_DISABLE_EXTENSIONS": "1",
    "BROWSER_USE_CLOUD_HINTS": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",
    "BROWSER_USE_ACTION_TIMEOUT_S": "480",
    "CLOAKBROWSER_AUTO_UPDATE": "false",
    SKIP_KEY_CHECK_ENV: SKIP_KEY_CHECK_VALUE,
}


def prepare_process_environment(data_dir: Path | None = None) -> None:
    """Idempotent. With ``data_dir``: browser-use's config, cache and this process's temp files live under it.

    browser-use creates scratch dirs in the temp dir (one even at import time) and never removes them, so the
    process's temp dir is ``data/run/tmp``; the app empties it once it owns the data dir, and at shutdown.
    """
    for name, value in _FIXED.items():
        os.environ[name] = value
    if data_dir is not None:
        if not data_dir.exists():
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # spec §25.3: the data dir is private
        os.environ.setdefault("BROWSER_USE_CONFIG_DIR", str(data_dir / "browseruse"))
        os.environ.setdefault("XDG_CACHE_HOME", str(data_dir / "cache"))
        tempfile.tempdir = str(private_temp_dir(process_temp_dir(data_dir)))


def private_temp_dir(folder: Path) -> Path:
    """``folder`` as the parent of this process's scratch dirs: a real directory (never a link), owned by this
    process's user and mode 0700, so the random names ``tempfile.mkdtemp`` makes in it are nobody else's to guess,
    plant or read. A folder that cannot be made so is an error at start-up."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    try:
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise ConfigError(f"{folder} is a link or not a directory; remove it so the server can make its own") from exc
    try:
        if os.fstat(descriptor).st_uid != os.geteuid():
            raise ConfigError(f"{folder} belongs to another user; remove it so the server can make its own")
        os.fchmod(descriptor, 0o700)
    finally:
        os.close(descriptor)
    return folder


def process_temp_dir(data_dir: Path) -> Path:
    return data_dir / "run" / "tmp"


def empty_temp_dir(data_dir: Path) -> None:
    """Delete what is in this process's temp dir (blocking; the caller owns the data dir)."""
    folder = process_temp_dir(data_dir)
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
