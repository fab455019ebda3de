"""The local endpoints that are refused in every policy (spec §19.2): nothing a session runs reaches the service.

An address is *local* when a connection to it lands on this host: loopback, the unspecified address (Linux
connects ``0.0.0.0`` and ``::`` to the host itself) and every address of this host's interfaces. On a local
address these ports are refused:

* this service's own listening ports: ``PORT`` from settings, ports the caller passes, and ports claimed at run
  time by listeners of this process (the egress enforcers' own TCP ports, so a proxy is never asked to reach
  itself);
* every display slot's CDP, VNC and websockify ports, for every slot index any instance could use, whoever owns
  them. The bases are duplicated from :mod:`openbrowse.slots.layout` (which this layer may not import); a test
  checks that they agree.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psutil

from openbrowse.config import LAST_SLOT_INDEX
from openbrowse.network.hosts import IPAddress, embedded_ipv4

if TYPE_CHECKING:
    from collections.abc import Iterable

    from openbrowse.config import Settings
    from openbrowse.network.refusal import Rule

CDP_PORT_BASE = 9222  # slots.layout.CDP_BASE
VNC_PORT_BASE = 5910  # slots.layout.VNC_BASE + DISPLAY_BASE
NOVNC_PORT_BASE = 6080  # slots.layout.NOVNC_BASE
INTERFACE_CACHE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class PortRange:
    """Ports ``first..last`` (inclusive) that are refused on local addresses, and what they are."""

    first: int
    last: int
    rule: Rule
    what: str

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self.first <= port <= self.last


def slot_port_ranges(last_index: int = LAST_SLOT_INDEX) -> tuple[PortRange, ...]:
    """The CDP, VNC and websockify ports of slots ``0..last_index``."""
    return (
        PortRange(CDP_PORT_BASE, CDP_PORT_BASE + last_index, "slot_endpoint", "a browser slot's DevTools port"),
        PortRange(VNC_PORT_BASE, VNC_PORT_BASE + last_index, "slot_endpoint", "a browser slot's VNC port"),
        PortRange(NOVNC_PORT_BASE, NOVNC_PORT_BASE + last_index, "slot_endpoint", "a browser slot's live-view port"),
    )


# -- ports this process listens on, claimed at run time ----------------------------------------------------------
_claimed: Counter[int] = Counter()
_claimed_lock = threading.Lock()


def claim_service_port(port: int) -> None:
    """Refuse ``port`` on local addresses in every policy until :func:`release_service_port` (counted)."""
    with _claimed_lock:
        _claimed[port] += 1


def release_service_port(port: int) -> None:
    with _claimed_lock:
        _claimed[port] -= 1
        if _claimed[port] <= 0:
            del _claimed[port]


def claimed_service_ports() -> frozenset[int]:
    with _claimed_lock:
        return frozenset(_claimed)


@dataclass(frozen=True, slots=True)
class ReservedPorts:
    """The ports refused on local addresses: ``service_ports`` plus claimed ones, and the slot ranges."""

    service_ports: frozenset[int] = frozenset()
    ranges: tuple[PortRange, ...] = field(default_factory=slot_port_ranges)

    @classmethod
    def from_settings(cls, settings: Settings, service_ports: Iterable[int] = ()) -> ReservedPorts:
        """``PORT`` (unless 0, an ephemeral port the caller must pass in ``service_ports``) and every slot range."""
        ports = {port for port in service_ports if port}
        if settings.PORT:
            ports.add(settings.PORT)
        return cls(frozenset(ports), slot_port_ranges(LAST_SLOT_INDEX))

    def rule_for(self, port: int) -> tuple[Rule, str] | None:
        """``(rule, what the port is)`` when ``port`` is reserved, else None."""
        if port in self.service_ports or port in claimed_service_ports():
            return "service_port", "this service's own port"
        for reserved in self.ranges:
            if port in reserved:
                return reserved.rule, reserved.what
        return None


# -- which addresses are this host -------------------------------------------------------------------------------
_interfaces: tuple[float, frozenset[IPAddress]] = (float("-inf"), frozenset())
_interfaces_lock = threading.Lock()


def interface_addresses() -> frozenset[IPAddress]:
    """Every IPv4 and IPv6 address of this host's interfaces (re-read at most every few seconds)."""
    global _interfaces
    now = time.monotonic()
    read_at, addresses = _interfaces
    if now - read_at < INTERFACE_CACHE_SECONDS:
        return addresses
    found: set[IPAddress] = set()
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            try:
                found.add(ipaddress.ip_address(entry.address.split("%", 1)[0]))
            except ValueError:
                continue
    addresses = frozenset(found)
    with _interfaces_lock:
        _interfaces = (now, addresses)
    return addresses


def is_local_address(address: IPAddress) -> bool:
    """True when a connection to ``address`` lands on this host."""
    inner = embedded_ipv4(address)
    if inner.is_loopback or inner.is_unspecified:
        return True
    own = interface_addresses()
    return address in own or inner in own
