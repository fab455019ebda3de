"""A headless Chromium on its own DevTools port and a ControlEngine attached to it, for the control engine's tests.

The engine is driven directly (no server, no sandbox): these tests are about what Playwright does to a real page.
The end-to-end tests in ``tests/e2e/test_control_*.py`` drive it through the API of a real server.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openbrowse.control.engine import ControlEngine
from openbrowse.control.target import ControlTarget
from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.slots.chromium import BASE_FLAGS
from openbrowse.slots.probes import CdpVersionProbe
from openbrowse.slots.process import ManagedProcess
from tests.support.ci_gate import skip_or_fail
from tests.support.display import chromium_binary
from tests.support.ports import free_port


@pytest.fixture
async def chromium_cdp(tmp_path: Path) -> AsyncIterator[str]:
    """``http://127.0.0.1:<port>`` of a fresh headless Chromium with one blank tab."""
    chromium = chromium_binary()
    if chromium is None:
        skip_or_fail("no Chromium installed")
    port = free_port()
    argv = [
        str(chromium),
        "--headless",
        "--no-sandbox",
        f"--remote-debugging-port={port}",
        "--remote-debugging-address=127.0.0.1",
        f"--user-data-dir={tmp_path / 'profile'}",
        *BASE_FLAGS,
        "about:blank",
    ]
    async with ManagedProcess("chromium", argv) as process:
        await process.wait_ready(CdpVersionProbe(port), within=30)
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def control_target(chromium_cdp: str, tmp_path: Path) -> ControlTarget:
    folders = BrowserFolders(uploads=tmp_path / "uploads", downloads=tmp_path / "downloads").ensure()
    files = tmp_path / "files"
    files.mkdir()
    return ControlTarget(
        cdp_url=chromium_cdp,
        folders=folders,
        files_dir=files,
        file_url=lambda area, name: f"/files/{area}/{name}",
    )


@pytest.fixture
async def engine(control_target: ControlTarget) -> AsyncIterator[ControlEngine]:
    engine = ControlEngine(control_target)
    try:
        yield engine
    finally:
        await engine.aclose()
