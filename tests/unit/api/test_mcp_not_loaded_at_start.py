"""The app starts without the ``mcp`` SDK (about 0.6 s and 26 MiB): its lifespan runs, and ``/v3/mcp`` is routed,
with none of the SDK's modules imported. The first request loads it (``tests/e2e/test_mcp_loading.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import asyncio, sys

from openbrowse.app import create_app
from openbrowse.config import Settings

def sdk_modules():
    names = ("mcp", "mcp_types")
    return sorted(name for name in sys.modules if name in names or name.startswith(tuple(n + "." for n in names)))

app = create_app(Settings.load())
print("routed:", any(getattr(route, "path", None) == "/v3/mcp" for route in app.router.routes))

async def run_lifespan():
    async with app.router.lifespan_context(app):
        print("while serving:", sdk_modules())

asyncio.run(run_lifespan())
"""


def test_the_app_serves_without_importing_the_mcp_sdk(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OPENBROWSE_HOME": str(tmp_path),
        "PREWARM_SLOTS": "0",
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "TMPDIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "routed: True" in done.stdout, done.stdout
    assert "while serving: []" in done.stdout, done.stdout
