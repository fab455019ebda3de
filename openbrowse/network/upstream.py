"""Upstream proxies (spec §28.1): what one is, how it is read from a request or from ``PROXY_POOL``, and what the
operator's configuration and the API may show of it.

An :class:`UpstreamProxy` holds its credentials, but its ``repr`` and :meth:`~UpstreamProxy.public` never show
them; :meth:`~UpstreamProxy.secret_values` is what the redactor hides. The wire protocols (HTTP ``CONNECT`` and
SOCKS5) are in :mod:`.upstream_wire`, the route a slot's traffic takes in :mod:`.proxy_route`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias
from urllib.parse import unquote, urlsplit

from openbrowse.errors import InvalidRequest
from openbrowse.network.hosts import normalise_host
from openbrowse.network.refusal import NetworkRefused

__all__ = ["ProxyScheme", "UpstreamProxy", "parse_pool", "parse_proxy_url", "proxy_from_fields"]

ProxyScheme: TypeAlias = Literal["http", "socks5"]
SCHEMES: tuple[ProxyScheme, ...] = ("http", "socks5")
MAX_CREDENTIAL_BYTES = 255
"""SOCKS5 carries each of username and password in one length byte (RFC 1929); the same bound for HTTP."""
MIN_REDACTED_CHARS = 4


@dataclass(frozen=True, slots=True)
class UpstreamProxy:
    """One upstream proxy: ``host`` is normalised (IDNA, lower case, IPv6 without brackets)."""

    scheme: ProxyScheme
    host: str
    port: int
    username: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    ignore_cert_errors: bool = False

    @property
    def label(self) -> str:
        """``host:port`` (IPv6 in brackets): how logs, errors and the feed name it. Never carries credentials."""
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def public(self) -> dict[str, Any]:
        """What ``GET`` shows (spec §28.1): where it is and whether a username is set, never the credentials."""
        return {"host": self.host, "port": self.port, "scheme": self.scheme, "hasUsername": self.username is not None}

    def secret_values(self) -> dict[str, str]:
        """Value → placeholder name, for the redactor (:mod:`openbrowse.domain.redaction`). Nothing of ours ever
        writes them; this is the second line. Values shorter than :data:`MIN_REDACTED_CHARS` are left out: hiding
        every ``u`` of every log line would make the log unreadable and protect nothing."""
        values = {}
        if self.username and len(self.username) >= MIN_REDACTED_CHARS:
            values[self.username] = "proxy_username"
        if self.password and len(self.password) >= MIN_REDACTED_CHARS:
            values[self.password] = "proxy_password"
        return values

    def stored(self) -> dict[str, Any]:
        """Everything, for the owner's row while it lives (like ``sensitiveData``, spec §25.3)."""
        return {
            **self.public(),
            "username": self.username,
            "password": self.password,
            "ignoreCertErrors": self.ignore_cert_errors,
        }

    @classmethod
    def from_stored(cls, data: dict[str, Any]) -> UpstreamProxy | None:
        """The proxy a row holds; None when its credentials were wiped (the owner ended) or the row is partial."""
        try:
            scheme = data["scheme"]
            if scheme not in SCHEMES or (data.get("hasUsername") and data.get("username") is None):
                return None
            return cls(
                scheme,
                str(data["host"]),
                int(data["port"]),
                data.get("username"),
                data.get("password"),
                bool(data.get("ignoreCertErrors", False)),
            )
        except (KeyError, TypeError, ValueError):
            return None


def _credential(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest(f"customProxy.{name} must be a string.")
    if not value:
        return None
    if len(value.encode()) > MAX_CREDENTIAL_BYTES:
        raise InvalidRequest(f"customProxy.{name} must be at most {MAX_CREDENTIAL_BYTES} bytes.")
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):
        raise InvalidRequest(f"customProxy.{name} must not contain control characters.")
    return value


def proxy_from_fields(
    host: object,
    port: object,
    *,
    username: object = None,
    password: object = None,
    scheme: object = "http",
    ignore_cert_errors: object = False,
) -> UpstreamProxy:
    """A ``customProxy`` object validated; raises :class:`InvalidRequest` with one sentence naming the field."""
    if scheme not in SCHEMES:
        raise InvalidRequest("customProxy.scheme must be 'http' or 'socks5'.")
    if not isinstance(host, str) or not host.strip():
        raise InvalidRequest("customProxy.host must be a host name or an IP address.")
    try:
        normalised, _ = normalise_host(host)
    except NetworkRefused as exc:
        raise InvalidRequest(f"customProxy.host {host[:100]!r} is not a valid host name or IP address.") from exc
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidRequest("customProxy.port must be a whole number from 1 to 65535.")
    user = _credential(username, "username")
    secret = _credential(password, "password")
    if secret is not None and user is None:
        raise InvalidRequest("customProxy.password needs a username.")
    if user is not None and scheme == "http" and ":" in user:
        raise InvalidRequest("customProxy.username must not contain ':' for an http proxy (Basic authentication).")
    if not isinstance(ignore_cert_errors, bool):
        raise InvalidRequest("customProxy.ignoreCertErrors must be true or false.")
    return UpstreamProxy(scheme, normalised, port, user, secret, ignore_cert_errors)


def parse_proxy_url(text: str) -> UpstreamProxy:
    """``http://user:pass@host:port`` or ``socks5://host:port`` (credentials URL-encoded); InvalidRequest else."""
    parts = urlsplit(text.strip())
    if parts.scheme not in SCHEMES:
        raise InvalidRequest(f"A proxy URL must start with http:// or socks5:// (got {parts.scheme or 'none'}://).")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidRequest("A proxy URL names a host and a port only, no path or query.")
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidRequest("A proxy URL's port must be a number from 1 to 65535.") from exc
    if port is None:
        raise InvalidRequest("A proxy URL must name its port.")
    return proxy_from_fields(
        parts.hostname or "",
        port,
        username=unquote(parts.username) if parts.username is not None else None,
        password=unquote(parts.password) if parts.password is not None else None,
        scheme=parts.scheme,
    )


def parse_pool(text: str | None) -> dict[str, UpstreamProxy]:
    """``PROXY_POOL``: ``us=http://user:pass@p1:8000,de=socks5://p2:1080``; country codes are lower-cased.

    Raises :class:`ValueError` naming the entry (never its credentials) when one cannot be read.
    """
    pool: dict[str, UpstreamProxy] = {}
    for number, entry in enumerate((text or "").split(","), start=1):
        if not entry.strip():
            continue
        code, equals, url = entry.partition("=")
        code = code.strip().lower()
        if not equals or not code.isalpha() or not 2 <= len(code) <= 8:
            raise ValueError(f"PROXY_POOL entry {number} must look like 'us=http://host:port'.")
        try:
            pool[code] = parse_proxy_url(url)
        except InvalidRequest as exc:
            raise ValueError(f"PROXY_POOL entry {number} ({code}): {exc}") from None
    return pool
