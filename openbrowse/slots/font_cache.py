"""One fontconfig cache per server, shared read-only by every slot's sandbox.

A sandbox sees ``/usr`` and ``/etc`` but not the host's ``/var/cache/fontconfig``, and its home is a fresh slot
directory, so without this every Chromium start scanned every font file again and wrote a private cache into its
home (about 110 KB and a few dozen milliseconds of CPU on the start's critical path). Instead the server builds the
cache once, with ``fc-cache`` run in a bubblewrap view of the same read-only ``/usr`` and ``/etc`` a slot gets (so it
describes exactly the fonts a slot can see and names no host path a slot could not see anyway), into
``<run dir>/fontconfig``; each sandbox binds that read-only at ``/var/cache/fontconfig``, the system cache directory
of Debian's ``/etc/fonts/fonts.conf``. fontconfig checks each cache against its font directory's modification time, so
fonts installed later only make a slot fall back to scanning into its own home, as before.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import threading
from pathlib import Path

from openbrowse.slots.sandbox import SANDBOX_FONT_CACHE, UNSHARE, sandbox_tool, system_binds

__all__ = ["shared_font_cache"]

logger = logging.getLogger(__name__)

BUILD_TIMEOUT = 60.0
_lock = threading.Lock()
_built: dict[Path, Path | None] = {}


def shared_font_cache(run_dir: Path) -> Path | None:
    """The read-only cache directory for slots of this run directory, built on first use (blocking; call through
    ``asyncio.to_thread``); None when it cannot be built, and slots then build their own as before."""
    target = run_dir / "fontconfig"
    with _lock:
        built = _built.get(target)
        if target not in _built or (built is not None and not built.is_dir()):  # a bind needs its source
            _built[target] = _build(target)
        return _built[target]


def _build(target: Path) -> Path | None:
    bwrap, fc_cache = sandbox_tool("bwrap"), sandbox_tool("fc-cache")
    if bwrap is None or fc_cache is None:
        return None
    building = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    argv = [bwrap, *UNSHARE, "--die-with-parent", *system_binds(), "--proc", "/proc", "--dev", "/dev"]
    argv += ["--tmpfs", "/tmp", "--bind", str(building), SANDBOX_FONT_CACHE, "--setenv", "HOME", "/nonexistent"]
    argv += ["--unsetenv", "XDG_CACHE_HOME", "--", fc_cache, "--system-only"]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=BUILD_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning("Could not build the slots' font cache (%s); each slot scans the fonts itself", exc)
        shutil.rmtree(building, ignore_errors=True)
        return None
    if result.returncode != 0 or not any(building.glob("*.cache-*")):
        detail = result.stderr.decode(errors="replace").strip()[-300:]
        logger.warning("fc-cache built no font cache for the slots (exit %s: %s)", result.returncode, detail)
        shutil.rmtree(building, ignore_errors=True)
        return None
    shutil.rmtree(target, ignore_errors=True)
    building.rename(target)
    for path in (target, *target.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target
