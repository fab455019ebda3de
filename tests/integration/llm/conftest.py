"""Keep browser-use quiet and offline before any test module imports it."""

from __future__ import annotations

import os

for _name, _value in {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",
}.items():
    os.environ.setdefault(_name, _value)
