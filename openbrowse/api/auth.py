"""API-key authentication with a per-IP failed-attempt throttle (spec §2.1).

The client IP is the socket peer as uvicorn resolved it: uvicorn replaces the peer with the
``X-Forwarded-For`` client only when the peer is a proxy listed in ``FORWARDED_ALLOW_IPS`` (none by default,
see ``server.py``). A header sent by anyone else changes nothing, so rotating it buys no extra guesses and
naming a victim's address locks only the sender out.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from openbrowse.config import Settings

FREE_FAILURES = 5
MAX_TRACKED_CLIENTS = 10_000
"""Records kept at most (a few hundred bytes each); beyond it the least recently failed client is forgotten."""
FIRST_LOCKOUT_SECONDS = 1.0
MAX_LOCKOUT_SECONDS = 900.0
API_KEY_HEADER = "x-browser-use-api-key"


class AuthFailed(Exception):
    """Missing or wrong credentials (401)."""


class AuthThrottled(Exception):
    """Too many failures from this client (429 with Retry-After)."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("Too many failed authentication attempts. Try again later.")
        self.retry_after = retry_after


@dataclass(slots=True)
class _Failures:
    count: int = 0
    locked_until: float = 0.0


class FailureThrottle:
    """5 free failures per IP; then each failure locks the IP out for 1 s, doubling up to 900 s.

    Memory is bounded: at most ``max_clients`` records, the least recently failed one evicted first.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic, max_clients: int = MAX_TRACKED_CLIENTS) -> None:
        self._clock = clock
        self._max_clients = max_clients
        self._records: OrderedDict[str, _Failures] = OrderedDict()

    def __len__(self) -> int:
        return len(self._records)

    def check(self, client: str) -> None:
        record = self._records.get(client)
        if record is None:
            return
        remaining = record.locked_until - self._clock()
        if remaining > 0:
            raise AuthThrottled(max(1, math.ceil(remaining)))

    def failed(self, client: str) -> None:
        record = self._records.get(client)
        if record is None:
            record = self._records[client] = _Failures()
            while len(self._records) > self._max_clients:
                self._records.popitem(last=False)
        else:
            self._records.move_to_end(client)
        record.count += 1
        extra = record.count - FREE_FAILURES
        if extra > 0:
            lockout = min(FIRST_LOCKOUT_SECONDS * 2 ** (extra - 1), MAX_LOCKOUT_SECONDS)
            record.locked_until = self._clock() + lockout

    def succeeded(self, client: str) -> None:
        self._records.pop(client, None)


def client_ip(conn: HTTPConnection) -> str:
    """The socket peer, or the forwarded client when uvicorn trusted the peer as a proxy (never the raw header)."""
    return conn.client.host if conn.client else "unknown"


def presented_key(conn: HTTPConnection) -> str | None:
    """The API key from ``X-Browser-Use-API-Key`` (wins) or ``Authorization: Bearer``."""
    header = conn.headers.get(API_KEY_HEADER)
    if header:
        return header.strip()
    authorization = conn.headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def _basic_credentials(conn: HTTPConnection) -> tuple[str, str] | None:
    authorization = conn.headers.get("authorization", "")
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    return user, password


def constant_time_equal(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode("utf-8"), b.encode("utf-8"))


def view_token(api_key: str, resource_id: str) -> str:
    """Per-session (or per-browser) token: hex HMAC-SHA256 of the id keyed with API_KEY, first 32 chars."""
    return hmac.new(api_key.encode("utf-8"), resource_id.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


class Authenticator:
    """Decides whether a request may pass. One instance per app; the throttle state lives here (in memory)."""

    def __init__(self, settings: Settings, throttle: FailureThrottle | None = None) -> None:
        self._settings = settings
        self.throttle = throttle or FailureThrottle()

    @property
    def enabled(self) -> bool:
        return self._settings.auth_enabled

    def _key_ok(self, conn: HTTPConnection) -> bool:
        key = presented_key(conn)
        expected = self._settings.API_KEY or ""
        return key is not None and constant_time_equal(key, expected)

    def _basic_ok(self, conn: HTTPConnection) -> bool:
        credentials = _basic_credentials(conn)
        password = self._settings.dashboard_password
        if credentials is None or not password:
            return False
        user_ok = constant_time_equal(credentials[0], self._settings.DASHBOARD_USER)
        return constant_time_equal(credentials[1], password) and user_ok

    def _token_ok(self, conn: HTTPConnection, resource_id: str | None) -> bool:
        token = conn.query_params.get("token")
        if not token or resource_id is None:
            return False
        return constant_time_equal(token, view_token(self._settings.API_KEY or "", resource_id))

    def _same_site_basic_ok(self, conn: HTTPConnection) -> bool:
        """Basic credentials sent by this server's own pages (the dashboard), never by a cross-site request.

        Browsers attach cached Basic credentials to any request, so a request another site triggers (a form
        post, a fetch) must not be able to use them: it says so in ``Sec-Fetch-Site`` or ``Origin``.
        """
        site = conn.headers.get("sec-fetch-site")
        if site is not None and site not in {"same-origin", "none"}:
            return False
        origin = conn.headers.get("origin")
        if origin is not None and urlsplit(origin).netloc != conn.headers.get("host", ""):
            return False
        return self._basic_ok(conn)

    def require_api_key(self, conn: HTTPConnection) -> None:
        """For ``/v3/*`` and ``/health/details``: the API key, or the dashboard's Basic credentials same-site."""
        self.require(conn, lambda: self._key_ok(conn) or self._same_site_basic_ok(conn))

    def require_dashboard(self, conn: HTTPConnection) -> None:
        """For the dashboard's pages: the API key or the dashboard's Basic credentials (spec §19.4)."""
        self.require(conn, lambda: self._key_ok(conn) or self._basic_ok(conn))

    def require_viewer(self, conn: HTTPConnection, resource_id: str | None) -> None:
        """For live-view routes: the API key, HTTP Basic, or the resource's view token."""
        self.require(conn, lambda: self._key_ok(conn) or self._basic_ok(conn) or self._token_ok(conn, resource_id))

    def require(self, conn: HTTPConnection, check: Callable[[], bool]) -> None:
        """Pass if auth is off or ``check()`` holds; otherwise count a failure (throttled per client IP)."""
        if not self.enabled:
            return
        client = client_ip(conn)
        self.throttle.check(client)
        if check():
            self.throttle.succeeded(client)
            return
        self.throttle.failed(client)
        raise AuthFailed("Invalid API key")
