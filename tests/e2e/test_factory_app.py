"""Serving ``create_app()`` without our CLI (``uvicorn --factory openbrowse.app:create_app``) is just as safe:
browser-use's telemetry, cloud sync and version check are off, and browsers are still untrusted clients."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import loopback
from tests.support.ports import free_port
from tests.support.server import wait_until

pytestmark = pytest.mark.e2e

_PROBE = """
import json
import uvicorn.importer

uvicorn.importer.import_from_string("openbrowse.app:create_app")()  # what `uvicorn --factory` does

from browser_use.config import CONFIG
from browser_use.telemetry.service import ProductTelemetry

print(json.dumps({
    "telemetry": CONFIG.ANONYMIZED_TELEMETRY,
    "cloud_sync": CONFIG.BROWSER_USE_CLOUD_SYNC,
    "version_check": CONFIG.BROWSER_USE_VERSION_CHECK,
    "posthog_client": ProductTelemetry()._posthog_client is not None,
}))
"""


def clean_env(home: Path) -> dict[str, str]:
    """No switch of ours or of browser-use inherited from the test run."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(home), "OPENBROWSE_HOME": str(home), "TMPDIR": str(home)}


def test_the_factory_turns_off_every_outbound_call_of_browser_use(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], env=clean_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen == {"telemetry": False, "cloud_sync": False, "version_check": False, "posthog_client": False}


@pytest.fixture
def factory_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "--factory", "openbrowse.app:create_app", "--port", str(port)]
    env = {**clean_env(tmp_path), "PREWARM_SLOTS": "0"}  # no browser on the default display :10 / port 9222
    with (tmp_path / "server.log").open("wb") as log:
        process = subprocess.Popen(
            command, env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            raise RuntimeError((tmp_path / "server.log").read_text()[-3000:])
        try:
            return loopback.get(f"{base}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(up, 60, what="uvicorn --factory server")
        yield base
    finally:
        process.terminate()
        process.wait(30)


def test_the_factory_app_refuses_foreign_pages(factory_server: str) -> None:
    refused = loopback.post(
        f"{factory_server}/v3/sessions",
        content="{}",
        headers={"Origin": "http://evil.example", "Content-Type": "text/plain"},
    )
    assert refused.status_code == 403 and refused.json() == {"detail": "Origin not allowed"}
    assert loopback.get(f"{factory_server}/v3/sessions").json()["total"] == 0
