"""A running server's scratch dirs are made by ``tempfile.mkdtemp`` in a parent only it can enter (issue 31)."""

from __future__ import annotations

import os
import stat

import pytest

from tests.conftest import StartServer

pytestmark = pytest.mark.e2e


def test_the_scratch_parent_is_the_servers_alone(start_server: StartServer) -> None:
    server = start_server()
    parent = server.home / "data" / "run" / "tmp"
    status = os.lstat(parent)
    assert stat.S_ISDIR(status.st_mode) and status.st_uid == os.geteuid()
    assert stat.S_IMODE(status.st_mode) == 0o700
