"""Names and pages of a session's or raw browser's files (spec §22.2, §22.3): pure rules, no disk.

A file of a file area is addressed by a *plain* name: one path segment that is not hidden, holds no separator and
no NUL, and is not too long for a file system. Listings are ordered by name and paged with an opaque cursor that
carries the last name returned, so files added meanwhile never shift a page that was already read.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from openbrowse.errors import MalformedRequest

__all__ = [
    "DEFAULT_PAGE_LIMIT",
    "MAX_NAME_BYTES",
    "MAX_PAGE_LIMIT",
    "FileEntry",
    "FilePage",
    "decode_cursor",
    "encode_cursor",
    "is_plain_name",
    "page_of",
    "require_plain_name",
]

MAX_NAME_BYTES = 255
DEFAULT_PAGE_LIMIT = 100
MAX_PAGE_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class FileEntry:
    name: str
    size: int
    modified_at: datetime


@dataclass(frozen=True, slots=True)
class FilePage:
    files: list[FileEntry]
    next_cursor: str | None

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


def is_plain_name(name: str) -> bool:
    """One visible path segment: no ``/`` or ``\\``, no NUL or control character, not ``.``/``..``/hidden."""
    if not name or name.startswith(".") or len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return False
    return not any(char in "/\\" or ord(char) < 0x20 or ord(char) == 0x7F for char in name)


def require_plain_name(name: str) -> str:
    """``name`` itself, or a 400 naming the rule it broke."""
    if not is_plain_name(name):
        raise MalformedRequest(
            "A file name must be one plain name: no '/', '\\' or control characters, not hidden, at most 255 bytes."
        )
    return name


def encode_cursor(name: str) -> str:
    return base64.urlsafe_b64encode(name.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The name a cursor carries; a 400 for anything this server did not issue."""
    try:
        name = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        name = ""
    if not is_plain_name(name):
        raise MalformedRequest("The cursor is not one this server issued; pass the nextCursor of a previous page.")
    return name


def page_of(entries: Sequence[FileEntry], limit: int, cursor: str | None) -> FilePage:
    """Up to ``limit`` entries after the cursor's name, in name order; ``next_cursor`` when more follow."""
    after = decode_cursor(cursor) if cursor else None
    ordered = sorted(entries, key=lambda entry: entry.name)
    if after is not None:
        ordered = [entry for entry in ordered if entry.name > after]
    files = ordered[:limit]
    more = len(ordered) > limit
    return FilePage(files=files, next_cursor=encode_cursor(files[-1].name) if more and files else None)
