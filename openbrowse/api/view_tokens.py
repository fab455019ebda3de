"""ViewTokens: the tokens in a ``liveUrl`` (spec §21.4): random, short-lived, renewed by use, revocable.

A view token lets its holder watch one session's or raw browser's live view, never drive it (input needs a
takeover link, §21.5). It is drawn at random when the browser comes up and lives ``VIEW_TOKEN_TTL_S`` (15 min);
every ``GET`` of the session or browser renews it, so a client that polls keeps a working link and a link that
leaked from a log dies on its own. A new browser for the same id (a cold follow-up) gets a new token, which
revokes the old one. A live-view connection that is already open outlives its token.

Kept in memory only: after a restart every browser is new, and so is its token.
"""

from __future__ import annotations

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["VIEW_TOKEN_TTL_S", "ViewTokens"]

VIEW_TOKEN_TTL_S = 15 * 60.0
MAX_TRACKED = 10_000  # far above the slots of any one server; old entries go first


@dataclass(slots=True)
class _Issued:
    token: str
    expires: float


class ViewTokens:
    def __init__(self, ttl: float = VIEW_TOKEN_TTL_S, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._now = monotonic
        self._issued: dict[str, _Issued] = {}

    def issue(self, target_id: str) -> str:
        """A fresh token for ``target_id``; the one before stops working."""
        self._issued.pop(target_id, None)
        if len(self._issued) >= MAX_TRACKED:
            del self._issued[next(iter(self._issued))]
        token = secrets.token_urlsafe(24)
        self._issued[target_id] = _Issued(token, self._now() + self._ttl)
        return token

    def current(self, target_id: str) -> str:
        """The live token of ``target_id`` (renewed), or a fresh one when it has none or it expired."""
        issued = self._issued.get(target_id)
        if issued is None or issued.expires <= self._now():
            return self.issue(target_id)
        issued.expires = self._now() + self._ttl
        return issued.token

    def renew(self, target_id: str) -> None:
        """Someone read the session or browser: its token lives another ``ttl`` (an expired one stays expired)."""
        issued = self._issued.get(target_id)
        if issued is not None and issued.expires > self._now():
            issued.expires = self._now() + self._ttl

    def allows(self, target_id: str, token: str | None) -> bool:
        issued = self._issued.get(target_id)
        if not token or issued is None or issued.expires <= self._now():
            return False
        return hmac.compare_digest(token.encode(), issued.token.encode())

    def revoke(self, target_id: str) -> None:
        self._issued.pop(target_id, None)
