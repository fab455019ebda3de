"""The one redactor (spec §25.3): a session's secret values become ``<secret>name</secret>`` on every sink.

Every sink asks :data:`REDACTORS` for the session's :class:`Redactor`: the feed and the session row (store),
the SSE activity and code events (the activity board), the code tab, the session's files and the log (which
hides the secrets of every session, since a log line is not always tagged with its session). Besides each value
as given it hides the forms a page sees it in: URL-encoded (``quote`` and ``quote_plus``), HTML/JSON-escaped and
base64 (standard and URL-safe, at each of the three alignments the value can take inside a longer encoding, so a
``btoa(user + ":" + pw)`` is caught too, its first and last characters aside).
"""

from __future__ import annotations

import base64
import html
import json
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, quote_plus

MIN_BASE64_CHARS = 8
"""Shorter base64 fragments are too common to hide without hiding unrelated text."""


def placeholder(name: str) -> str:
    return f"<secret>{name}</secret>"


def _base64_cores(value: bytes) -> list[str]:
    """For each offset 0-2 of ``value`` in a longer byte string, the base64 characters that depend on ``value``
    alone: those whose six bits all lie inside it."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\x00" * offset + value).decode()
        start = -(-8 * offset // 6)
        end = 8 * (offset + len(value)) // 6
        core = encoded[start:end]
        if len(core) >= MIN_BASE64_CHARS:
            cores.append(core)
    return cores


def encodings(value: str) -> set[str]:
    """The spellings of ``value`` that are hidden: itself and its simple encodings."""
    raw = value.encode("utf-8")
    forms = {value, quote(value, safe=""), quote(value), quote_plus(value), html.escape(value)}
    forms.add(json.dumps(value)[1:-1])
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    for core in _base64_cores(raw):
        forms.add(core)
        forms.add(core.replace("+", "-").replace("/", "_"))
    forms.add(base64.b64encode(raw).decode())
    forms.add(base64.urlsafe_b64encode(raw).decode().rstrip("="))
    return {form for form in forms if form}


class Redactor:
    """Hides a fixed set of values; immutable once built, so it is shared across threads freely."""

    def __init__(self, values: Mapping[str, str]) -> None:
        """``values`` maps each secret value to its placeholder name."""
        replacements: dict[str, str] = {}
        for value, name in sorted(values.items(), key=lambda item: -len(item[0])):
            for form in encodings(value):
                replacements.setdefault(form, placeholder(name))
        self._replacements = replacements
        self._pattern = (
            re.compile("|".join(re.escape(form) for form in sorted(replacements, key=len, reverse=True)))
            if replacements
            else None
        )
        self._bytes = sorted(((k.encode(), v.encode()) for k, v in replacements.items()), key=lambda kv: -len(kv[0]))

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda match: self._replacements[match.group(0)], text)

    def value(self, value: Any) -> Any:
        """``value`` with every string inside it (keys included) redacted; other leaves as they are."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self.value(item) for item in value)
        return value

    def data(self, data: bytes) -> bytes:
        for found, hidden in self._bytes:
            if found in data:
                data = data.replace(found, hidden)
        return data

    def found_in(self, data: bytes) -> bool:
        return any(found in data for found, _ in self._bytes)


NO_SECRETS = Redactor({})


class RedactorRegistry:
    """The redactor of each session holding secrets in this process; thread-safe (engines run on threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, dict[str, str]] = {}
        self._by_session: dict[str, Redactor] = {}
        self._all = NO_SECRETS

    def add(self, session_id: str, values: Mapping[str, str]) -> Redactor:
        """The session's sinks hide ``values`` (value → name) too, besides what they hid before."""
        with self._lock:
            held = self._values.setdefault(session_id, {})
            for value, name in values.items():
                held.setdefault(value, name)
            redactor = self._by_session[session_id] = Redactor(held)
            self._rebuild()
        return redactor

    def drop(self, session_id: str) -> None:
        with self._lock:
            self._by_session.pop(session_id, None)
            if self._values.pop(session_id, None) is not None:
                self._rebuild()

    def _rebuild(self) -> None:
        merged: dict[str, str] = {}
        for held in self._values.values():
            for value, name in held.items():
                merged.setdefault(value, name)
        self._all = Redactor(merged) if merged else NO_SECRETS

    def of(self, session_id: str) -> Redactor:
        return self._by_session.get(session_id, NO_SECRETS)

    @property
    def everyone(self) -> Redactor:
        """One redactor for the secrets of every session (the log's)."""
        return self._all


REDACTORS = RedactorRegistry()
"""The process's registry: the session manager feeds it; every sink reads it."""
