"""Lazy live view (spec §4.10, issue 11): x11vnc and websockify run only while someone watches."""

from __future__ import annotations

import asyncio

import pytest
import websockets
from websockets.typing import Subprotocol

from openbrowse.config import Settings
from openbrowse.slots.slot import Slot
from tests.support.display import needs_display

pytestmark = [pytest.mark.display, needs_display]

LIVE_VIEW = {"x11vnc", "websockify"}


def _running(slot: Slot) -> set[str]:
    return {p.name for p in slot.processes() if p.running}


def _pids(slot: Slot) -> set[int]:
    return {p.pid for p in slot.processes() if p.running and p.name in LIVE_VIEW}


async def _greeting(slot: Slot) -> bytes:
    async with websockets.connect(slot.novnc_ws_url, subprotocols=[Subprotocol("binary")], open_timeout=10) as ws:
        first = await asyncio.wait_for(ws.recv(), 10)
    return first if isinstance(first, bytes) else first.encode()


async def _until_gone(slot: Slot, within: float = 60.0) -> None:
    async with asyncio.timeout(within):
        while _running(slot) & LIVE_VIEW:
            await asyncio.sleep(0.05)


async def test_the_live_view_starts_with_the_first_viewer_and_stops_after_the_last(
    settings: Settings, base_index: int
) -> None:
    slot = Slot(settings, base_index)
    slot.vnc_idle_grace = 0.2
    await slot.start(vnc=False)
    try:
        assert _running(slot) == {"Xvfb", "Chromium"}  # nobody watches: no VNC side
        first = await slot.add_viewer()
        assert _running(slot) >= LIVE_VIEW
        assert await _greeting(slot) == b"RFB 003.008\n"
        second = await slot.add_viewer()  # idempotent: the same processes serve both
        pids = _pids(slot)
        slot.remove_viewer(first)
        assert slot.viewers == 1
        assert not slot.vnc_stop_pending  # someone still watches
        slot.remove_viewer(second)
        assert slot.vnc_stop_pending
        third = await slot.add_viewer()  # back within the grace period: nothing restarts
        assert not slot.vnc_stop_pending
        assert _pids(slot) == pids
        slot.remove_viewer(third)
        await _until_gone(slot)
        assert _running(slot) == {"Xvfb", "Chromium"}
        assert slot.running  # the browser is untouched

        again = await slot.add_viewer()  # the next viewer starts it afresh
        assert await _greeting(slot) == b"RFB 003.008\n"
        assert _pids(slot).isdisjoint(pids)
        slot.remove_viewer(again)
    finally:
        await slot.aclose()


async def test_a_viewer_of_an_earlier_run_does_not_count_for_the_next(settings: Settings, base_index: int) -> None:
    slot = Slot(settings, base_index)
    await slot.start(vnc=False)
    try:
        old = await slot.add_viewer()
        await slot.stop()
        await slot.start(vnc=False)
        current = await slot.add_viewer()
        slot.remove_viewer(old)  # its bridge ends late, after the slot was handed on
        assert slot.viewers == 1
        assert not slot.vnc_stop_pending
        slot.remove_viewer(current)
        assert slot.vnc_stop_pending
    finally:
        await slot.aclose()


async def test_a_dead_live_view_is_restarted_for_the_next_viewer(settings: Settings, base_index: int) -> None:
    slot = Slot(settings, base_index)
    await slot.start(vnc=False)
    try:
        ticket = await slot.add_viewer()
        for process in slot.processes():
            if process.name in LIVE_VIEW:
                process.send_signal_to_group(9)
                await asyncio.wait_for(process.died, 10)
        assert slot.running
        other = await slot.add_viewer()
        assert await _greeting(slot) == b"RFB 003.008\n"
        slot.remove_viewer(ticket)
        slot.remove_viewer(other)
    finally:
        await slot.aclose()
