"""Cloud metadata through the browser (spec §19.2): simulated on a link-local address in a network namespace the
test makes itself, where a real metadata server answers. The slot's browser and processes must not reach it,
even with NETWORK_POLICY=open."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from tests.support.ci_gate import required
from tests.support.display import needs_display
from tests.support.sandbox_gate import needs_sandbox

from .conftest import child

pytestmark = [
    pytest.mark.display,
    needs_display,
    required(None if shutil.which("ip") and shutil.which("unshare") else "needs ip and unshare"),
    needs_sandbox(),
]

REPO = Path(__file__).resolve().parents[3]


async def test_metadata_on_a_link_local_address_is_refused_to_the_browser(data_dir: Path, base_index: int) -> None:
    process = await asyncio.create_subprocess_exec(
        "unshare", "--net", sys.executable, child("metadata_probe.py"), str(data_dir), str(base_index),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=REPO,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0, err.decode()[-3000:]
    report = json.loads(out.decode().strip().splitlines()[-1])
    secret = report["secret"]
    assert report["control"], "the simulated metadata server answers a direct request"
    assert report["navigation"]["status"] == 403
    assert secret not in report["navigation"]["body"]
    assert "Blocked by OpenBrowse network policy" in report["navigation"]["body"]
    assert secret not in report["fetch"]
    assert report["raw_socket"] != "0", "a process in the sandbox has no route to the host's addresses"
    assert report["hits"] == [], "nothing from the slot reached the metadata server"
