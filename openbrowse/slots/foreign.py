"""Is a slot's display or port already taken by a program that is not ours? (Never killed: only reported.)

A developer's own Chrome on 9222, another X server on ``:10`` or any other listener on a slot's noVNC port makes
that slot unusable: starting our Chromium next to a foreign one on the same CDP port would hand an agent the
stranger's browser (``/json/version`` answers from whoever holds the port). The pool skips such a slot and logs
why (:meth:`SlotPool.blocked`); :meth:`Slot.start` refuses it with :class:`SlotBlocked`.

The check is cheap enough to run before every start: a ``bind`` on each TCP port (``EADDRINUSE`` means a
listener) and a look at the display's X lock file and socket. Only when something is found does
:func:`describe_blockers` scan ``/proc`` (psutil) to name the owner.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
from typing import TYPE_CHECKING

import psutil

from openbrowse.errors import BrowserUnavailable
from openbrowse.slots.x_files import lock_owner, x_display_taken

if TYPE_CHECKING:
    from openbrowse.slots.layout import SlotLayout

__all__ = ["SlotBlocked", "describe_blockers", "find_blockers", "tcp_port_taken", "x_display_taken"]

logger = logging.getLogger(__name__)


class SlotBlocked(BrowserUnavailable):
    """A slot's display or one of its ports belongs to another program."""

    code = "slot_blocked"


def tcp_port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """True when something listens on ``host:port`` (a bind with SO_REUSEADDR fails only for a listener)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def slot_ports(layout: SlotLayout) -> tuple[int, ...]:
    """The TCP ports a slot listens on (127.0.0.1): noVNC and CDP (x11vnc has a Unix socket only)."""
    return (layout.novnc_port, layout.cdp_port)


def find_blockers(layout: SlotLayout, ports: tuple[int, ...] | None = None) -> list[str]:
    """Short descriptions of what another program holds of a slot, e.g. ``["port 9222"]`` (``[]`` when the
    slot is free; ``ports`` default to the slot's own). Cheap: no ``/proc`` scan."""
    ports = slot_ports(layout) if ports is None else ports
    found = [f"display {layout.display}"] if x_display_taken(layout) else []
    found += [f"port {port}" for port in ports if tcp_port_taken(port)]
    return found


def _listener_names(ports: set[int]) -> dict[int, str]:
    names: dict[int, str] = {}
    with contextlib.suppress(psutil.Error, OSError):
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status != psutil.CONN_LISTEN or not conn.laddr or conn.laddr.port not in ports:
                continue
            names[conn.laddr.port] = _process_name(conn.pid)
    return names


def _process_name(pid: int | None) -> str:
    if pid is None:
        return "a process of another user"
    try:
        return f"{psutil.Process(pid).name()} (pid {pid})"
    except psutil.Error:
        return f"pid {pid}"


def describe_blockers(layout: SlotLayout, ports: tuple[int, ...] | None = None) -> str | None:
    """One sentence naming every foreign holder of the slot's display and ports, or None if the slot is free.

    Blocking (scans ``/proc`` only when something is taken); call through ``asyncio.to_thread`` on a hot path.
    """
    ports = slot_ports(layout) if ports is None else ports
    if not find_blockers(layout, ports):
        return None
    taken = [port for port in ports if tcp_port_taken(port)]
    parts: list[str] = []
    if x_display_taken(layout):
        owner = lock_owner(layout)
        holder = _process_name(owner) if owner is not None else "another X server"
        parts.append(f"display {layout.display} is in use by {holder}")
    if taken:
        names = _listener_names(set(taken))
        parts += [f"port {port} is in use by {names.get(port, 'another program')}" for port in taken]
    if not parts:
        return None
    return f"Display slot {layout.index} is unusable: {'; '.join(parts)} (not started by this OpenBrowse)"
