"""Browsers are untrusted clients (spec §2.2): the ``Host`` allow-list and the ``Origin`` check.

Both run as the outermost ASGI middleware, for HTTP requests and WebSocket handshakes alike, so a refused
request does no work at all: no route runs, no body is read, nothing is created.

* ``Host`` must name a loopback name or address, the bind address, or a name in ``ALLOWED_HOSTS``; otherwise
  400. A DNS-rebinding page reaches us under its own name, so it is refused here. With a wildcard bind
  (``0.0.0.0``/``::``) any IP literal is accepted too: an address cannot be rebound, and a page on another
  origin that names our IP still sends its own ``Origin``.
* A request carrying ``Origin`` (browsers send it on cross-origin requests, on every POST and on WebSocket
  upgrades) is served only when the origin **equals the request's own origin** (its scheme and ``Host`` as
  received) or is listed in ``CORS_ORIGINS``; otherwise ``403 {"detail":"Origin not allowed"}`` (spec §25.2).
  Host allow-listing alone is not enough: with ``HOST=0.0.0.0`` every IP literal passes the Host check, with
  ``ALLOWED_HOSTS=*`` every name does, and a page served under any of them is still another origin. Requests
  without ``Origin`` (curl, the SDK, scripts) are unaffected.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket

from openbrowse.api.ws_bridge import deny_websocket
from openbrowse.config import Settings

__all__ = ["HOST_REFUSED", "ORIGIN_REFUSED", "BrowserGuard", "OriginPolicy", "normalize_origin", "own_origin"]

logger = logging.getLogger(__name__)

HOST_REFUSED = "Host not allowed; add the name to ALLOWED_HOSTS to serve it"
ORIGIN_REFUSED = "Origin not allowed"
_WILDCARD_BINDS = {"0.0.0.0", "::", ""}
_LOOPBACK_NAMES = {"localhost", "ip6-localhost"}
_DEFAULT_PORTS = {"http": 80, "https": 443}
_HTTP_SCHEME = {"http": "http", "ws": "http", "https": "https", "wss": "https"}


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` or ``[v6][:port]`` → (lowercase name without brackets or trailing dot, port)."""
    try:
        parts = urlsplit(f"//{value.strip()}")
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.username is not None or parts.password is not None or parts.path:
        return None
    return name.rstrip("."), port


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _is_loopback_name(name: str) -> bool:
    """``localhost`` (and ``*.localhost``, which browsers resolve to loopback themselves) or a loopback IP.
    Not a prefix test: ``127.0.0.1.evil.example`` is a name an attacker can point anywhere."""
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def normalize_origin(origin: str) -> str | None:
    """``scheme://host[:port]`` in lowercase with the scheme's default port dropped; None if not an origin."""
    try:
        parts = urlsplit(origin.strip())
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not name or parts.path not in {"", "/"} or parts.query or parts.fragment:
        return None
    host = f"[{name}]" if ":" in name else name
    return f"{scheme}://{host}" if port in {None, _DEFAULT_PORTS[scheme]} else f"{scheme}://{host}:{port}"


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    """The decisions, free of ASGI: which ``Host`` names and which ``Origin`` values are served."""

    bind_host: str
    extra_hosts: tuple[str, ...] = ()
    cors_origins: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> OriginPolicy:
        origins = (normalize_origin(origin) for origin in settings.cors_origins)
        return cls(
            bind_host=settings.HOST.strip("[]").lower(),
            extra_hosts=tuple(host.lower().rstrip(".") for host in settings.allowed_hosts),
            cors_origins=frozenset(origin for origin in origins if origin),
        )

    def host_name_allowed(self, name: str) -> bool:
        if _is_loopback_name(name) or name == self.bind_host:
            return True
        if self.bind_host in _WILDCARD_BINDS and _is_ip(name):
            return True
        for allowed in self.extra_hosts:
            if allowed == "*" or name == allowed:
                return True
            if allowed.startswith("*.") and name.endswith(allowed[1:]):
                return True
        return False

    def host_allowed(self, host_header: str | None) -> bool:
        split = _split_host(host_header) if host_header else None
        return split is not None and self.host_name_allowed(split[0])

    def origin_allowed(self, origin: str, *, host_header: str, scheme: str) -> bool:
        """``origin`` is listed in CORS_ORIGINS, or is exactly the origin the client reached this server at."""
        normalized = normalize_origin(origin)
        if normalized is None:
            return False
        return normalized in self.cors_origins or normalized == own_origin(scheme, host_header)


def own_origin(scheme: str, host_header: str | None) -> str | None:
    """The request's own origin, ``scheme://Host`` normalised as :func:`normalize_origin` does (``ws`` counts as
    ``http``); None when the ``Host`` header is missing or malformed."""
    reached = _split_host(host_header) if host_header else None
    if reached is None:
        return None
    name, port = reached
    host = f"[{name}]" if ":" in name else name
    return normalize_origin(f"{_HTTP_SCHEME.get(scheme, scheme)}://{host}" + (f":{port}" if port else ""))


class BrowserGuard:
    """ASGI middleware applying :class:`OriginPolicy` before anything else runs."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        host = hosts[0] if len(hosts) == 1 else None  # two Host headers: which one counts depends on the parser
        if not self.policy.host_allowed(host):
            logger.info("Refused a request for Host %r (not a loopback name, the bind address or ALLOWED_HOSTS)", host)
            await _refuse(scope, receive, send, 400, HOST_REFUSED)
            return
        origin = headers.get("origin")
        if origin is not None and not self.policy.origin_allowed(
            origin, host_header=host or "", scheme=str(scope.get("scheme", "http"))
        ):
            logger.info("Refused a request from Origin %r to %s", origin, scope.get("path", ""))
            await _refuse(scope, receive, send, 403, ORIGIN_REFUSED)
            return
        await self.app(scope, receive, send)


async def _refuse(scope: Scope, receive: Receive, send: Send, status: int, detail: str) -> None:
    response = JSONResponse({"detail": detail}, status_code=status)
    if scope["type"] == "http":
        await response(scope, receive, send)
        return
    await deny_websocket(WebSocket(scope, receive, send), response)
