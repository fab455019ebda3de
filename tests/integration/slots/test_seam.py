"""The seam between the server and a sandboxed slot (issue 31). Each test is an attack a hostile script, running as
the slot's uid inside its sandbox, or another local user performed against the server."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import stat
import sys
import threading
from pathlib import Path

import pytest
import websockets
from websockets.typing import Subprotocol

from openbrowse.config import Settings
from openbrowse.slots import confinement
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.slot import Slot
from tests.support.display import needs_display
from tests.support.local_user import ask_as_nobody
from tests.support.sandbox_gate import needs_sandbox

pytestmark = [
    pytest.mark.display,
    needs_display,
    needs_sandbox(),
]


async def _run_inside(slot: Slot, argv: list[str]) -> tuple[int | None, str]:
    """Run ``argv`` in the slot's sandbox as its uid, as a script would; return (exit code, output)."""
    process = ManagedProcess("attack", slot.confinement.command(argv), env={"PATH": "/usr/bin:/bin"}, expect_exit=True)
    async with process:
        code = await process.died
    return code, process.output_tail()


def _seam(slot: Slot) -> Path:
    """Where the server keeps what it shares with the slot (the slot's scratch dir before the seam existed)."""
    seam = getattr(slot.confinement, "seam", None)
    return seam.path if seam is not None else slot.confinement.socket_dir


REDIRECT_CDP = """
for d in /proc/[0-9]*; do
  case "$(tr '\\0' ' ' < "$d/cmdline" 2>/dev/null)" in /usr/bin/socat*cdp.sock*) kill "${d#/proc/}";; esac
done
ln -sfn "$1" "$2/cdp.sock"
"""


async def test_a_script_cannot_point_its_slots_devtools_at_another_slot(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as ours, Slot(settings, base_index + 1) as theirs:
        pinned = ours.cdp_ws_url
        target = theirs.confinement.socket_dir / "cdp.sock"
        code, output = await _run_inside(ours, ["/bin/sh", "-c", REDIRECT_CDP, "sh", str(target), str(ours.temp_dir)])
        assert code == 0, output
        status, version = await loopback_http_json(ours.cdp_port, "/json/version")
        assert status == 200
        assert version["webSocketDebuggerUrl"] == pinned  # still our own browser, not theirs
        async with websockets.connect(pinned, max_size=None) as ws:
            await ws.send('{"id": 1, "method": "Target.getTargets"}')
            assert '"id":1' in str(await asyncio.wait_for(ws.recv(), 20))


async def test_a_fifo_planted_for_the_token_file_is_never_opened(settings: Settings, base_index: int) -> None:
    """A FIFO where the live view's token file went froze the whole server when someone opened the live view."""
    async with Slot(settings, base_index) as slot:
        await slot.stop()
        await slot.start(vnc=False)
        name = f"{slot.index}.tokens"
        planted = slot.temp_dir / name
        code, output = await _run_inside(slot, ["/usr/bin/mkfifo", str(planted)])
        assert code == 0, output
        code, _ = await _run_inside(slot, ["/bin/sh", "-c", f"rm -f {_seam(slot)}/{name}; mkfifo {_seam(slot)}/x"])
        opened = threading.Event()

        def read_fifo() -> None:  # blocks until someone opens the FIFO for writing
            fd = os.open(planted, os.O_RDONLY)
            opened.set()
            while os.read(fd, 4096):
                pass
            os.close(fd)

        reader = threading.Thread(target=read_fifo, daemon=True)
        reader.start()
        try:
            ticket = await slot.add_viewer()
            slot.remove_viewer(ticket)
        finally:
            server_opened = opened.is_set()
            if not server_opened:  # let our reader go
                os.close(os.open(planted, os.O_WRONLY | os.O_NONBLOCK))
            await asyncio.to_thread(reader.join)
        assert not server_opened, "the server opened a FIFO the slot planted"
        assert not (_seam(slot) / "x").exists(), "the slot could write to the server's seam directory"


async def test_another_local_user_gets_nothing_from_a_slots_devtools_or_live_view(
    settings: Settings, base_index: int
) -> None:
    async with Slot(settings, base_index) as slot:
        devtools = await asyncio.to_thread(ask_as_nobody, slot.cdp_port, "GET /json/version")
        live = await asyncio.to_thread(ask_as_nobody, slot.novnc_port, "GET /vnc.html")
        assert "webSocketDebuggerUrl" not in devtools and "HTTP/1.1" not in devtools, devtools
        assert "HTTP/1.1" not in live, live
        status, version = await loopback_http_json(slot.cdp_port, "/json/version")  # the server's own uid: served
        assert status == 200 and version["webSocketDebuggerUrl"] == slot.cdp_ws_url
        status, body = await loopback_http_json(slot.novnc_port, "/vnc.html")
        assert status == 200 and "noVNC" in body


async def test_only_the_slots_uid_may_use_its_egress_socket(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index, browser_args=()) as slot:
        path = _seam(slot) / "egress.sock"
        info = path.stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (0, 0o660)  # root's; the slot's group may connect
        reader, writer = await asyncio.open_unix_connection(str(path))  # root, but not the slot's uid
        writer.write(b"GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
        try:
            answer = await asyncio.wait_for(reader.read(), 30)
        except ConnectionError:
            answer = b""
        writer.close()
        assert answer == b""
        assert slot.confinement.egress is not None and slot.confinement.egress.stats.refused_peers >= 1


FLOOD = """
import resource, signal, socket, sys
resource.setrlimit(resource.RLIMIT_NOFILE, resource.getrlimit(resource.RLIMIT_NOFILE)[1:] * 2)
held = []
for _ in range(int(sys.argv[2])):
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
    except OSError:
        s.close()
        continue
    held.append(s)
print("held", len(held), flush=True)
signal.pause()
"""


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_a_flood_on_the_egress_socket_leaves_the_server_and_other_slots_alone(
    settings: Settings, base_index: int
) -> None:
    async with Slot(settings, base_index) as flooded, Slot(settings, base_index + 1) as other:
        before = _open_fds()
        argv = flooded.confinement.command([sys.executable, "-c", FLOOD, str(_seam(flooded) / "egress.sock"), "3000"])
        process = ManagedProcess("flood", argv, env={"PATH": "/usr/bin:/bin"}, expect_exit=True)
        async with process:
            while "held " not in process.output_tail():
                assert process.running, process.output_tail()
                await asyncio.sleep(0.05)
            during = _open_fds()
            # the other slot's way out still answers (a refusal of a private address is an answer from its enforcer)
            _, output = await _run_inside(
                other, ["/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", "127.0.0.1:3128",
                        "http://10.0.0.1/"]
            )  # fmt: skip
            # and the server still accepts connections (what /health needs)
            with socket.socket() as listener, socket.socket() as client:
                listener.bind(("127.0.0.1", 0))
                listener.listen()
                client.connect(listener.getsockname())
                listener.accept()[0].close()
        assert output.strip().endswith("403"), output
        assert during - before <= 2 * 256 + 64, (before, during)


async def test_unsandboxed_slots_keep_working_on_the_host_loopback(
    data_dir: Path, base_index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ALLOW_UNSANDBOXED (development only): no seam, no gates; Chromium and websockify on the host loopback."""
    monkeypatch.setattr(confinement, "sandbox_problem", lambda: "a test says so")
    settings = Settings(OPENBROWSE_DATA_DIR=data_dir, MAX_CONCURRENT_SESSIONS=1, ALLOW_UNSANDBOXED=True)
    async with Slot(settings, base_index) as slot:
        assert slot.network is None and slot.confinement.sandbox is None
        status, version = await loopback_http_json(slot.cdp_port, "/json/version")
        assert status == 200 and version["webSocketDebuggerUrl"] == slot.cdp_ws_url
        async with websockets.connect(slot.novnc_ws_url, subprotocols=[Subprotocol("binary")]) as ws:
            assert await asyncio.wait_for(ws.recv(), 10) == b"RFB 003.008\n"


async def test_a_pinned_endpoint_that_is_gone_fails_at_once(settings: Settings, base_index: int) -> None:
    """Chromium gone (here: killed): the CDP gate has nothing to connect to and says so, it does not hang."""
    async with Slot(settings, base_index) as slot:
        chromium = next(p for p in slot.processes() if p.name == "Chromium")
        died = slot.died
        assert chromium.pid is not None
        os.killpg(chromium.pid, signal.SIGKILL)
        await died
        status, _ = await loopback_http_json(slot.cdp_port, "/json/list")
        assert status == 502
        with pytest.raises((websockets.InvalidHandshake, websockets.ConnectionClosed, ConnectionError)):
            async with websockets.connect(slot.cdp_ws_url, open_timeout=None) as ws:
                await ws.recv()
