"""Decode the ``code`` of a ``run_code_file`` action from a reply that is still streaming (spec §11.3).

The model's reply arrives as fragments of JSON text (a tool call's arguments, or the output text of an OpenAI
reply, maybe wrapped in a code fence). :class:`CodeDecoder` is fed those fragments and knows, as early as the
text allows, whether a ``run_code_file`` action has started, its ``name`` and the decoded prefix of its ``code``
string. The text so far is read by pydantic-core's partial JSON parsing (``from_json(..., allow_partial=...)``),
which stops cleanly inside a string, an escape or a literal; ``"trailing-strings"`` keeps the unfinished string
(the code as written so far), the plain mode drops it (so a value it keeps is complete).

Text outside a JSON document (prose, fences) is skipped, a text that cannot start a document is stepped over,
and several documents in a row (split tool calls) are read one after the other. The action list may also come
as a JSON *string* (``"action": "[{\\"run_code_file\\": …}]"``, a habit of some models that action repair later
undoes): the decoded prefix of that string is read the same way, so the code shows while it is written there too.

The text is parsed again only when an answer is asked for and the text has grown since: until a
``run_code_file`` key appears that is on every fragment, after it only when the code is shown (throttled).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic_core import from_json

ACTION_KEY = "action"
RUN_CODE = "run_code_file"

_STRICTLY_COMPLETE = json.JSONDecoder(strict=False)
_OPENERS = re.compile(r"[{\[]")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"?', re.DOTALL)
_CONTROL = re.compile(r"[\x00-\x1f]")
_ENDS_WITH_STRING = re.compile(r'"\s*$')
_ENDS_WITH_COLON = re.compile(r'"\s*:\s*$')
_INVALID = object()


def _escape_controls(text: str) -> str:
    """Raw control characters inside strings escaped (models write literal newlines); other text unchanged."""
    return _STRING.sub(lambda string: _CONTROL.sub(lambda char: f"\\u{ord(char.group()):04x}", string.group()), text)


def _partial(text: str, mode: Literal[True, "trailing-strings"]) -> Any:
    """The JSON value a prefix stands for, or ``_INVALID`` if it is no JSON prefix."""
    try:
        return from_json(text, allow_partial=mode)
    except ValueError:
        pass
    try:
        return from_json(_escape_controls(text), allow_partial=mode)
    except ValueError:
        return _INVALID


@dataclass(slots=True)
class _Documents:
    """The complete JSON documents of a growing text (kept once settled) and the unfinished one at its end."""

    complete: list[Any] = field(default_factory=list)
    position: int = 0

    def read(self, text: str) -> str | None:
        """Settle the documents completed since the last call; the unfinished document's text, if any."""
        while (opener := _OPENERS.search(text, self.position)) is not None:
            start = opener.start()
            try:
                value, end = _STRICTLY_COMPLETE.raw_decode(text, start)
            except ValueError:
                if _partial(text[start:], "trailing-strings") is _INVALID:
                    self.position = start + 1
                    continue
                return text[start:]
            self.complete.append(value)
            self.position = end
        return None


@dataclass(slots=True)
class _Reading:
    """What one parse of the text so far says about its first ``run_code_file`` action."""

    found: bool = False
    written: dict[str, Any] = field(default_factory=dict)
    """The action's arguments, unfinished strings included."""
    finished: dict[str, Any] = field(default_factory=dict)
    """The action's arguments whose values are complete."""


def _first_action(value: Any) -> Any:
    """The arguments of the first ``run_code_file`` in ``value`` (in text order), else ``_INVALID``."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == RUN_CODE:
                return item
            inner = _first_in_text(item) if key == ACTION_KEY and isinstance(item, str) else _first_action(item)
            if inner is not _INVALID:
                return inner
    elif isinstance(value, list):
        for item in value:
            inner = _first_action(item)
            if inner is not _INVALID:
                return inner
    return _INVALID


def _first_in_text(text: str) -> Any:
    """``_first_action`` over the documents of an action list sent as a JSON string (complete or not)."""
    documents = _Documents()
    unfinished = documents.read(text)
    values = [*documents.complete, *(() if unfinished is None else (_partial(unfinished, "trailing-strings"),))]
    for value in values:
        found = _first_action(value)
        if found is not _INVALID:
            return found
    return _INVALID


def _read(documents: _Documents, text: str) -> _Reading:
    unfinished = documents.read(text)
    for value in documents.complete:
        action = _first_action(value)
        if action is not _INVALID:
            arguments = action if isinstance(action, dict) else {}
            return _Reading(found=True, written=arguments, finished=arguments)
    if unfinished is None:
        return _Reading()
    written = _first_action(_partial(unfinished, "trailing-strings"))
    if written is _INVALID:
        return _Reading(found=_key_just_written(unfinished))
    finished = _first_action(_partial(unfinished, True))
    return _Reading(
        found=True,
        written=written if isinstance(written, dict) else {},
        finished=finished if isinstance(finished, dict) else {},
    )


def _key_just_written(text: str) -> bool:
    """A ``run_code_file`` key that ends the text, before its value starts (partial parsing drops it)."""
    for ending, completion in ((_ENDS_WITH_STRING, ":0"), (_ENDS_WITH_COLON, "0")):
        if ending.search(text) and RUN_CODE in text[-len(RUN_CODE) - 8 :]:
            value = _partial(text + completion, True)
            if value is not _INVALID and _first_action(value) is not _INVALID:
                return True
    return False


@dataclass(slots=True)
class CodeDecoder:
    """What the reply so far says about its first ``run_code_file`` action."""

    _text: list[str] = field(default_factory=list)
    _length: int = 0
    _read_at: int = -1
    _documents: _Documents = field(default_factory=_Documents)
    _reading: _Reading = field(default_factory=_Reading)

    def feed(self, fragment: str) -> None:
        self._text.append(fragment)
        self._length += len(fragment)

    def _current(self, *, found_is_enough: bool = False) -> _Reading:
        if found_is_enough and self._reading.found:
            return self._reading
        if self._read_at != self._length:
            text = "".join(self._text)
            self._text = [text]
            self._read_at = self._length
            if self._reading.found or RUN_CODE in text:
                self._reading = _read(self._documents, text)
        return self._reading

    @property
    def found(self) -> bool:
        """A ``run_code_file`` action has started forming."""
        return self._current(found_is_enough=True).found

    @property
    def name(self) -> str | None:
        """The script name, once its string is complete."""
        name = self._current().finished.get("name")
        return name if isinstance(name, str) else None

    @property
    def code(self) -> str:
        """The decoded prefix of the ``code`` argument."""
        code = self._current().written.get("code")
        return code if isinstance(code, str) else ""

    @property
    def code_started(self) -> bool:
        """The ``code`` string has begun (a re-run of a saved script has none)."""
        return isinstance(self._current().written.get("code"), str)

    @property
    def code_complete(self) -> bool:
        return isinstance(self._current().finished.get("code"), str)
