"""A session's disk cap (spec §24.5) against what a prompt-injected script would do: a 4 GiB sparse file and a fill
of real blocks in the browser's downloads and in its scratch space. The writes fail with ``ENOSPC``, the session ends
typed, nothing bigger than the cap is copied out, and the server stays healthy."""

from __future__ import annotations

import pytest

from tests.conftest import StartServer
from tests.e2e.agent_support import (
    agent_steps,
    create,
    messages,
    session_files,
    step_requests,
    token,
    wait_until_status,
)
from tests.fakes.llm_script import agent_step, done
from tests.fakes.llm_server import FakeProvider
from tests.support import loopback

pytestmark = [pytest.mark.e2e, pytest.mark.display]

DISK_MB = 64
FILL = """
import os, time


def chromium_tmpdir():
    for pid in [name for name in os.listdir("/proc") if name.isdigit()]:
        try:
            fd = os.open(f"/proc/{{pid}}/environ", os.O_RDONLY)
        except OSError:
            continue
        try:
            items = os.read(fd, 1 << 16).split(bytes(1))
        finally:
            os.close(fd)
        for item in items:
            if item.startswith(b"TMPDIR=") and item != b"TMPDIR=/tmp":
                return item[7:].decode()
    raise RuntimeError("no Chromium found")


folder = {folder}
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
time.sleep(60)  # the session ends while the area is full, not after this script
"""
WHERE = {
    "downloads": 'os.path.join(os.environ["HOME"], "downloads")',
    "scratch": "chromium_tmpdir()",  # Chromium's TMPDIR, the slot's scratch space
}


@pytest.mark.parametrize("where", sorted(WHERE))
def test_a_script_filling_its_slot_hits_the_disk_cap_and_nothing_bigger_is_copied_out(
    start_server: StartServer, fake: FakeProvider, where: str
) -> None:
    server = start_server(**fake.env(), SLOT_DISK_MB=DISK_MB)
    marker = token("FILL")
    code = FILL.format(folder=WHERE[where])
    fake.script(
        marker,
        [agent_step([{"run_code_file": {"name": "fill", "code": code}}]), done("filled")],
        when=agent_steps,
    )
    session = create(server, task=f"{marker} Fill the disk.")
    finished = wait_until_status(server, session["id"], {"stopped", "error", "timed_out", "idle"}, timeout=180)

    feed = messages(server, session["id"])
    summaries = [m["summary"] for m in feed]
    requests = step_requests(fake, marker)  # what the script printed reaches the model's next step, if any
    assert not any("FILLED" in request.text for request in requests), requests[-1].text  # never past the cap
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
