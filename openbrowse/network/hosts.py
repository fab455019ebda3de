"""Reading hosts and URLs the way a browser's URL parser does, so a spelling trick never reaches the resolver.

Decimal, octal, hex and short IPv4 spellings, IPv4-mapped and -embedded IPv6, brackets, trailing dots and
userinfo are all normalised here; :mod:`openbrowse.network.policy` then decides on the result. Pure functions.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import TypeAlias
from urllib.parse import SplitResult, urlsplit

from openbrowse.network.refusal import NetworkRefused

IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address

_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SCHEMES = frozenset({"http", "https"})
_DEFAULT_PORTS = {"http": 80, "https": 443}
_FORBIDDEN_HOST_CHARS = frozenset("\\ \t\r\n%/?#@[]<>^|")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where a connection goes: a normalised ``host``, its ``port``, and ``ip`` when the host is a literal."""

    host: str
    port: int
    ip: IPAddress | None

    @property
    def bracketed_host(self) -> str:
        return f"[{self.host}]" if isinstance(self.ip, ipaddress.IPv6Address) else self.host

    def __str__(self) -> str:
        return f"{self.bracketed_host}:{self.port}"


@dataclass(frozen=True, slots=True)
class Target:
    """A URL taken apart: ``host`` is normalised; ``ip`` is set when the host is an address literal."""

    scheme: str
    host: str
    port: int
    path: str
    ip: IPAddress | None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.host, self.port, self.ip)

    @property
    def authority(self) -> str:
        """``host[:port]`` as it belongs in a ``Host`` header (default port omitted)."""
        host = self.endpoint.bracketed_host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"


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


def _invalid(raw: str, what: str) -> NetworkRefused:
    return NetworkRefused(f"The URL's host {raw[:200]!r} is not {what}.", rule="invalid_target", host=raw[:200])


def normalise_host(raw: str) -> tuple[str, IPAddress | None]:
    """Lower-case, strip brackets and trailing dots, IDNA-encode names; read address literals in any spelling."""
    host = raw.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        try:
            address = ipaddress.IPv6Address(host[1:-1].split("%", 1)[0])
        except ValueError as exc:
            raise _invalid(raw, "a valid IPv6 address") from exc
        return str(address), address
    if ":" in host:
        try:
            address = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError as exc:
            raise _invalid(raw, "valid") from exc
        return str(address), address
    if not host.isascii():  # IDNA maps full-width digits and dots to ASCII, as browsers do
        try:
            host = host.encode("idna").decode("ascii").lower()
        except UnicodeError as exc:
            raise _invalid(raw, "a valid name") from exc
    host = host.rstrip(".")
    if not host or any(c in _FORBIDDEN_HOST_CHARS or ord(c) < 0x20 for c in host):
        raise _invalid(raw, "valid")
    try:
        ipv4 = parse_ipv4(host)
    except ValueError as exc:
        raise _invalid(raw, "a valid address") from exc
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


def _split_host_port(netloc: str) -> tuple[str, str | None]:
    """``host``, ``[v6]``, ``host:port`` or ``[v6]:port`` into the raw host and the raw port (or None)."""
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            return netloc, None
        rest = netloc[end + 1 :]
        return netloc[: end + 1], rest[1:] if rest.startswith(":") else (rest or None)
    if ":" in netloc:
        host, port = netloc.rsplit(":", 1)
        return host, port
    return netloc, None


def parse_target(url: str) -> Target:
    """Take an http(s) URL apart; userinfo is dropped (it never decides where a request goes)."""
    parts = _split(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise NetworkRefused(f"Only http and https URLs can be fetched, not {scheme or 'a relative URL'!r}.")
    raw_host, _ = _split_host_port(parts.netloc.rpartition("@")[2])
    if not raw_host:
        raise NetworkRefused(f"The URL {url[:200]!r} has no host.")
    host, ip = normalise_host(raw_host)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, parts.port or _DEFAULT_PORTS[scheme], path, ip)


def parse_authority(authority: str) -> Endpoint:
    """A ``CONNECT`` target, ``host:port`` or ``[v6]:port``; the port is required and must be 1-65535."""
    raw_host, raw_port = _split_host_port(authority.strip())
    if not raw_host or raw_port is None or not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
        raise NetworkRefused(
            f"The destination {authority[:200]!r} is not host:port.", rule="invalid_target", host=authority[:200]
        )
    host, ip = normalise_host(raw_host)
    return Endpoint(host, int(raw_port), ip)


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


def url_for(target: Target, address: IPAddress) -> str:
    """The URL that connects to ``address`` exactly (the Host header and SNI carry the name)."""
    host = f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)
    return f"{target.scheme}://{host}:{target.port}{target.path}"
