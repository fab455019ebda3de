"""The helpers a script finds in its namespace that the server serves: files, clipboard, store, fetch, read_pages.

Each is a call over the channel; the server checks the arguments and the session's rules (the file area, the
network policy, the store's validation) and its refusal arrives here as the matching Python exception. The
synchronous helpers block the script until the reply, as a local function would.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Callable
from typing import Any, Protocol

from openbrowse.scripthost.wire import FILE_LIMIT

STORE_HELPERS = (
    "add_item",
    "add_items_from_file",
    "coverage",
    "mark_absent",
    "read_output",
    "remove_items",
    "search_output",
    "set_field",
    "update_item",
    "update_items",
    "update_items_from_file",
)
"""The answer store's operations a script can call when the session has a store (spec §11.3)."""

_MODES = frozenset("rwaxbt+")


class Calls(Protocol):
    def call_sync(self, method: str, args: dict[str, Any]) -> Any: ...

    async def call(self, method: str, args: dict[str, Any]) -> Any: ...


def helper(function: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a namespace helper, so a later run may re-offer it without clobbering a script's own variable."""
    function.__openbrowse_helper__ = True  # type: ignore[attr-defined]
    return function


class _RemoteFile(io.BytesIO):
    """A file open for writing: its bytes go to the server, in one call, when it is closed."""

    def __init__(self, calls: Calls, name: str, initial: bytes, *, append: bool, at_end: bool) -> None:
        super().__init__(initial)
        self._calls = calls
        self._name = name
        self._append = append
        self._dirty = False
        if at_end:
            self.seek(0, io.SEEK_END)

    def write(self, data: Any) -> int:
        self._dirty = True
        return super().write(data)

    def truncate(self, size: int | None = None) -> int:
        self._dirty = True
        return super().truncate(size)

    def close(self) -> None:
        if self.closed:
            return
        data, dirty = self.getvalue(), self._dirty
        super().close()
        if dirty:
            _write(self._calls, self._name, data, append=self._append)


def _write(calls: Calls, name: str, data: bytes, *, append: bool = False, exclusive: bool = False) -> str:
    if len(data) > FILE_LIMIT:
        raise ValueError(f"{name} is too large to save from a script ({len(data)} bytes; at most {FILE_LIMIT})")
    args = {"name": name, "content": base64.b64encode(data).decode("ascii"), "append": append, "exclusive": exclusive}
    return str(calls.call_sync("files.write", args))


def _read(calls: Calls, name: str) -> bytes:
    reply = calls.call_sync("files.read", {"name": name})
    return base64.b64decode(str(reply))


class FileHelpers:
    def __init__(self, calls: Calls) -> None:
        self._calls = calls

    def namespace(self) -> dict[str, Any]:
        return {"open": self.open, "save_json": self.save_json, "read_json": self.read_json}

    def open(
        self,
        name: Any,
        mode: str = "r",
        buffering: int = -1,  # noqa: ARG002 - the built-in's signature; the file is buffered in full anyway
        encoding: str | None = None,
        errors: str | None = None,
        newline: str | None = None,
    ) -> Any:
        """The built-in ``open``, resolved against the session's file area on the server."""
        name = _name(name)
        if not isinstance(mode, str) or not mode or set(mode) - _MODES or sum(mode.count(c) for c in "rwax") != 1:
            raise ValueError(f"invalid mode: {mode!r}")
        binary = "b" in mode
        if binary and (encoding is not None or errors is not None or newline is not None):
            raise ValueError("binary mode doesn't take an encoding, errors or newline argument")
        kind, plus = next(c for c in mode if c in "rwax"), "+" in mode
        raw: io.BytesIO
        if kind == "r" and not plus:
            raw = io.BytesIO(_read(self._calls, name))
        else:
            if kind != "r":  # as the built-in does at open: create (w, a, x), truncate (w), refuse an existing (x)
                _write(self._calls, name, b"", append=kind == "a", exclusive=kind == "x")
            initial = _read(self._calls, name) if kind == "r" or (kind == "a" and plus) else b""
            raw = _RemoteFile(self._calls, name, initial, append=kind == "a" and not plus, at_end=kind == "a")
        if binary:
            return raw
        return io.TextIOWrapper(raw, encoding=encoding or "utf-8", errors=errors, newline=newline)

    def save_json(self, name: Any, value: Any) -> str:
        data = json.dumps(value, ensure_ascii=False, indent=1).encode("utf-8")
        return _write(self._calls, _name(name), data)

    def read_json(self, name: Any) -> Any:
        return json.loads(_read(self._calls, _name(name)).decode("utf-8"))


def _name(name: Any) -> str:
    text = name.__fspath__() if hasattr(name, "__fspath__") else name
    if not isinstance(text, str):
        raise TypeError(f"a file name must be a string, not {type(name).__name__}")
    return text


def served_helpers(calls: Calls) -> dict[str, Any]:
    """``fetch``, ``read_pages``, ``remember`` and ``recall`` (the store's helpers come from :func:`store_helpers`)."""

    async def fetch(
        url: str, method: str = "GET", headers: dict[str, str] | None = None, body: str | None = None
    ) -> dict[str, Any]:
        """Server-side HTTP under the network policy: ``{url, status, headers, text, json}``; raises on refusal."""
        reply: dict[str, Any] = await calls.call(
            "fetch", {"url": url, "method": method, "headers": headers, "body": body}
        )
        return reply

    async def read_pages(urls: list[str] | None = None, frame_url_contains: str | None = None) -> str:
        """The ``read_pages`` tool (spec §11.2), run by the server in the session's browser; returns its reply."""
        return str(await calls.call("read_pages", {"urls": urls, "frame_url_contains": frame_url_contains}))

    def remember(key: str, value: str) -> str:
        return str(calls.call_sync("clipboard.remember", {"key": key, "value": value}))

    def recall(key: str) -> str:
        return str(calls.call_sync("clipboard.recall", {"key": key}))

    return {"fetch": fetch, "read_pages": read_pages, "remember": remember, "recall": recall}


def store_helpers(calls: Calls) -> dict[str, Any]:
    """The answer store's operations, with the signatures of the store's own methods."""

    def op(operation: str, /, **args: Any) -> str:
        return str(calls.call_sync(f"store.{operation}", args))

    def add_item(item: Any) -> str:
        return op("add_item", item=item)

    def add_items_from_file(name: str) -> str:
        return op("add_items_from_file", name=name)

    def update_item(index: int, fields: dict[str, Any]) -> str:
        return op("update_item", index=index, fields=fields)

    def update_items(updates: list[dict[str, Any]]) -> str:
        return op("update_items", updates=updates)

    def update_items_from_file(name: str) -> str:
        return op("update_items_from_file", name=name)

    def set_field(key: str, value: Any) -> str:
        return op("set_field", key=key, value=value)

    def remove_items(indices: list[int], reason: str) -> str:
        return op("remove_items", indices=indices, reason=reason)

    def mark_absent(fields: str | list[str], reason: str) -> str:
        return op("mark_absent", fields=fields, reason=reason)

    def read_output(offset: int = 0, limit: int = 20, index: int | None = None, fields: list[str] | None = None) -> str:
        return op("read_output", offset=offset, limit=limit, index=index, fields=fields)

    def search_output(query: str) -> str:
        return op("search_output", query=query)

    def coverage() -> str:
        return op("coverage")

    found = {
        f.__name__: helper(f)
        for f in (
            add_item,
            add_items_from_file,
            update_item,
            update_items,
            update_items_from_file,
            set_field,
            remove_items,
            mark_absent,
            read_output,
            search_output,
            coverage,
        )
    }
    assert set(found) == set(STORE_HELPERS)
    return found
