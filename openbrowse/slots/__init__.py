"""Display slots and child-process supervision: Xvfb, x11vnc, websockify and Chromium per slot.

Knows nothing of agents, LLMs, SQL or browser-use: it hands out a CDP URL. Entry point: :class:`SlotPool`.
"""

from __future__ import annotations

from openbrowse.slots.layout import SlotLayout, slot_layout
from openbrowse.slots.pool import PoolStats, SlotLease, SlotPool
from openbrowse.slots.process import ManagedProcess
from openbrowse.slots.slot import Slot, SlotState

__all__ = [
    "ManagedProcess",
    "PoolStats",
    "Slot",
    "SlotLayout",
    "SlotLease",
    "SlotPool",
    "SlotState",
    "slot_layout",
]
