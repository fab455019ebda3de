"""The display stack the browser tests need: Xvfb, x11vnc, websockify and a Chromium the product would pick.

``needs_display`` skips a test where one of them is missing, and fails it on the CI machine (see ``ci_gate``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from openbrowse.slots.chromium import PATH_NAMES, SYSTEM_BINARIES
from tests.support.ci_gate import required

__all__ = ["MISSING", "chromium_binary", "needs_chromium", "needs_display"]

DISPLAY_BINARIES = ("Xvfb", "x11vnc", "websockify")


def chromium_binary() -> Path | None:
    """The system Chromium the product would start (its real binary, not Debian's wrapper script), or None."""
    for candidate in SYSTEM_BINARIES:
        if os.access(candidate, os.X_OK):
            return Path(candidate)
    found = next((shutil.which(name) for name in PATH_NAMES if shutil.which(name)), None)
    return Path(found) if found else None


MISSING = [name for name in DISPLAY_BINARIES if shutil.which(name) is None] + (
    ["chromium"] if chromium_binary() is None else []
)
needs_display = required(f"missing binaries: {', '.join(MISSING)}" if MISSING else None)
needs_chromium = required(None if chromium_binary() is not None else "no Chromium installed")
