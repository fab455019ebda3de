"""The agent's network policy (spec §19.2): which URLs the agent may reach, decided before any byte is sent.

Two rules, applied to every address a host name resolves to:

* always (``open`` and ``public-only``): link-local and cloud metadata endpoints are refused;
* ``public-only``: loopback, private (RFC 1918, CGNAT, ULA), unspecified and other non-global addresses too.

Hosts are normalised the way a browser's URL parser would read them (decimal, octal, hex and short IPv4
spellings, IPv4-mapped and -embedded IPv6, brackets, trailing dots, userinfo), so a spelling trick never
reaches the resolver. ``NETWORK_ALLOWED_HOSTS`` patterns (host names with ``*`` wildcards, IP literals or
CIDR blocks) punch holes in the ``public-only`` rule, never in the metadata rule.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias
from urllib.parse import SplitResult, urlsplit

from openbrowse.errors import OpenBrowseError

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address
Policy: TypeAlias = Literal["open", "public-only"]

RESOLVE_TIMEOUT = 10.0
METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata.goog", "metadata"})
METADATA_ADDRESSES = frozenset(
    {
        ipaddress.ip_address("fd00:ec2::254"),  # AWS IMDS over IPv6
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud metadata
    }
)
_LINK_LOCAL = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FORBIDDEN_HOST_CHARS = frozenset("\\ \t\r\n%/?#@[]<>^|")


class NetworkRefused(OpenBrowseError):
    """The network policy refused a URL; the message says which address and why, in one sentence."""

    code = "network_refused"


@dataclass(frozen=True, slots=True)
class Target:
    """A URL taken apart: ``host`` is normalised; ``ip`` is set when the host is an address literal."""

    scheme: str
    host: str
    port: int
    path: str
    ip: IPAddress | None

    @property
    def authority(self) -> str:
        """``host[:port]`` as it belongs in a ``Host`` header (default port omitted)."""
        host = f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"


# -- normalisation (pure) ----------------------------------------------------------------------------------------
def _ipv4_number(part: str) -> int | None:
    """One dotted part as the WHATWG URL parser reads it: ``0x`` hex, leading-zero octal, else decimal."""
    if part[:2].lower() == "0x":
        digits, base = part[2:], 16
        if digits == "":
            return 0
    elif len(part) > 1 and part.startswith("0"):
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits and digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def _ends_in_number(host: str) -> bool:
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    last = parts[-1]
    return last.isdigit() or (last[:2].lower() == "0x" and all(c in "0123456789abcdefABCDEF" for c in last[2:]))


def parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Any IPv4 spelling a browser accepts (``2130706433``, ``0177.0.0.1``, ``0x7f.1``, ``127.1``), else None.

    Raises ``ValueError`` for a host that ends in a number but is no valid address (browsers reject it too).
    """
    if not host or not _ends_in_number(host):
        return None
    parts = host.split(".")
    if parts[-1] == "":
        parts.pop()
    numbers = [_ipv4_number(part) for part in parts]
    if len(parts) > 4 or any(n is None for n in numbers):
        raise ValueError(f"{host!r} is not a valid IPv4 address")
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        raise ValueError(f"{host!r} is not a valid IPv4 address")
    number = values[-1]
    for index, value in enumerate(values[:-1]):
        number += value << (8 * (3 - index))
    return ipaddress.IPv4Address(number)


def normalise_host(raw: str) -> tuple[str, IPAddress | None]:
    """Lower-case, strip brackets and trailing dots, IDNA-encode names; read address literals in any spelling."""
    host = raw.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        try:
            address = ipaddress.IPv6Address(host[1:-1].split("%", 1)[0])
        except ValueError as exc:
            raise NetworkRefused(f"The URL's host {raw!r} is not a valid IPv6 address.") from exc
        return str(address), address
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError as exc:
            raise NetworkRefused(f"The URL's host {raw!r} is not valid.") from exc
        return str(address), address
    if not host.isascii():  # IDNA maps full-width digits and dots to ASCII, as browsers do
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError as exc:
            raise NetworkRefused(f"The URL's host {raw!r} is not a valid name.") from exc
    host = host.rstrip(".")
    if not host or any(c in _FORBIDDEN_HOST_CHARS or ord(c) < 0x20 for c in host):
        raise NetworkRefused(f"The URL's host {raw!r} is not valid.")
    try:
        ipv4 = parse_ipv4(host)
    except ValueError as exc:
        raise NetworkRefused(f"The URL's host {raw!r} is not a valid address.") from exc
    if ipv4 is not None:
        return str(ipv4), ipv4
    return host, None


def _split(url: str) -> SplitResult:
    if any(ord(c) < 0x21 or c == "\\" for c in url.strip()):
        raise NetworkRefused("The URL contains spaces, control characters or backslashes; send it percent-encoded.")
    try:
        parts = urlsplit(url.strip())
        _ = parts.port
    except ValueError as exc:
        raise NetworkRefused(f"The URL {url[:200]!r} is not valid: {exc}.") from exc
    return parts


def parse_target(url: str) -> Target:
    """Take an http(s) URL apart; userinfo is dropped (it never decides where a request goes)."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise NetworkRefused(f"Only http and https URLs can be fetched, not {scheme or 'a relative URL'!r}.")
    netloc = parts.netloc.rpartition("@")[2]
    raw_host = netloc
    if netloc.startswith("["):
        raw_host = netloc[: netloc.find("]") + 1]
    elif ":" in netloc:
        raw_host = netloc.rsplit(":", 1)[0]
    if not raw_host:
        raise NetworkRefused(f"The URL {url[:200]!r} has no host.")
    host, ip = normalise_host(raw_host)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, parts.port or _DEFAULT_PORTS[scheme], path, ip)


def embedded_ipv4(address: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped, -compatible, NAT64 or 6to4 IPv6 address; else the address."""
    if isinstance(address, ipaddress.IPv4Address):
        return address
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if int(address) >> 32 == 0 and int(address) > 1:  # deprecated IPv4-compatible ::a.b.c.d
        return ipaddress.IPv4Address(int(address))
    return address


# -- classification (pure) ---------------------------------------------------------------------------------------
def metadata_reason(address: IPAddress) -> str | None:
    inner = embedded_ipv4(address)
    if address in METADATA_ADDRESSES or inner in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if any(inner in net for net in _LINK_LOCAL if net.version == inner.version):
        return "a link-local address"
    return None


def non_public_reason(address: IPAddress) -> str | None:
    inner = embedded_ipv4(address)
    checks = (
        (inner.is_unspecified, "an unspecified address"),
        (inner.is_loopback, "a loopback address"),
        (inner.is_multicast, "a multicast address"),
        (
            isinstance(inner, ipaddress.IPv4Address) and inner in ipaddress.ip_network("100.64.0.0/10"),
            "a CGNAT address",
        ),
        (
            isinstance(inner, ipaddress.IPv6Address) and inner in ipaddress.ip_network("fc00::/7"),
            "a unique-local address",
        ),
        (inner.is_private, "a private address"),
        (not inner.is_global, "a non-public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


@dataclass(frozen=True, slots=True)
class NetworkRules:
    """The policy plus its holes; built once per run from settings."""

    policy: Policy = "open"
    allowed_hosts: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, policy: str, allowed_hosts: str | None) -> NetworkRules:
        patterns = tuple(p.strip().lower().rstrip(".") for p in (allowed_hosts or "").split(",") if p.strip())
        return cls("public-only" if policy == "public-only" else "open", patterns)

    @property
    def guards_navigation(self) -> bool:
        return self.policy == "public-only"

    def _host_allowed(self, host: str) -> bool:
        return any(fnmatch.fnmatchcase(host, pattern) for pattern in self.allowed_hosts)

    def _address_allowed(self, address: IPAddress) -> bool:
        for pattern in self.allowed_hosts:
            try:
                network = ipaddress.ip_network(pattern, strict=False)
            except ValueError:
                continue
            if address in network or embedded_ipv4(address) in network:
                return True
        return False

    def refusal(self, target: Target, addresses: Iterable[IPAddress]) -> str | None:
        """Why this target may not be reached at these addresses (one short sentence), or None."""
        if target.host in METADATA_HOSTS or target.host.endswith(".metadata.google.internal"):
            return f"{target.host} is a cloud metadata host (never allowed)."
        host_allowed = self._host_allowed(target.host)
        for address in addresses:
            where = str(address) if str(address) == target.host else f"{target.host} -> {address}"
            reason = metadata_reason(address)
            if reason:
                return f"{where} is {reason} (never allowed)."
            if self.policy == "public-only" and not host_allowed and not self._address_allowed(address):
                reason = non_public_reason(address)
                if reason:
                    return f"{where} is {reason} (NETWORK_POLICY=public-only)."
        return None

    async def check(self, url: str) -> tuple[Target, list[IPAddress]]:
        """Parse, resolve and check a URL; return the target and the addresses a connection may use."""
        target = parse_target(url)
        reason = self.refusal(target, [])
        if reason is None:
            addresses = [target.ip] if target.ip is not None else await resolve(target.host, target.port)
            reason = self.refusal(target, addresses)
        if reason:
            raise NetworkRefused(f"Refused by the network policy: {reason}")
        return target, addresses


async def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address the system resolver returns for ``host``; a failed lookup is a clear refusal."""
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=RESOLVE_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise NetworkRefused(f"Could not resolve {host}: {exc}.") from exc
    addresses: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in addresses:
            addresses.append(address)
    if not addresses:
        raise NetworkRefused(f"Could not resolve {host}.")
    return addresses


def url_for(target: Target, address: IPAddress) -> str:
    """The URL that connects to ``address`` exactly (the Host header and SNI carry the name)."""
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    return f"{target.scheme}://{host}:{target.port}{target.path}"
