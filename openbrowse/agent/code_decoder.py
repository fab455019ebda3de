"""Decode the ``code`` of a ``run_code_file`` action from a reply that is still streaming (spec §11.3).

The model's reply arrives as fragments of JSON text (a tool call's arguments, or the output text of an OpenAI
reply, maybe wrapped in a code fence). :class:`CodeDecoder` is fed those fragments and knows, as early as the
text allows, whether a ``run_code_file`` action has started, its ``name`` and the decoded prefix of its ``code``
string. It never waits for a value to end: escapes, ``\\uXXXX`` escapes (surrogate pairs included) and a
fragment boundary anywhere inside them are handled.

The action list may also come as a JSON *string* (``"action": "[{\\"run_code_file\\": …}]"``, a habit of some
models that action repair later undoes): the decoded characters of that string are fed to a nested scanner, so
the code shows while it is written there too.

Pure and synchronous; :class:`JsonScanner` is a tolerant incremental JSON tokenizer that reports keys and string
values by path. Text outside a JSON document is skipped, and a syntax error resets the scanner to skipping.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

Path = tuple[str | int, ...]

ACTION_KEY = "action"
RUN_CODE = "run_code_file"

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_STRING_SPECIAL = re.compile(r'["\\]')
_LITERAL_END = set(",}] \t\r\n")
_REPLACEMENT = "\ufffd"


class ScanHandler(Protocol):
    def key(self, path: Path) -> None:
        """An object key completed; ``path`` ends with it."""

    def string_chars(self, path: Path, text: str) -> None:
        """More decoded characters of the string value at ``path``."""

    def string_end(self, path: Path) -> None:
        """The string value at ``path`` is complete."""


@dataclass(slots=True)
class _Frame:
    is_object: bool
    expect: str  # "key" | "colon" | "value" | "comma"
    key: str | None = None
    index: int = 0


@dataclass(slots=True)
class JsonScanner:
    """Incremental, tolerant JSON tokenizer; ``prefix`` is prepended to every reported path."""

    handler: ScanHandler
    prefix: Path = ()
    _stack: list[_Frame] = field(default_factory=list)
    _in_string: bool = False
    _string_is_key: bool = False
    _key_chars: list[str] = field(default_factory=list)
    _escape: bool = False
    _hex: str | None = None
    _high_surrogate: int | None = None
    _in_literal: bool = False

    def feed(self, text: str) -> None:
        position = 0
        while position < len(text):
            if self._in_string:
                position = self._string(text, position)
            else:
                self._structural(text[position])
                position += 1

    # -- paths ---------------------------------------------------------------------------------------------------
    def _path(self) -> Path:
        parts: list[str | int] = list(self.prefix)
        for frame in self._stack:
            if frame.is_object:
                if frame.key is not None:
                    parts.append(frame.key)
            else:
                parts.append(frame.index)
        return tuple(parts)

    # -- strings -------------------------------------------------------------------------------------------------
    def _emit(self, chars: str) -> None:
        if not chars:
            return
        if self._string_is_key:
            self._key_chars.append(chars)
        else:
            self.handler.string_chars(self._path(), chars)

    def _flush_surrogate(self) -> str:
        if self._high_surrogate is None:
            return ""
        self._high_surrogate = None
        return _REPLACEMENT

    def _string(self, text: str, position: int) -> int:
        """Consume string content from ``position``; return where scanning continues."""
        if self._hex is not None:
            self._hex += text[position]
            if len(self._hex) == 4:
                self._unicode_escape()
            return position + 1
        if self._escape:
            self._escape = False
            char = text[position]
            if char == "u":
                self._hex = ""
            else:
                self._emit(self._flush_surrogate() + _ESCAPES.get(char, char))
            return position + 1
        match = _STRING_SPECIAL.search(text, position)
        end = match.start() if match else len(text)
        if end > position:
            self._emit(self._flush_surrogate() + text[position:end])
        if match is None:
            return end
        if match.group() == "\\":
            self._escape = True
        else:
            self._emit(self._flush_surrogate())
            self._end_string()
        return end + 1

    def _unicode_escape(self) -> None:
        digits, self._hex = self._hex or "", None
        try:
            code = int(digits, 16)
        except ValueError:
            self._emit(self._flush_surrogate() + _REPLACEMENT)
            return
        if 0xD800 <= code < 0xDC00:
            pending = self._flush_surrogate()
            self._high_surrogate = code
            self._emit(pending)
        elif 0xDC00 <= code < 0xE000:
            high, self._high_surrogate = self._high_surrogate, None
            if high is None:
                self._emit(_REPLACEMENT)
            else:
                self._emit(chr(0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)))
        else:
            self._emit(self._flush_surrogate() + chr(code))

    def _end_string(self) -> None:
        self._in_string = False
        frame = self._stack[-1]
        if self._string_is_key:
            frame.key = "".join(self._key_chars)
            self._key_chars = []
            frame.expect = "colon"
            self.handler.key(self._path())
        else:
            self.handler.string_end(self._path())
            frame.expect = "comma"

    # -- structure -----------------------------------------------------------------------------------------------
    def _reset(self) -> None:
        self._stack.clear()
        self._in_literal = False

    def _open(self, is_object: bool) -> None:
        self._stack.append(_Frame(is_object=is_object, expect="key" if is_object else "value"))

    def _close(self) -> None:
        self._stack.pop()
        if self._stack:
            self._stack[-1].expect = "comma"

    def _structural(self, char: str) -> None:
        if not self._stack:
            if char in "{[":
                self._open(char == "{")
            return
        frame = self._stack[-1]
        if self._in_literal:
            if char not in _LITERAL_END:
                return
            self._in_literal = False
            frame.expect = "comma"
        if char in " \t\r\n":
            return
        if frame.expect == "key":
            if char == '"':
                self._in_string, self._string_is_key = True, True
            elif char == "}":
                self._close()
            else:
                self._reset()
        elif frame.expect == "colon":
            if char == ":":
                frame.expect = "value"
            else:
                self._reset()
        elif frame.expect == "value":
            self._value(frame, char)
        elif char == ",":
            if frame.is_object:
                frame.expect, frame.key = "key", None
            else:
                frame.index += 1
                frame.expect = "value"
        elif char in "}]" and (char == "}") == frame.is_object:
            self._close()
        else:
            self._reset()

    def _value(self, frame: _Frame, char: str) -> None:
        if char == '"':
            self._in_string, self._string_is_key = True, False
        elif char in "{[":
            frame.expect = "comma"
            self._open(char == "{")
        elif char == "]" and not frame.is_object:
            self._close()
        elif char in ",}]":
            self._reset()
        else:
            self._in_literal = True


@dataclass(slots=True)
class CodeDecoder:
    """What the reply so far says about its first ``run_code_file`` action."""

    found: bool = False
    """A ``run_code_file`` action has started forming."""
    name: str | None = None
    """The script name, once its string is complete."""
    code: str = ""
    """The decoded prefix of the ``code`` argument."""
    code_started: bool = False
    """The ``code`` string has begun (a re-run of a saved script has none)."""
    code_complete: bool = False
    _action: Path | None = None
    _name_chars: list[str] = field(default_factory=list)
    _scanner: JsonScanner | None = None
    _nested: dict[Path, JsonScanner] = field(default_factory=dict)
    """Scanners of action lists sent as JSON strings, by the path of that string."""

    def __post_init__(self) -> None:
        self._scanner = JsonScanner(self)

    def feed(self, fragment: str) -> None:
        assert self._scanner is not None
        self._scanner.feed(fragment)

    # -- ScanHandler ---------------------------------------------------------------------------------------------
    def key(self, path: Path) -> None:
        if path and path[-1] == RUN_CODE and self._action is None:
            self._action = path
            self.found = True

    def string_chars(self, path: Path, text: str) -> None:
        if path and path[-1] == ACTION_KEY:
            nested = self._nested.get(path)
            if nested is None:
                nested = self._nested[path] = JsonScanner(self, prefix=path)
            nested.feed(text)
            return
        if self._action is None or len(path) != len(self._action) + 1 or path[:-1] != self._action:
            return
        if path[-1] == "code" and not self.code_complete:
            self.code_started = True
            self.code += text
        elif path[-1] == "name" and self.name is None:
            self._name_chars.append(text)

    def string_end(self, path: Path) -> None:
        if self._action is None or path[:-1] != self._action:
            return
        if path[-1] == "code":
            self.code_started = self.code_complete = True
        elif path[-1] == "name" and self.name is None:
            self.name = "".join(self._name_chars)
