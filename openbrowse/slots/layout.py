"""Pure port and display arithmetic for display slots (spec §7.1).

Slot ``i`` owns X display ``:10+i``, VNC port ``5900 + display``, noVNC/websockify port ``6080 + i`` and CDP
port ``9222 + i``. The bases are fixed constants, not settings. A pool may start at an absolute index above 0
(``SlotPool(base_index=…)``) so that parallel test runs do not fight over ``:10`` or 9222; that offset is the
only thing that moves a slot.

Indexes are bounded so that the ranges never overlap each other: the VNC range ``5910 + i`` would reach the
noVNC range ``6080 + j`` at ``i = 170``, so ``MAX_SLOT_INDEX`` is 169.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "CDP_BASE",
    "DISPLAY_BASE",
    "MAX_SLOT_INDEX",
    "NOVNC_BASE",
    "SCREEN_DEPTH",
    "SCREEN_HEIGHT",
    "SCREEN_WIDTH",
    "VNC_BASE",
    "SlotLayout",
    "slot_layout",
]

DISPLAY_BASE = 10
VNC_BASE = 5900
NOVNC_BASE = 6080
CDP_BASE = 9222

SCREEN_WIDTH = 1920
SCREEN_HEIGHT = 1080
SCREEN_DEPTH = 24

MAX_SLOT_INDEX = (NOVNC_BASE - VNC_BASE - DISPLAY_BASE) - 1  # 169: keeps the VNC and noVNC ranges disjoint

X_SOCKET_DIR = Path("/tmp/.X11-unix")
X_LOCK_DIR = Path("/tmp")


@dataclass(frozen=True, slots=True)
class SlotLayout:
    """Where slot ``index`` lives: its X display number and its three TCP ports (all on 127.0.0.1)."""

    index: int

    def __post_init__(self) -> None:
        if not 0 <= self.index <= MAX_SLOT_INDEX:
            raise ValueError(f"slot index {self.index} is outside 0..{MAX_SLOT_INDEX}")

    @property
    def display_number(self) -> int:
        return DISPLAY_BASE + self.index

    @property
    def display(self) -> str:
        """The ``DISPLAY`` value, e.g. ``":10"``."""
        return f":{self.display_number}"

    @property
    def vnc_port(self) -> int:
        return VNC_BASE + self.display_number

    @property
    def novnc_port(self) -> int:
        return NOVNC_BASE + self.index

    @property
    def cdp_port(self) -> int:
        return CDP_BASE + self.index

    @property
    def ports(self) -> tuple[int, int, int]:
        """``(vnc_port, novnc_port, cdp_port)``."""
        return (self.vnc_port, self.novnc_port, self.cdp_port)

    @property
    def x_socket_path(self) -> Path:
        """The Unix socket Xvfb creates for this display."""
        return X_SOCKET_DIR / f"X{self.display_number}"

    @property
    def x_lock_path(self) -> Path:
        """The lock file Xvfb writes (holding its pid) while it owns this display."""
        return X_LOCK_DIR / f".X{self.display_number}-lock"

    @property
    def cdp_url(self) -> str:
        return f"http://127.0.0.1:{self.cdp_port}"


def slot_layout(index: int) -> SlotLayout:
    """Layout of the slot with absolute index ``index`` (pool base index plus local index)."""
    return SlotLayout(index)
