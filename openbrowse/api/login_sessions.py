"""The dashboard's login sessions (spec §25.2): random tokens kept in memory, each with an expiry.

A token is 32 random bytes, sent once in the ``Set-Cookie`` of a successful login and stored here only as its
SHA-256, so a lookup compares digests (no timing signal about the token) and a memory dump holds no usable
cookie. Each login also has a CSRF token of its own, put into the dashboard's pages for their scripts to send
as ``X-CSRF-Token`` on every state-changing call the cookie authorises (``auth.py``): a page that can make the
browser send the cookie still cannot read the token.

The cookie is bound to this origin as far as cookies can be: ``HttpOnly; SameSite=Strict; Path=/`` with no
``Domain`` (host-only); over https (the request's scheme after trusted proxy headers) its name takes the
``__Host-`` prefix, with which browsers refuse any copy that is not ``Secure``, host-only and ``Path=/``, so a
sibling host or a plain-http page cannot plant or shadow it.

State is in memory, like the auth throttle: a restart signs everybody out, which is the safe direction. Memory is
bounded: at most ``max_sessions`` live logins, the oldest dropped first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from http.cookies import SimpleCookie

from starlette.requests import HTTPConnection

__all__ = [
    "COOKIE_PREFIX",
    "CSRF_HEADER",
    "SESSION_LIFETIME_SECONDS",
    "LoginSessions",
    "cookie_name",
    "login_cookie",
    "logout_cookie",
]

COOKIE_PREFIX = "openbrowse_dashboard"
SESSION_LIFETIME_SECONDS = 12 * 3600
"""How long one login lasts (absolute, not renewed): a working day, then the form again."""
MAX_SESSIONS = 1000
CSRF_HEADER = "x-csrf-token"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class LoginSessions:
    """Tokens issued by the login form; ``valid`` until they expire or are closed by a logout."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        lifetime: float = SESSION_LIFETIME_SECONDS,
        max_sessions: int = MAX_SESSIONS,
    ) -> None:
        self._clock = clock
        self._lifetime = lifetime
        self._max_sessions = max_sessions
        self._expiries: OrderedDict[str, float] = OrderedDict()
        self._csrf: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._expiries)

    @property
    def lifetime(self) -> float:
        return self._lifetime

    def open(self) -> str:
        """A new token, valid for ``lifetime`` seconds."""
        self._forget_expired()
        token = secrets.token_urlsafe(32)
        digest = _digest(token)
        self._expiries[digest] = self._clock() + self._lifetime
        self._csrf[digest] = secrets.token_urlsafe(32)
        while len(self._expiries) > self._max_sessions:
            self._csrf.pop(self._expiries.popitem(last=False)[0], None)
        return token

    def csrf_token(self, token: str | None) -> str | None:
        """The CSRF token of the login ``token`` names, while it is valid."""
        if not self.valid(token):
            return None
        return self._csrf.get(_digest(token or ""))

    def csrf_matches(self, token: str | None, presented: str | None) -> bool:
        expected = self.csrf_token(token)
        return expected is not None and presented is not None and hmac.compare_digest(expected, presented)

    def valid(self, token: str | None) -> bool:
        if not token:
            return False
        digest = _digest(token)
        expiry = self._expiries.get(digest)
        if expiry is None:
            return False
        if expiry <= self._clock():
            del self._expiries[digest]
            self._csrf.pop(digest, None)
            return False
        return True

    def close(self, token: str | None) -> None:
        if token:
            self._expiries.pop(_digest(token), None)
            self._csrf.pop(_digest(token), None)

    def _forget_expired(self) -> None:
        now = self._clock()
        while self._expiries:
            digest, expiry = next(iter(self._expiries.items()))
            if expiry > now:
                return
            del self._expiries[digest]
            self._csrf.pop(digest, None)


def _secure(conn: HTTPConnection) -> bool:
    return conn.url.scheme in {"https", "wss"}


def cookie_name(conn: HTTPConnection) -> str:
    """``openbrowse_dashboard_<port>``, ``__Host-`` first over https: cookies are not isolated by port, so two
    instances on one host (or a second one started by the tests) each keep their own login instead of overwriting
    each other's."""
    port = conn.url.port
    name = f"{COOKIE_PREFIX}_{port}" if port else COOKIE_PREFIX
    return f"__Host-{name}" if _secure(conn) else name


def _cookie(conn: HTTPConnection, value: str, max_age: int) -> str:
    jar: SimpleCookie = SimpleCookie()
    name = cookie_name(conn)
    jar[name] = value
    morsel = jar[name]
    morsel["path"] = "/"
    morsel["max-age"] = max_age
    morsel["httponly"] = True
    morsel["samesite"] = "Strict"
    if _secure(conn):
        morsel["secure"] = True  # and no Domain: the __Host- prefix requires both
    return morsel.OutputString()


def login_cookie(conn: HTTPConnection, token: str, lifetime: float) -> str:
    """The ``Set-Cookie`` value for a new login: ``HttpOnly; SameSite=Strict; Path=/``, host-only, and over https
    ``Secure`` under a ``__Host-`` name."""
    return _cookie(conn, token, int(lifetime))


def logout_cookie(conn: HTTPConnection) -> str:
    return _cookie(conn, "", 0)
