"""A real slot: Xvfb, x11vnc, websockify and Chromium, started and stopped, killed, and failing to launch."""

from __future__ import annotations

import asyncio
import json
import os
import struct
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
import websockets
from websockets.typing import Subprotocol

from openbrowse.config import Settings
from openbrowse.errors import BrowserUnavailable, ProcessDied, ProcessStartError
from openbrowse.slots.probes import loopback_http_json
from openbrowse.slots.slot import Slot, SlotState
from openbrowse.slots.slot_children import START_STAGES
from tests.support.display import needs_display
from tests.support.waiting import wait_for_async

from .conftest import instance_processes, live_children, open_fds

pytestmark = [pytest.mark.display, needs_display]


def _state(slot: Slot) -> SlotState:
    return slot.state  # a call, so mypy does not keep a narrowed property across awaits


def _pages(targets: list[dict[str, str]]) -> list[dict[str, str]]:
    return [t for t in targets if t.get("type") == "page"]


async def _query_viewonly(slot: Slot) -> str:
    """``ans=viewonly:<0|1>`` from the running x11vnc (retried: a fresh x11vnc answers shortly after its port).
    The display lives in the slot's sandbox, so the query runs in there too."""
    out = b""
    display = slot.display
    for _ in range(50):
        proc = await asyncio.create_subprocess_exec(
            *slot.confinement.command(["x11vnc", "-display", display, "-query", "viewonly"]),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 10)
        if b"ans=viewonly:" in out:
            return out.decode()
        await asyncio.sleep(0.1)
    raise AssertionError(f"x11vnc on {display} never answered: {out.decode()}")


async def _rfb_greeting(url: str) -> bytes:
    async with websockets.connect(url, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
        greeting = await asyncio.wait_for(ws.recv(), 10)
    return greeting if isinstance(greeting, bytes) else greeting.encode()


class RfbViewer:
    """Just enough of an RFB 3.8 client over websockify to move the pointer."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.buffer = b""
        self.bytes_per_pixel = 4

    async def read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            message = await asyncio.wait_for(self.ws.recv(), 10)
            self.buffer += message if isinstance(message, bytes) else message.encode()
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    async def handshake(self) -> tuple[int, int]:
        assert await self.read(12) == b"RFB 003.008\n"
        await self.ws.send(b"RFB 003.008\n")
        security_types = await self.read((await self.read(1))[0])
        assert 1 in security_types  # None: -nopw, reachable only through the secret-checking websockify
        await self.ws.send(b"\x01")
        assert await self.read(4) == b"\0\0\0\0"
        await self.ws.send(b"\x01")  # shared
        width, height = struct.unpack(">HH", await self.read(4))
        self.bytes_per_pixel = (await self.read(16))[0] // 8  # the pixel format starts with its bits per pixel
        (name_length,) = struct.unpack(">I", await self.read(4))
        await self.read(name_length)
        return width, height

    async def wiggle(self, x: int, y: int) -> None:
        for step in range(5):
            await self.ws.send(struct.pack(">BBHH", 5, 0, x + 10 * step, y))
            await asyncio.sleep(0.03)

    async def sync(self) -> None:
        """Ask for one pixel of the screen and read the answer: x11vnc reads a client's messages in order, so by
        then it has read every pointer event sent before (and dropped them, if it was view-only then)."""
        await self.ws.send(struct.pack(">BBHHHH", 3, 0, 0, 0, 1, 1))  # FramebufferUpdateRequest, not incremental
        while (kind := (await self.read(1))[0]) != 0:
            if kind == 2:  # Bell: nothing more
                continue
            if kind == 3:  # ServerCutText
                await self.read(3)
                (length,) = struct.unpack(">I", await self.read(4))
                await self.read(length)
                continue
            raise AssertionError(f"unexpected RFB server message {kind}")
        await self.read(1)
        (rectangles,) = struct.unpack(">H", await self.read(2))
        for _ in range(rectangles):
            _x, _y, width, height, encoding = struct.unpack(">HHHHi", await self.read(12))
            assert encoding == 0, encoding  # raw: the only encoding a client that names none gets
            await self.read(width * height * self.bytes_per_pixel)


async def _evaluate(slot: Slot, expression: str) -> object:
    # the target list comes from Chromium itself (in the slot's namespace); the page's socket through the CDP gate
    _, targets = await loopback_http_json(slot.cdp_port, "/json/list", network=slot.network)
    page = _pages(targets)[0]
    async with websockets.connect(page["webSocketDebuggerUrl"], max_size=None) as ws:
        params = {"expression": expression, "returnByValue": True}
        await ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate", "params": params}))
        while True:
            reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if reply.get("id") == 1:
                return reply["result"]["result"].get("value")


# every pointer position the page saw, coalesced moves included
TRACK_MOVES = """window.xs = [];
document.addEventListener('mousemove', e => {
  const all = e.getCoalescedEvents ? e.getCoalescedEvents() : [];
  for (const m of all.length ? all : [e]) window.xs.push(m.clientX);
}); 1"""


async def test_view_only_blocks_input_until_control_is_taken(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        await _evaluate(slot, TRACK_MOVES)
        async with websockets.connect(slot.novnc_ws_url, subprotocols=[Subprotocol("binary")]) as ws:
            viewer = RfbViewer(ws)
            assert await viewer.handshake() == (1920, 1080)
            await viewer.wiggle(200, 500)  # view-only: dropped
            await viewer.sync()  # read (and dropped) by x11vnc before the switch below
            await slot.set_view_only(False)  # applies to the viewer already connected
            await viewer.wiggle(900, 600)

            async def seen(since: int, wanted: Callable[[int], bool]) -> list[int]:
                """The positions seen after the first ``since``, once one of them is ``wanted``."""

                async def probe() -> list[int] | None:
                    xs = await _evaluate(slot, "window.xs")
                    assert isinstance(xs, list)
                    return xs[since:] if any(wanted(x) for x in xs[since:]) else None

                return await wait_for_async(probe, 30, what="the page to see the pointer move")

            # X delivers in order: a move of the first wiggle would have come before these
            first = await seen(0, lambda x: x >= 850)
            assert all(x >= 850 for x in first), first

            await slot.set_view_only(True)
            await viewer.wiggle(1400, 500)  # view-only again: dropped
            await viewer.sync()
            await slot.set_view_only(False)
            await viewer.wiggle(300, 600)
            later = await seen(len(first), lambda x: x < 400)
            assert not [x for x in later if x >= 1350], later


async def test_start_stop_ten_times_leaks_nothing(settings: Settings, base_index: int) -> None:
    fds = open_fds()
    slot = Slot(settings, base_index)
    for _ in range(10):
        await slot.start()
        assert _state(slot) is SlotState.RUNNING
        assert len(instance_processes(settings)) >= 4
        await slot.stop()
        assert _state(slot) is SlotState.STOPPED
        assert instance_processes(settings) == []
        assert live_children() == []
    await slot.aclose()  # also waits for the background deletion of the old profiles
    assert open_fds() == fds
    assert not slot.directory.exists()
    assert list(slot.directory.parent.iterdir()) == []
    assert not slot.layout.x_lock_path.exists()
    assert not slot.layout.x_socket_path.exists()


async def test_running_slot_has_one_active_tab_and_loopback_listeners(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        assert slot.cdp_url == f"http://127.0.0.1:{slot.cdp_port}"
        assert slot.cdp_ws_url.startswith(f"ws://127.0.0.1:{slot.cdp_port}/devtools/browser/")
        status, targets = await loopback_http_json(slot.cdp_port, "/json/list", network=slot.network)
        assert status == 200
        pages = _pages(targets)
        assert len(pages) == 1
        assert pages[0]["url"] == "about:blank"
        # pitfall 1: a background tab makes every screenshot hang; ours is the visible, active one
        assert await _evaluate(slot, "document.visibilityState") == "visible"
        # the host-side ports are the server's own gates when sandboxed (this process), the children's otherwise
        pids = {p.pid for p in instance_processes(settings)} | {os.getpid()}
        listening = [
            c.laddr
            for c in psutil.net_connections(kind="inet")
            if c.status == psutil.CONN_LISTEN and c.pid in pids and c.laddr
        ]
        assert {a.port for a in listening} >= {slot.novnc_port, slot.cdp_port}
        assert slot.vnc_port not in {a.port for a in listening}  # x11vnc: a Unix socket only
        assert {a.ip for a in listening} == {"127.0.0.1"}


async def test_websockify_serves_the_rfb_greeting_and_novnc(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        assert await _rfb_greeting(slot.novnc_ws_url) == b"RFB 003.008\n"
        status, body = await loopback_http_json(slot.novnc_port, "/vnc.html")
        assert status == 200
        assert "noVNC" in body


async def test_view_only_toggle_through_x11vnc_remote(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        assert slot.view_only
        assert "viewonly:1" in await _query_viewonly(slot)
        await slot.set_view_only(False)
        assert "viewonly:0" in await _query_viewonly(slot)
        # the mode survives a restart of the live view
        x11vnc = next(p for p in slot.processes() if p.name == "x11vnc")
        psutil.Process(x11vnc.pid).kill()
        await asyncio.wait_for(x11vnc.died, 5)
        await slot.ensure_vnc()
        assert "viewonly:0" in await _query_viewonly(slot)
        await slot.set_view_only(True)
        assert "viewonly:1" in await _query_viewonly(slot)


async def test_ensure_vnc_restarts_dead_live_view_without_killing_the_slot(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        for process in slot.processes():
            if process.name in {"x11vnc", "websockify"}:
                psutil.Process(process.pid).kill()
                await asyncio.wait_for(process.died, 5)
        assert slot.running  # the live view is not essential
        await slot.ensure_vnc()
        await slot.ensure_vnc()  # idempotent
        assert await _rfb_greeting(slot.novnc_ws_url) == b"RFB 003.008\n"


async def test_lazy_live_view(settings: Settings, base_index: int) -> None:
    async with Slot(settings, base_index) as slot:
        pass
    await slot.start(vnc=False)
    try:
        assert {p.name for p in slot.processes()} == {"Xvfb", "Chromium"}
        await slot.ensure_vnc()
        assert await _rfb_greeting(slot.novnc_ws_url) == b"RFB 003.008\n"
    finally:
        await slot.aclose()


@pytest.mark.parametrize("victim", ["Chromium", "Xvfb"])
async def test_died_names_the_child_that_died(settings: Settings, base_index: int, victim: str) -> None:
    slot = Slot(settings, base_index)
    await slot.start()
    try:
        process = next(p for p in slot.processes() if p.name == victim)
        psutil.Process(process.pid).kill()
        died = await asyncio.wait_for(slot.watch(), 10)
        assert isinstance(died, ProcessDied)
        assert died.name == victim
        assert not slot.running
        # a dead slot is rebuilt by the next start
        await slot.start()
        assert slot.running
        assert not slot.died.done()
    finally:
        await slot.aclose()


async def test_a_sigkilled_xvfb_leaves_no_x_socket_behind(settings: Settings, base_index: int) -> None:
    """The sandboxed Xvfb's socket lives in the sandbox's own /tmp: the host never sees it, killed or not."""
    slot = Slot(settings, base_index)
    await slot.start(vnc=False)
    try:
        assert not slot.layout.x_socket_path.exists()
        xvfb = next(p for p in slot.processes() if p.name == "Xvfb")
        psutil.Process(xvfb.pid).kill()
        await asyncio.wait_for(slot.watch(), 10)
        await slot.stop()
        assert not slot.layout.x_socket_path.exists()
    finally:
        await slot.aclose()


async def test_launch_failure_frees_everything_and_a_later_start_works(
    settings: Settings, base_index: int, tmp_path: Path
) -> None:
    fake = tmp_path / "fake-chrome"
    fake.write_text("#!/bin/sh\necho 'fake chrome refuses to start' >&2\nexit 1\n")
    fake.chmod(0o755)
    tmp_path.chmod(0o755)  # the slot's uid runs it
    broken = Settings(OPENBROWSE_DATA_DIR=settings.data_dir, CHROME_BINARY=str(fake), MAX_CONCURRENT_SESSIONS=1)
    slot = Slot(broken, base_index)
    with pytest.raises(ProcessStartError, match="Chromium exited with code 1") as info:
        await slot.start()
    assert "fake chrome refuses to start" in info.value.stderr_tail
    assert slot.state is SlotState.STOPPED
    assert instance_processes(settings) == []
    assert not slot.layout.x_lock_path.exists()
    assert not slot.directory.exists()

    good = Slot(settings, base_index)
    async with good:
        assert good.running


async def test_missing_chrome_binary_names_the_setting(settings: Settings, base_index: int) -> None:
    broken = Settings(OPENBROWSE_DATA_DIR=settings.data_dir, CHROME_BINARY="/nonexistent/chrome")
    slot = Slot(broken, base_index)
    with pytest.raises(BrowserUnavailable, match="CHROME_BINARY=/nonexistent/chrome"):
        await slot.start()
    assert instance_processes(settings) == []


@pytest.mark.parametrize("stage", START_STAGES)
async def test_cancelled_start_leaves_nothing(settings: Settings, base_index: int, stage: str) -> None:
    """Cancel the start while it sits at each of its own stages (never after a guessed delay)."""
    reached = asyncio.Event()
    alive_then: list[str] = []

    async def hold_at(name: str) -> None:
        if name == stage:
            alive_then.extend(sorted(p.name for p in slot.processes() if p.running))
            reached.set()
            await asyncio.Event().wait()  # parked here until the test cancels the start

    slot = Slot(settings, base_index, on_stage=hold_at)
    task = asyncio.create_task(slot.start())
    await asyncio.wait_for(reached.wait(), 60)
    assert alive_then  # the stage really had processes up
    if stage in {"chromium-spawned", "chromium-ready"}:
        assert "Chromium" in alive_then
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert slot.state is SlotState.STOPPED
    assert instance_processes(settings) == []
    assert live_children() == []
    reached.clear()
    stage = ""  # the same slot starts normally afterwards
    async with slot:
        assert slot.running


async def test_children_get_their_display_and_no_secrets(
    settings: Settings, base_index: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DISPLAY", ":9999")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    async with Slot(settings, base_index) as slot:
        chromium = next(p for p in slot.processes() if p.name == "Chromium")
        environ = psutil.Process(chromium.pid).environ()
        assert environ["DISPLAY"] == slot.display
        assert environ["OPENBROWSE_SLOT_TAG"] == slot.tag
        assert "ANTHROPIC_API_KEY" not in environ
        assert os.environ["DISPLAY"] == ":9999"
