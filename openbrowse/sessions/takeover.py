"""TakeoverTokens: who may send input to a paused session's or browser's live view (spec §21.5).

A pause opens a takeover for its target: one random token (256 bits, ``secrets.token_urlsafe``), kept only as its
SHA-256, which the takeover link carries (``takeoverUrl``). The live view's bridge lets a connection's key, pointer
and clipboard messages through only while the token it presented at connect time is still the target's open one:
it asks :meth:`TakeoverTokens.allows` again for every input message, so a resume (:meth:`close`) makes every open
takeover connection view-only at once, without closing it. Opening again replaces the older token.

The same object carries the older, coarser switch of ``POST /vnc/{id}/control``: whether connections made with the
API key or the dashboard's credentials may send input to a target (never a plain ``liveUrl`` viewer's).

Everything lives in memory: it only concerns browsers of this process, and a restart ends them all.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Callable

__all__ = ["TakeoverTokens"]


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


class TakeoverTokens:
    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._digests: dict[str, bytes] = {}
        self._last_input: dict[str, float] = {}
        self._key_holder_control: set[str] = set()

    # -- takeover tokens ---------------------------------------------------------------------------------------
    def open(self, target_id: str) -> str:
        """Mint the target's takeover token (replacing an older one) and return its only plain copy."""
        token = secrets.token_urlsafe(32)
        self._digests[target_id] = _digest(token)
        self._last_input.pop(target_id, None)
        return token

    def close(self, target_id: str) -> None:
        """Revoke the target's takeover token (resume, or the target ended); a no-op when none is open."""
        self._digests.pop(target_id, None)
        self._last_input.pop(target_id, None)

    def is_open(self, target_id: str) -> bool:
        return target_id in self._digests

    def allows(self, target_id: str, token: str | None) -> bool:
        """Whether ``token`` is the target's open takeover token (constant time)."""
        expected = self._digests.get(target_id)
        if expected is None or not token:
            return False
        return hmac.compare_digest(expected, _digest(token))

    # -- what the person does ----------------------------------------------------------------------------------
    def note_input(self, target_id: str) -> None:
        """An input message from a takeover connection went through (for a pause timeout counted from the last
        human input)."""
        if target_id in self._digests:
            self._last_input[target_id] = self._monotonic()

    def last_input(self, target_id: str) -> float | None:
        """When (monotonic) input last went through the target's open takeover, or None."""
        return self._last_input.get(target_id)

    # -- POST /vnc/{id}/control ------------------------------------------------------------------------------
    def set_key_holder_control(self, target_id: str, enabled: bool) -> None:
        if enabled:
            self._key_holder_control.add(target_id)
        else:
            self._key_holder_control.discard(target_id)

    def key_holder_control(self, target_id: str) -> bool:
        return target_id in self._key_holder_control

    def forget(self, target_id: str) -> None:
        """The target ended: drop its token and its control switch."""
        self.close(target_id)
        self._key_holder_control.discard(target_id)
