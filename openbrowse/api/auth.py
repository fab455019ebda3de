"""API-key authentication with a per-IP failed-attempt throttle (spec §2.1), and the dashboard's credentials.

A correct ``API_KEY`` of at least :data:`UNGUESSABLE_KEY_CHARS` characters always passes, whatever the throttle
holds against its address: behind a proxy that is not named in ``FORWARDED_ALLOW_IPS`` every client shares the
proxy's address, and a stranger's wrong guesses must not lock the key's holder out. Everything guessable (a short
key, the dashboard password, view tokens on a locked address) stays behind the throttle.

The client IP is the socket peer as uvicorn resolved it: uvicorn replaces the peer with the
``X-Forwarded-For`` client only when the peer is a proxy listed in ``FORWARDED_ALLOW_IPS`` (none by default,
see ``server.py``). A header sent by anyone else changes nothing, so rotating it buys no extra guesses and
naming a victim's address locks only the sender out. An IPv6 client is counted by its /64: one host
usually holds a whole /64, so counting each address would give it 2**64 fresh sets of guesses.

The dashboard's credentials (HTTP Basic with ``DASHBOARD_USER``/``DASHBOARD_PASSWORD``, or the login cookie)
are ambient: a browser attaches them to any request, whichever page triggered it. They are therefore honoured
only on requests from this server's own pages (spec §25.2): a request that says it comes from elsewhere
(``Sec-Fetch-Site`` other than ``same-origin``/``none``, or an ``Origin`` other than the request's own) and
carries them is refused 403 before the password is looked at, and is not counted as a failed guess. A call that
changes something (not GET/HEAD/OPTIONS) on the cookie alone must also carry its login's ``X-CSRF-Token``, which
only this server's pages know (403 otherwise): a browser that sends neither ``Origin`` nor ``Sec-Fetch-Site``
cannot be made to change anything by another page.
"""

from __future__ import annotations

import base64
import hmac
import ipaddress
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection

from openbrowse.api.login_sessions import CSRF_HEADER, LoginSessions, cookie_name
from openbrowse.api.origin_guard import normalize_origin, own_origin
from openbrowse.api.view_tokens import ViewTokens
from openbrowse.config import Settings

FREE_FAILURES = 5
MAX_TRACKED_CLIENTS = 10_000
"""Records kept at most (a few hundred bytes each); beyond it the least recently failed client is forgotten."""
FIRST_LOCKOUT_SECONDS = 1.0
MAX_LOCKOUT_SECONDS = 900.0
UNGUESSABLE_KEY_CHARS = 32
"""An ``API_KEY`` this long (``openssl rand -hex 16`` gives 32) passes the failure throttle unconditionally."""
API_KEY_HEADER = "x-browser-use-api-key"
CROSS_SITE_REFUSED = "Another site's page may not use the dashboard's credentials; send the API key instead"
CSRF_REFUSED = "A call that changes something needs the dashboard's X-CSRF-Token header with its login cookie"
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
_SAME_ORIGIN_SITES = {"same-origin", "none"}  # "none": typed into the address bar, a bookmark
IPV6_THROTTLE_PREFIX = 64


class AuthFailed(Exception):
    """Missing or wrong credentials (401). ``challenge``: whether to ask for Basic (``WWW-Authenticate``)."""

    def __init__(self, message: str, *, challenge: bool = True) -> None:
        super().__init__(message)
        self.challenge = challenge


class CrossSiteCredentials(HTTPException):
    """The dashboard's Basic credentials or cookie on a request another site's page made (403)."""

    def __init__(self, detail: str = CROSS_SITE_REFUSED) -> None:
        super().__init__(403, detail)


class MissingCsrfToken(CrossSiteCredentials):
    """A state-changing call authorised by the login cookie alone, without its login's ``X-CSRF-Token`` (403)."""

    def __init__(self) -> None:
        super().__init__(CSRF_REFUSED)


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


def throttle_key(address: str) -> str:
    """What the throttle counts: an IPv4 address as it is, an IPv6 address by its /64 (an IPv4-mapped one as
    its IPv4 address); anything unparsable as given."""
    try:
        parsed = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(parsed, ipaddress.IPv6Address):
        if parsed.ipv4_mapped is not None:
            return str(parsed.ipv4_mapped)
        return str(ipaddress.IPv6Network((parsed, IPV6_THROTTLE_PREFIX), strict=False))
    return str(parsed)


def from_own_pages(conn: HTTPConnection) -> bool:
    """Nothing in the request says another page made it: ``Sec-Fetch-Site`` (when sent) is ``same-origin`` or
    ``none``, and ``Origin`` (when sent) is the request's own. Same-origin, stricter than same-site: another port
    on the same host is the same site but may be anybody's server."""
    site = conn.headers.get("sec-fetch-site")
    if site is not None and site not in _SAME_ORIGIN_SITES:
        return False
    origin = conn.headers.get("origin")
    if origin is None:
        return True
    own = own_origin(str(conn.scope.get("scheme", "http")), conn.headers.get("host"))
    return own is not None and normalize_origin(origin) == own


def _changes_state(conn: HTTPConnection) -> bool:
    """An HTTP call other than GET/HEAD/OPTIONS (a WebSocket handshake is a GET, judged by its Origin)."""
    return conn.scope.get("type") == "http" and conn.scope.get("method", "GET") not in _SAFE_METHODS


def is_navigation(conn: HTTPConnection) -> bool:
    """A browser loading a page (a link, the address bar, a form), not a script or a sub-resource."""
    mode = conn.headers.get("sec-fetch-mode")
    if mode is not None:
        return mode == "navigate"
    return "text/html" in conn.headers.get("accept", "")


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


class Authenticator:
    """Decides whether a request may pass. One instance per app; the throttle and the dashboard's logins live here
    (in memory)."""

    def __init__(
        self,
        settings: Settings,
        throttle: FailureThrottle | None = None,
        logins: LoginSessions | None = None,
        view_tokens: ViewTokens | None = None,
    ) -> None:
        self._settings = settings
        self.throttle = throttle if throttle is not None else FailureThrottle()
        self.logins = logins if logins is not None else LoginSessions()
        self.view_tokens = view_tokens if view_tokens is not None else ViewTokens()
        self.takeover_allows: Callable[[str, str | None], bool] = lambda _target, _token: False
        """Whether a takeover link's token is open for a target (set by the app): it lets its holder view too."""

    @property
    def enabled(self) -> bool:
        return self._settings.auth_enabled

    @property
    def login_available(self) -> bool:
        """The login form and Basic work only with a ``DASHBOARD_PASSWORD``; without one only the API key does."""
        return self.enabled and bool(self._settings.dashboard_password)

    @property
    def key_is_unguessable(self) -> bool:
        """Whether ``API_KEY`` is long enough to pass even while its client's address is locked out. A correct key
        then answers 200 where a wrong one gets the 429, which tells a guesser when it is right: harmless for
        :data:`UNGUESSABLE_KEY_CHARS` random characters, not for a short word, which stays behind the throttle."""
        return len(self._settings.API_KEY or "") >= UNGUESSABLE_KEY_CHARS

    def _key_ok(self, conn: HTTPConnection) -> bool:
        key = presented_key(conn)
        expected = self._settings.API_KEY or ""
        return key is not None and constant_time_equal(key, expected)

    def password_ok(self, user: str, password: str) -> bool:
        expected = self._settings.dashboard_password
        if not expected:
            return False
        user_ok = constant_time_equal(user, self._settings.DASHBOARD_USER)
        return constant_time_equal(password, expected) and user_ok

    def login_token(self, conn: HTTPConnection) -> str | None:
        return conn.cookies.get(cookie_name(conn)) or None

    def signed_in_by_cookie(self, conn: HTTPConnection) -> bool:
        return self.logins.valid(self.login_token(conn))

    def _token_ok(self, conn: HTTPConnection, resource_id: str | None) -> bool:
        if resource_id is None:
            return False
        token = conn.query_params.get("token")
        if token and self.view_tokens.allows(resource_id, token):
            return True
        return self.takeover_allows(resource_id, conn.query_params.get("takeover"))

    def _dashboard_credentials_ok(self, conn: HTTPConnection) -> bool:
        """Basic credentials or the login cookie, from this server's own pages only (see the module docstring).

        Raises :class:`CrossSiteCredentials` when either is on a request another page made: browsers attach both
        to any request, so a form post or a fetch from elsewhere must not be able to use them.
        """
        basic = _basic_credentials(conn)
        token = self.login_token(conn)
        if basic is None and token is None:
            return False
        if not from_own_pages(conn):
            raise CrossSiteCredentials()
        if basic is not None and self.password_ok(*basic):
            return True
        if not self.logins.valid(token):
            return False
        if _changes_state(conn) and not self.logins.csrf_matches(token, conn.headers.get(CSRF_HEADER)):
            raise MissingCsrfToken()
        return True

    def require_api_key(self, conn: HTTPConnection, also: Callable[[], bool] | None = None) -> None:
        """For ``/v3/*`` and ``/health/details``: the API key, or the dashboard's credentials from its own pages.
        ``also``: one more credential the route accepts (a resume route: the target's takeover token), looked at
        before the ambient dashboard credentials."""
        self.require(
            conn,
            lambda: self._key_ok(conn) or (also is not None and also()) or self._dashboard_credentials_ok(conn),
        )

    def holds_key_or_login(self, conn: HTTPConnection) -> bool:
        """Whether an already admitted request carries the API key or the dashboard's credentials (not merely a view
        token); always with auth off. Counts nothing in the throttle."""
        if not self.enabled or self._key_ok(conn):
            return True
        try:
            return self._dashboard_credentials_ok(conn)
        except CrossSiteCredentials:
            return False

    def require_dashboard(self, conn: HTTPConnection) -> None:
        """For the dashboard's pages: the API key, or the dashboard's credentials from its own pages (spec §25.2)."""
        self.require(conn, lambda: self._key_ok(conn) or self._dashboard_credentials_ok(conn))

    def require_viewer(self, conn: HTTPConnection, resource_id: str | None) -> None:
        """For live-view routes: the API key, the resource's view token, or the dashboard's credentials from its
        own pages. The token is looked at first, so an embedding page's stray ambient credentials never spoil it."""
        self.require(
            conn,
            lambda: self._key_ok(conn) or self._token_ok(conn, resource_id) or self._dashboard_credentials_ok(conn),
        )

    def require(self, conn: HTTPConnection, check: Callable[[], bool]) -> None:
        """Pass if auth is off or ``check()`` holds; otherwise count a failure (throttled per client IP, IPv6 per
        /64). A :class:`CrossSiteCredentials` refusal from ``check()`` passes through uncounted."""
        if not self.enabled:
            return
        if self._key_ok(conn) and self.key_is_unguessable:
            return  # past the throttle: other clients behind the same address cannot lock the key's holder out
        client = throttle_key(client_ip(conn))
        self.throttle.check(client)
        if check():
            self.throttle.succeeded(client)
            return
        stale_login = self.login_token(conn) is not None
        if not (stale_login and self._no_key_basic_or_token(conn)):
            # A login cookie is 256 random bits, nothing to guess: an expired one (a dashboard tab left open,
            # still polling) must not lock its owner out of the login form.
            self.throttle.failed(client)
        raise AuthFailed("Invalid API key", challenge=self.login_available and not stale_login)

    def _no_key_basic_or_token(self, conn: HTTPConnection) -> bool:
        has_authorization = bool(conn.headers.get("authorization"))
        return not has_authorization and presented_key(conn) is None and "token" not in conn.query_params

    def presents_credentials(self, conn: HTTPConnection) -> bool:
        """Whether the request carries anything to check: a key, Basic, a token or the login cookie."""
        return self.login_token(conn) is not None or not self._no_key_basic_or_token(conn)

    def check_login(self, conn: HTTPConnection, user: str, password: str) -> bool:
        """The login form's check, through the same throttle as every other credential."""
        client = throttle_key(client_ip(conn))
        self.throttle.check(client)
        if self.password_ok(user, password):
            self.throttle.succeeded(client)
            return True
        self.throttle.failed(client)
        return False
