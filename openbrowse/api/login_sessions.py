"""The dashboard's login sessions (spec §25.2): random tokens kept in memory, each with an expiry.

A token is 32 random bytes, sent once in the ``Set-Cookie`` of a successful login and stored here only as its
SHA-256, so a lookup compares digests (no timing signal about the token) and a memory dump holds no usable
cookie. State is in memory, like the auth throttle: a restart signs everybody out, which is the safe direction.
Memory is bounded: at most ``max_sessions`` live logins, the oldest dropped first.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from http.cookies import SimpleCookie

from starlette.requests import HTTPConnection

__all__ = ["COOKIE_PREFIX", "SESSION_LIFETIME_SECONDS", "LoginSessions", "cookie_name", "login_cookie", "logout_cookie"]

COOKIE_PREFIX = "openbrowse_dashboard"
SESSION_LIFETIME_SECONDS = 12 * 3600
"""How long one login lasts (absolute, not renewed): a working day, then the form again."""
MAX_SESSIONS = 1000


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

    def __len__(self) -> int:
        return len(self._expiries)

    @property
    def lifetime(self) -> float:
        return self._lifetime

    def open(self) -> str:
        """A new token, valid for ``lifetime`` seconds."""
        self._forget_expired()
        token = secrets.token_urlsafe(32)
        self._expiries[_digest(token)] = self._clock() + self._lifetime
        while len(self._expiries) > self._max_sessions:
            self._expiries.popitem(last=False)
        return token

    def valid(self, token: str | None) -> bool:
        if not token:
            return False
        digest = _digest(token)
        expiry = self._expiries.get(digest)
        if expiry is None:
            return False
        if expiry <= self._clock():
            del self._expiries[digest]
            return False
        return True

    def close(self, token: str | None) -> None:
        if token:
            self._expiries.pop(_digest(token), None)

    def _forget_expired(self) -> None:
        now = self._clock()
        while self._expiries:
            digest, expiry = next(iter(self._expiries.items()))
            if expiry > now:
                return
            del self._expiries[digest]


def cookie_name(conn: HTTPConnection) -> str:
    """``openbrowse_dashboard_<port>``: cookies are not isolated by port, so two instances on one host (or a
    second one started by the tests) each keep their own login instead of overwriting each other's."""
    port = conn.url.port
    return f"{COOKIE_PREFIX}_{port}" if port else COOKIE_PREFIX


def _cookie(conn: HTTPConnection, value: str, max_age: int) -> str:
    jar: SimpleCookie = SimpleCookie()
    name = cookie_name(conn)
    jar[name] = value
    morsel = jar[name]
    morsel["path"] = "/"
    morsel["max-age"] = max_age
    morsel["httponly"] = True
    morsel["samesite"] = "Strict"
    if conn.url.scheme in {"https", "wss"}:
        morsel["secure"] = True
    return morsel.OutputString()


def login_cookie(conn: HTTPConnection, token: str, lifetime: float) -> str:
    """The ``Set-Cookie`` value for a new login: ``HttpOnly; SameSite=Strict``, ``Secure`` over https."""
    return _cookie(conn, token, int(lifetime))


def logout_cookie(conn: HTTPConnection) -> str:
    return _cookie(conn, "", 0)
