"""Process environment set before browser-use or CloakBrowser is imported (platform notes §3, spec §3).

Turns off every outbound call browser-use makes by default (telemetry, version check, cloud sync, extension
downloads), stops it from reconfiguring the root logger, and keeps its config and cache under our data dir.
"""

from __future__ import annotations

import os
from pathlib import Path

_FIXED = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_DISABLE_EXTENSIONS": "1",
    "BROWSER_USE_CLOUD_HINTS": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",
    "BROWSER_USE_ACTION_TIMEOUT_S": "480",
    "CLOAKBROWSER_AUTO_UPDATE": "false",
}


def prepare_process_environment(data_dir: Path | None = None) -> None:
    """Idempotent. ``data_dir`` places browser-use's config and cache dirs; defaults are kept otherwise."""
    for name, value in _FIXED.items():
        os.environ[name] = value
    if data_dir is not None:
        os.environ.setdefault("BROWSER_USE_CONFIG_DIR", str(data_dir / "browseruse"))
        os.environ.setdefault("XDG_CACHE_HOME", str(data_dir / "cache"))
