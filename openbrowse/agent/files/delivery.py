"""The delivery contract (spec §12.1): data-bearing tools save a file on every call and reply with one envelope.

The envelope carries the data inline when its serialised form is at most 2000 characters, else a 300-character
sample and how to read the rest. Saved text files are also registered with browser-use's file system, so the
model's ``read_file('<name>')`` finds them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from browser_use.filesystem.file_system import FileSystem

from openbrowse.upstream.file_system import register_text_file

INLINE_LIMIT = 2000
SAMPLE_CHARS = 300
NAME_CHARS = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-.]+")


def safe_name(text: str, limit: int = NAME_CHARS) -> str:
    """A file-name fragment: unsafe runs become ``_``, capped, never empty."""
    cleaned = _UNSAFE.sub("_", text).strip("._")
    return cleaned[:limit].rstrip("._") or "file"


def save(files_dir: Path, name: str, content: str | bytes, file_system: FileSystem | None = None) -> Path:
    """Write ``name`` in the session's file area and make it readable with browser-use's ``read_file``."""
    files_dir.mkdir(parents=True, exist_ok=True)
    path = files_dir / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, "utf-8")
        register(file_system, name, content)
    return path


def register(file_system: FileSystem | None, name: str, content: str) -> None:
    """Known to browser-use's in-memory file system (text types it supports only)."""
    if file_system is not None:
        register_text_file(file_system, name, content)


def envelope(note: str, file: str, data: Any) -> str:
    """``{"note", "file", "data"}`` when it fits, else ``{"note", "file", "truncated", "totalChars", ...}``."""
    serialised = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    if len(serialised) <= INLINE_LIMIT:
        return json.dumps({"note": note, "file": file, "data": data}, ensure_ascii=False)
    return json.dumps(
        {
            "note": note,
            "file": file,
            "truncated": True,
            "totalChars": len(serialised),
            "sample": serialised[:SAMPLE_CHARS],
            "readWith": f"read_file('{file}') shows the whole content; search it instead of fetching again.",
        },
        ensure_ascii=False,
    )
