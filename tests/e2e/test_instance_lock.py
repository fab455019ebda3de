"""A second instance started by mistake on the same data dir fails without touching the first one's files."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import StartServer
from tests.support import loopback
from tests.support.ports import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.display, pytest.mark.timeout(180)]


def test_a_second_instance_on_the_same_data_dir_leaves_the_first_ones_temp_files(start_server: StartServer) -> None:
    first = start_server(MAX_CONCURRENT_SESSIONS=1)
    scratch = first.home / "data" / "run" / "tmp"
    in_use = scratch / "browser-use-downloads-in-use"
    in_use.mkdir(parents=True)
    (in_use / "report.pdf").write_text("a download of a running session")

    env = {**os.environ, "OPENBROWSE_HOME": str(first.home), "SLOT_BASE_INDEX": str(first.slot_base)}
    second = subprocess.run(
        [sys.executable, "-m", "openbrowse", "serve", "--port", str(free_port())],
        cwd=first.home,
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert second.returncode != 0
    assert b"Another OpenBrowse process" in second.stdout + second.stderr
    assert (in_use / "report.pdf").read_text() == "a download of a running session"
    assert loopback.get(f"{first.base_url}/health", timeout=5).status_code == 200
