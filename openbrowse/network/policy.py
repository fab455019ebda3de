"""The network policy (spec §19.2): which destinations a session may reach, decided before any byte is sent.

Rules, applied to every address a host name resolves to, together with the port:

* always, in ``open`` and ``public-only``: link-local and cloud metadata endpoints, this service's own ports and
  every slot's CDP, VNC and websockify ports on any local address (:mod:`openbrowse.network.local`);
* ``public-only``: loopback, private (RFC 1918, CGNAT, ULA), unspecified and other non-global addresses too.

``NETWORK_ALLOWED_HOSTS`` patterns (host names with ``*`` wildcards, IP literals, CIDR blocks, each optionally
``:port``) punch holes in the ``public-only`` rule, never in the always-refused set. One :class:`NetworkRules`
serves the agent's ``http_fetch``, the browser guard and the slots' egress enforcers; build it with
:meth:`NetworkRules.from_settings`.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeAlias

from openbrowse.network.hosts import (
    Endpoint,
    IPAddress,
    Target,
    embedded_ipv4,
    normalise_host,
    parse_authority,
    parse_ipv4,
    parse_target,
    url_for,
)
from openbrowse.network.local import ReservedPorts, is_local_address
from openbrowse.network.refusal import NetworkRefused, Refusal, Rule

if TYPE_CHECKING:
    from openbrowse.config import Settings

__all__ = [
    "Endpoint",
    "IPAddress",
    "NetworkRefused",
    "NetworkRules",
    "Policy",
    "Refusal",
    "Resolver",
    "Rule",
    "Target",
    "embedded_ipv4",
    "normalise_host",
    "parse_authority",
    "parse_ipv4",
    "parse_target",
    "resolve",
    "url_for",
]

Policy: TypeAlias = Literal["open", "public-only"]
Resolver: TypeAlias = Callable[[str, int], Awaitable[list[IPAddress]]]

RESOLVE_TIMEOUT = 10.0
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud metadata
    }
)
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))  # 169.254.169.254 too
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_ULA = ipaddress.ip_network("fc00::/7")
_NEVER = "never allowed"
_PUBLIC_ONLY = "NETWORK_POLICY=public-only"


# -- classification (pure) ---------------------------------------------------------------------------------------
def metadata_reason(address: IPAddress) -> tuple[Rule, str] | None:
    inner = embedded_ipv4(address)
    if address in METADATA_ADDRESSES or inner in METADATA_ADDRESSES:
        return "metadata", "a cloud metadata address"
    if any(inner in net for net in _LINK_LOCAL if net.version == inner.version):
        return "link_local", "a link-local address"
    return None


def non_public_reason(address: IPAddress) -> str | None:
    inner = embedded_ipv4(address)
    checks = (
        (inner.is_unspecified, "an unspecified address"),
        (inner.is_loopback, "a loopback address"),
        (inner.is_multicast, "a multicast address"),
        (isinstance(inner, ipaddress.IPv4Address) and inner in _CGNAT, "a CGNAT address"),
        (isinstance(inner, ipaddress.IPv6Address) and inner in _ULA, "a unique-local address"),
        (inner.is_private, "a private address"),
        (not inner.is_global, "a non-public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


@dataclass(frozen=True, slots=True)
class AllowPattern:
    """One ``NETWORK_ALLOWED_HOSTS`` entry: a host glob or an address block, optionally limited to one port."""

    host_glob: str | None
    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    port: int | None

    @classmethod
    def parse(cls, raw: str) -> AllowPattern:
        text, port = raw.strip().lower(), None
        if text.startswith("[") and "]" in text:
            inside, _, rest = text[1:].partition("]")
            text, port = inside, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
        elif text.count(":") == 1 and text.rsplit(":", 1)[1].isdigit():
            text, digits = text.rsplit(":", 1)
            port = int(digits)
        try:
            return cls(None, ipaddress.ip_network(text, strict=False), port)
        except ValueError:
            return cls(text.rstrip("."), None, port)

    def matches(self, endpoint: Endpoint, address: IPAddress) -> bool:
        if self.port is not None and self.port != endpoint.port:
            return False
        if self.network is not None:
            return address in self.network or embedded_ipv4(address) in self.network
        return self.host_glob is not None and fnmatch.fnmatchcase(endpoint.host, self.host_glob)


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver returns for ``host``; a failed lookup is a clear refusal."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=RESOLVE_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise NetworkRefused(f"Could not resolve {host}: {exc}.", rule="unresolvable", host=host, port=port) from exc
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise NetworkRefused(f"Could not resolve {host}.", rule="unresolvable", host=host, port=port)
    return addresses


def _where(endpoint: Endpoint, address: IPAddress, with_port: bool) -> str:
    """``10.0.0.5``, ``db.test -> 10.0.0.5``, or with the port ``127.0.0.1:8420``, ``localhost:8420 -> 127.0.0.1``."""
    if str(address) == endpoint.host:
        return str(endpoint) if with_port else endpoint.host
    return f"{endpoint if with_port else endpoint.host} -> {address}"


@dataclass(frozen=True, slots=True)
class NetworkRules:
    """The policy, its holes, the reserved local ports and the resolver; immutable, shared across a run."""

    policy: Policy = "open"
    allowed_hosts: tuple[str, ...] = ()
    reserved: ReservedPorts = field(default_factory=ReservedPorts)
    resolver: Resolver = resolve
    _patterns: tuple[AllowPattern, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_patterns", tuple(AllowPattern.parse(p) for p in self.allowed_hosts))

    @classmethod
    def build(cls, policy: str, allowed_hosts: str | None, *, reserved: ReservedPorts | None = None) -> NetworkRules:
        """Rules from the raw setting values (``NETWORK_POLICY``, ``NETWORK_ALLOWED_HOSTS``)."""
        patterns = tuple(p.strip().lower().rstrip(".") for p in (allowed_hosts or "").split(",") if p.strip())
        return cls("public-only" if policy == "public-only" else "open", patterns, reserved or ReservedPorts())

    @classmethod
    def from_settings(cls, settings: Settings, *, service_ports: Iterable[int] = ()) -> NetworkRules:
        """The one way the service builds its rules; pass the bound port in ``service_ports`` when ``PORT=0``."""
        reserved = ReservedPorts.from_settings(settings, service_ports)
        return cls.build(settings.NETWORK_POLICY, settings.NETWORK_ALLOWED_HOSTS, reserved=reserved)

    def refusal(self, endpoint: Endpoint | Target, addresses: Iterable[IPAddress]) -> NetworkRefused | None:
        """Why this destination may not be reached at these addresses, or None when every address is fine."""
        if isinstance(endpoint, Target):
            endpoint = endpoint.endpoint
        if endpoint.host in METADATA_HOSTS or endpoint.host.endswith(".metadata.google.internal"):
            return self._refused(endpoint, "metadata", f"{endpoint.host} is a cloud metadata host", _NEVER)
        for address in addresses:
            found = self._address_refusal(endpoint, address)
            if found is not None:
                return found
        return None

    def _address_refusal(self, endpoint: Endpoint, address: IPAddress) -> NetworkRefused | None:
        metadata = metadata_reason(address)
        if metadata is not None:
            rule, what = metadata
            return self._refused(endpoint, rule, f"{_where(endpoint, address, False)} is {what}", _NEVER)
        reserved = self.reserved.rule_for(endpoint.port)
        if reserved is not None and is_local_address(address):
            rule, what = reserved
            return self._refused(endpoint, rule, f"{_where(endpoint, address, True)} is {what}", _NEVER)
        if self.policy == "public-only" and not any(p.matches(endpoint, address) for p in self._patterns):
            reason = non_public_reason(address)
            if reason is not None:
                where = _where(endpoint, address, False)
                return self._refused(endpoint, "public_only", f"{where} is {reason}", _PUBLIC_ONLY)
        return None

    @staticmethod
    def _refused(endpoint: Endpoint, rule: Rule, what: str, qualifier: str) -> NetworkRefused:
        reason = f"{what} ({qualifier})."
        return NetworkRefused(
            f"Refused by the network policy: {reason}", rule=rule, host=endpoint.host, port=endpoint.port, reason=reason
        )

    async def check_endpoint(self, endpoint: Endpoint) -> list[IPAddress]:
        """Resolve once and check every answer; return the addresses a connection may use (pin them)."""
        found = self.refusal(endpoint, [])
        if found is None:
            addresses = [endpoint.ip] if endpoint.ip is not None else await self.resolver(endpoint.host, endpoint.port)
            found = self.refusal(endpoint, addresses)
        if found is not None:
            raise found
        return addresses

    async def check(self, url: str) -> tuple[Target, list[IPAddress]]:
        """Parse, resolve and check a URL; return the target and the addresses a connection may use."""
        target = parse_target(url)
        return target, await self.check_endpoint(target.endpoint)
