"""The server's side of a script's helper calls (spec §11.3, §24.1): each method's arguments validated, then
served against this session only: its file area, clipboard, answer store, network policy and browser.

The script host runs model-written code, so a call is untrusted input: an unknown method, an argument of the
wrong type or size, or a path outside the file area is refused with a :class:`ScriptCallError` whose kind is
the exception the script sees. Nothing a call names can reach another session.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from browser_use import BrowserSession
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openbrowse.agent.files.quota import AreaQuota
from openbrowse.agent.safe_fetch import FetchFailed, fetch
from openbrowse.agent.structured.answer_store import StoreError
from openbrowse.domain.redaction import REDACTORS
from openbrowse.domain.scripts import ScriptCallError
from openbrowse.network.policy import NetworkRefused
from openbrowse.scripthost.wire import FILE_LIMIT

if TYPE_CHECKING:
    from openbrowse.agent.tools.context import ToolContext

NAME_LIMIT = 1024
TEXT_REPLY_LIMIT = 10 * 1024 * 1024
HEADER_LIMIT = 64
BODY_LIMIT = 5 * 1024 * 1024
VALUE_LIMIT = 1024 * 1024
URL_LIMIT = 8192


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class FileName(_Args):
    name: str = Field(min_length=1, max_length=NAME_LIMIT)


class FileWrite(FileName):
    content: str = Field(max_length=(FILE_LIMIT // 3 + 1) * 4)
    append: bool = False
    exclusive: bool = False


class FetchArgs(_Args):
    url: str = Field(min_length=1, max_length=URL_LIMIT)
    method: str = Field(default="GET", pattern=r"^[A-Za-z]{1,16}$")
    headers: dict[str, str] | None = None
    body: str | None = Field(default=None, max_length=BODY_LIMIT)

    @field_validator("headers")
    @classmethod
    def _few_headers(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and (len(value) > HEADER_LIMIT or any(len(k) + len(v) > 8192 for k, v in value.items())):
            raise ValueError(f"at most {HEADER_LIMIT} headers of at most 8 KiB each")
        return value


class Remember(_Args):
    key: str = Field(min_length=1, max_length=200)
    value: str = Field(max_length=VALUE_LIMIT)


class Recall(_Args):
    key: str = Field(min_length=1, max_length=200)


class ReadPagesArgs(_Args):
    urls: list[str] | None = Field(default=None, max_length=500)
    frame_url_contains: str | None = Field(default=None, max_length=URL_LIMIT)


class AddItem(_Args):
    item: Any


class UpdateItem(_Args):
    index: int
    fields: dict[str, Any]


class UpdateItems(_Args):
    updates: list[dict[str, Any]] = Field(max_length=10_000)


class SetField(_Args):
    key: str = Field(max_length=200)
    value: Any


class RemoveItems(_Args):
    indices: list[int] = Field(max_length=10_000)
    reason: str = Field(max_length=2000)


class MarkAbsent(_Args):
    fields: str | list[str]
    reason: str = Field(max_length=2000)


class ReadOutput(_Args):
    offset: int = 0
    limit: int = 20
    index: int | None = None
    fields: list[str] | None = None


class SearchOutput(_Args):
    query: str = Field(max_length=2000)


class NoArgs(_Args):
    pass


STORE_METHODS: dict[str, type[_Args]] = {
    "add_item": AddItem,
    "add_items_from_file": FileName,
    "update_item": UpdateItem,
    "update_items": UpdateItems,
    "update_items_from_file": FileName,
    "set_field": SetField,
    "remove_items": RemoveItems,
    "mark_absent": MarkAbsent,
    "read_output": ReadOutput,
    "search_output": SearchOutput,
    "coverage": NoArgs,
}


def inside(files_dir: Path, name: str) -> Path:
    """``name`` resolved in the session's file area; a path that leaves it is refused."""
    root = files_dir.resolve()
    resolved = (root / name).resolve()
    if not resolved.is_relative_to(root):
        raise ScriptCallError("PermissionError", f"{name} is outside the session's file area")
    return resolved


def _write_file(path: Path, args: FileWrite, data: bytes, quota: AreaQuota) -> str:
    """Write a script's file into the session's file area, if it fits under the area's cap (blocking)."""
    if path.is_dir():
        raise ScriptCallError("IsADirectoryError", f"{args.name} is a directory")
    if args.exclusive and path.exists():
        raise ScriptCallError("FileExistsError", f"{args.name} already exists")
    old = path.lstat().st_size if path.is_file() else 0
    if args.append and old + len(data) > FILE_LIMIT:
        raise ScriptCallError("ValueError", f"{args.name} would grow too large ({FILE_LIMIT} bytes at most)")
    growth = len(data) if args.append else len(data) - old
    if growth > 0 and growth > (room := quota.room()):
        raise ScriptCallError(
            "OSError",
            f"No space left for {args.name}: the session's file area is capped at {quota.limit_mb} MiB "
            f"and has {room} bytes left",
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if args.append else "wb") as handle:
        handle.write(data)
    return path.name


class ScriptCalls:
    """The :data:`~openbrowse.domain.scripts.CallHandler` of one session's runs."""

    def __init__(self, ctx: ToolContext, browser: BrowserSession) -> None:
        self._ctx = ctx
        self._browser = browser
        self._methods: dict[str, tuple[type[_Args], Callable[[Any], Awaitable[Any]]]] = {
            "files.read": (FileName, self._read),
            "files.write": (FileWrite, self._write),
            "fetch": (FetchArgs, self._fetch),
            "clipboard.remember": (Remember, self._remember),
            "clipboard.recall": (Recall, self._recall),
            "read_pages": (ReadPagesArgs, self._read_pages),
        }

    async def __call__(self, method: str, args: dict[str, Any]) -> Any:
        redactor = REDACTORS.of(self._ctx.session_id)
        if redactor:  # what a script hands the server is a sink too (spec §25.3); file bytes are swept at the end
            args = {key: value if key == "content" else redactor.value(value) for key, value in args.items()}
        if method.startswith("store."):
            return self._store(method.removeprefix("store."), args)
        known = self._methods.get(method)
        if known is None:
            raise ScriptCallError("ValueError", f"{method[:64]!r} is not a helper the server serves.")
        model, serve = known
        return await serve(_validated(method, model, args))

    # -- files ---------------------------------------------------------------------------------------------
    async def _read(self, args: FileName) -> str:
        path = inside(self._ctx.files_dir, args.name)
        if path.is_dir():
            raise ScriptCallError("IsADirectoryError", f"{args.name} is a directory")
        if not path.is_file():
            raise ScriptCallError("FileNotFoundError", f"No such file in the session's file area: {args.name}")
        size = path.stat().st_size
        if size > FILE_LIMIT:
            raise ScriptCallError("ValueError", f"{args.name} is too large to open in a script ({size} bytes)")
        return base64.b64encode(path.read_bytes()).decode("ascii")

    async def _write(self, args: FileWrite) -> str:
        path = inside(self._ctx.files_dir, args.name)
        try:
            data = base64.b64decode(args.content, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ScriptCallError("ValueError", "the file content is not valid base64") from exc
        if len(data) > FILE_LIMIT:
            raise ScriptCallError("ValueError", f"{args.name} is too large to save ({len(data)} bytes)")
        return await asyncio.to_thread(_write_file, path, args, data, self._ctx.file_quota)

    # -- the network and the browser -----------------------------------------------------------------------
    async def _fetch(self, args: FetchArgs) -> dict[str, Any]:
        try:
            response = await fetch(
                self._ctx.network,
                args.url,
                method=args.method,
                headers=args.headers,
                body=args.body,
                route=self._ctx.proxy,
            )
        except NetworkRefused as exc:
            raise ScriptCallError("PermissionError", str(exc)) from exc
        except FetchFailed as exc:
            raise ScriptCallError("ConnectionError", str(exc)) from exc
        text = response.text()
        try:
            parsed = json.loads(text) if response.content_type.endswith("json") else None
        except ValueError:
            parsed = None
        reply: dict[str, Any] = {
            "url": response.url,
            "status": response.status,
            "headers": response.headers,
            "text": text[:TEXT_REPLY_LIMIT],
            "json": parsed if len(text) <= TEXT_REPLY_LIMIT else None,
        }
        if response.truncated or len(text) > TEXT_REPLY_LIMIT:
            reply["truncated"] = True
        return reply

    async def _read_pages(self, args: ReadPagesArgs) -> str:
        # imported here: the tools package imports run_code, which imports this module
        from openbrowse.agent.tools.read_pages import ReadPagesParams, run_read_pages

        params = ReadPagesParams(urls=args.urls, frame_url_contains=args.frame_url_contains)
        return await run_read_pages(self._ctx, params, self._browser, None)

    # -- clipboard and store -------------------------------------------------------------------------------
    async def _remember(self, args: Remember) -> str:
        return self._ctx.clipboard.remember(args.key, args.value)

    async def _recall(self, args: Recall) -> str:
        return self._ctx.clipboard.recall(args.key)

    def _store(self, name: str, args: dict[str, Any]) -> str:
        store = self._ctx.store
        model = STORE_METHODS.get(name)
        if model is None:
            raise ScriptCallError("ValueError", f"'store.{name[:64]}' is not a store operation.")
        if store is None:
            raise ScriptCallError("RuntimeError", "This session has no output schema, so it has no output store.")
        valid = _validated(f"store.{name}", model, args)
        try:
            return str(getattr(store, name)(**{k: getattr(valid, k) for k in type(valid).model_fields}))
        except StoreError as exc:
            raise ScriptCallError("StoreError", str(exc)) from exc
        except (ValueError, TypeError, LookupError) as exc:
            raise ScriptCallError(type(exc).__name__, str(exc)) from exc


def _validated(method: str, model: type[_Args], args: dict[str, Any]) -> Any:
    try:
        return model.model_validate(args)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "arguments"
        raise ScriptCallError("TypeError", f"{method}: {where}: {first['msg']}") from exc
