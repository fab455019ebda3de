"""A session's disk cap (spec §24.5) against a process of the slot that turned hostile (a compromised browser: the
slot's uid, inside its sandbox; scripts run under a uid of their own and see none of these folders): a 4 GiB
sparse file and a fill of real blocks in the browser's downloads and in its scratch space. The writes fail with
``ENOSPC``, the session ends typed, nothing bigger than the cap is copied out, and the server stays healthy."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from openbrowse.slots.slot_files import scratch_dir
from tests.conftest import StartServer
from tests.e2e.agent_support import agent_steps, create, messages, session_files, token, wait_until_status
from tests.fakes.llm_reply import Gate, structured
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback
from tests.support.server import ServerProcess

pytestmark = [pytest.mark.e2e, pytest.mark.display]

DISK_MB = 64
FILL = """
import os, sys
folder = sys.argv[1]
fd = os.open(os.path.join(folder, "sparse.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
os.ftruncate(fd, 4 << 30)
os.close(fd)
fd = os.open(os.path.join(folder, "fill.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
written = 0
try:
    while written < (256 << 20):
        written += os.write(fd, b"x" * (1 << 20))
    print("FILLED", written >> 20)
except OSError as exc:
    print("REFUSED errno", exc.errno)
finally:
    os.close(fd)
"""


@pytest.fixture
def gate() -> Iterator[Gate]:
    held = Gate()
    yield held
    held.open()  # the fake provider's handler thread never stays parked


def sandbox_holder(server: ServerProcess) -> psutil.Process:
    """The slot's namespace holder (``sleep infinity`` as the slot's uid, in the slot's directory)."""
    for process in server.children():
        try:
            if process.name() == "sleep" and process.uids().real != 0:
                return process
        except psutil.NoSuchProcess:
            continue
    raise AssertionError("no sandboxed slot is running")


def fill_as_the_slot(holder: psutil.Process, folder: str) -> str:
    """Run :data:`FILL` as the slot's uid inside its sandbox, as a compromised browser process would."""
    uid = str(holder.uids().real)
    argv = ["nsenter", "-t", str(holder.pid), "--mount", "--pid", "--"]
    argv += ["setpriv", "--reuid", uid, "--regid", uid, "--clear-groups", "--no-new-privs", "--"]
    argv += ["/usr/bin/python3", "-I", "-c", FILL, folder]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout


@pytest.mark.parametrize("where", ["downloads", "scratch"])
def test_a_slot_process_filling_its_disk_hits_the_cap_and_nothing_bigger_is_copied_out(
    start_server: StartServer, fake: FakeProvider, gate: Gate, where: str
) -> None:
    server = start_server(**fake.env(), SLOT_DISK_MB=DISK_MB)
    marker = token("FILL")
    fake.script(marker, [structured(agent_step([{"wait": {"seconds": 1}}]), gate=gate), done("x")], when=agent_steps)
    session = create(server, task=f"{marker} Wait.")
    assert gate.wait_entered(180)  # the session runs: its slot is up, its first step held at the model
    holder = sandbox_holder(server)
    slot_dir = Path(holder.cwd())
    index = int(slot_dir.name.rsplit("-", 1)[1])  # data/run/slots/slot-<index>
    scratch = str(scratch_dir(server.home / "data" / "run", index))  # bound at its own path
    folder = str(slot_dir / "downloads") if where == "downloads" else scratch
    printed = fill_as_the_slot(holder, folder)
    assert "REFUSED errno 28" in printed, printed  # ENOSPC, well before the 256 MiB it tried

    finished = wait_until_status(server, session["id"], {"stopped", "error", "timed_out", "idle"}, timeout=180)
    summaries = [m["summary"] for m in messages(server, session["id"])]
    assert finished["status"] == "error", "\n".join(summaries)
    assert finished["failureKind"] == "resource_limit"
    assert any(f"disk cap of {DISK_MB} MiB" in text for text in summaries), summaries
    listing = loopback.get(f"{server.v3}/sessions/{session['id']}/downloads", timeout=10).json()
    names = {entry["path"] for entry in listing["files"]}
    assert "sparse.bin" not in names  # a 4 GiB file is never copied into a 64 MiB area
    assert sum(entry["size"] for entry in listing["files"]) <= DISK_MB << 20
    files = session_files(server, session["id"])
    assert sum(path.stat().st_size for path in files.rglob("*") if path.is_file()) <= DISK_MB << 20
    if where == "downloads":
        assert any("sparse.bin" in text and "was not kept" in text for text in summaries), summaries
    assert loopback.get(f"{server.base_url}/health", timeout=5).status_code == 200
    assert server.process is not None and server.process.poll() is None


def test_uploads_stop_at_the_file_areas_cap(start_server: StartServer) -> None:
    server = start_server(SLOT_DISK_MB=16)
    session_id = loopback.post(f"{server.v3}/sessions", json={}, timeout=30).json()["id"]
    ten_mib = b"u" * (10 << 20)
    first = loopback.put(f"{server.v3}/sessions/{session_id}/uploads/a.bin", content=ten_mib, timeout=60)
    assert first.status_code == 200, first.text
    second = loopback.put(f"{server.v3}/sessions/{session_id}/uploads/b.bin", content=ten_mib, timeout=60)
    assert second.status_code == 413, second.text
    assert second.json()["detail"].startswith("The upload does not fit: the file area is capped at 16 MiB")
    replaced = loopback.put(f"{server.v3}/sessions/{session_id}/uploads/a.bin", content=ten_mib + b"!", timeout=60)
    assert replaced.status_code == 200, replaced.text  # the file it replaces does not count
    uploads = session_files(server, session_id) / "uploads"
    assert sorted(path.name for path in uploads.iterdir()) == ["a.bin"]
