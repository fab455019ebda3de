"""BrowserTokens: the short-lived tokens that let a client talk to one raw browser over CDP (spec §21.4).

A token is 256 random bits (``secrets.token_urlsafe``), handed out once and kept only as its SHA-256, with an
expiry. A browser may have several at once (each ``POST /v3/browsers/{id}/token`` adds one; the oldest goes past
:data:`MAX_TOKENS_PER_BROWSER`); all of a browser's tokens are revoked when it ends. Checking a token only decides
whether a *new* connection may open: a connection already open outlives its token.

Tokens live in memory: they only ever authorise a browser of this process, and a restart ends every browser.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from openbrowse.domain.clock import Clock, utc_now

__all__ = ["DEFAULT_TOKEN_TTL_S", "MAX_TOKENS_PER_BROWSER", "BrowserTokens", "IssuedToken"]

DEFAULT_TOKEN_TTL_S = 15 * 60
MAX_TOKENS_PER_BROWSER = 32


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A token as handed to the caller: the only time its plain value exists on the server."""

    value: str
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class _Stored:
    browser_id: str
    digest: bytes
    expires: float  # on the monotonic clock: a wall-clock jump neither revives nor kills a token


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class BrowserTokens:
    def __init__(self, clock: Clock = utc_now, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._monotonic = monotonic
        self._by_browser: dict[str, list[_Stored]] = {}

    def issue(self, browser_id: str, ttl_seconds: float) -> IssuedToken:
        value = secrets.token_urlsafe(32)
        stored = _Stored(browser_id, _digest(value), self._monotonic() + ttl_seconds)
        kept = [token for token in self._by_browser.get(browser_id, []) if token.expires > self._monotonic()]
        self._by_browser[browser_id] = [*kept, stored][-MAX_TOKENS_PER_BROWSER:]
        return IssuedToken(value, self._clock() + timedelta(seconds=ttl_seconds))

    def valid(self, browser_id: str, presented: str | None) -> bool:
        """Whether ``presented`` is an unexpired, unrevoked token of this browser (constant time per token)."""
        if not presented:
            return False
        digest = _digest(presented)
        now = self._monotonic()
        found = False
        for token in self._by_browser.get(browser_id, []):
            found |= hmac.compare_digest(token.digest, digest) and token.expires > now
        return found

    def revoke(self, browser_id: str) -> None:
        """Forget every token of the browser (it ended)."""
        self._by_browser.pop(browser_id, None)

    def count(self, browser_id: str) -> int:
        return len(self._by_browser.get(browser_id, []))
