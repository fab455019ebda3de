"""Workspace vocabulary (spec §27.1): the stored record, the limits, and the rules for paths inside a workspace.

A workspace file is addressed by a *relative path*: plain segments (each one visible name, as a file area's names,
:func:`~openbrowse.domain.file_listing.is_plain_name`) joined by ``/``. No ``..``, no absolute path, no empty or
hidden segment, so a path can never leave its workspace and never names a file still being written (those have
hidden names).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from openbrowse.domain.file_listing import is_plain_name
from openbrowse.errors import MalformedRequest

__all__ = [
    "DEFAULT_UPLOAD_PREFIX",
    "MAX_FILE_BYTES",
    "MAX_PATH_DEPTH",
    "WorkspaceRecord",
    "is_relative_path",
    "is_workspace_id",
    "new_workspace_id",
    "require_path",
    "require_prefix",
]

MAX_FILE_BYTES = 100 * 1024 * 1024
MAX_PATH_DEPTH = 16
MAX_PATH_CHARS = 1024
DEFAULT_UPLOAD_PREFIX = "uploads"
_BAD_PATH = (
    "A workspace path must be relative, made of plain names joined by '/': no '..', no leading '/', "
    "no hidden or empty parts."
)


@dataclass(frozen=True, slots=True)
class WorkspaceRecord:
    id: str
    name: str | None
    created_at: datetime
    updated_at: datetime


def new_workspace_id() -> str:
    return str(uuid.uuid4())


def is_workspace_id(value: str) -> bool:
    """A UUID in its canonical form: the only ids this server hands out (and safe as a folder name)."""
    try:
        return str(uuid.UUID(value)) == value.lower() and len(value) == 36
    except ValueError:
        return False


def is_relative_path(path: str) -> bool:
    if not path or len(path) > MAX_PATH_CHARS:
        return False
    parts = path.split("/")
    return len(parts) <= MAX_PATH_DEPTH and all(is_plain_name(part) for part in parts)


def require_path(path: str) -> str:
    """``path`` itself, or a 400 saying what a path must be."""
    if not is_relative_path(path):
        raise MalformedRequest(_BAD_PATH)
    return path


def require_prefix(prefix: str | None) -> str:
    """A listing or upload prefix without its trailing ``/`` ('' for the whole workspace); 400 when it is no
    relative path. A listing prefix may end mid-name (``uploads/peo``), so only whole segments are checked here."""
    trimmed = (prefix or "").rstrip("/")
    if trimmed and not is_relative_path(trimmed):
        raise MalformedRequest(_BAD_PATH)
    return trimmed
