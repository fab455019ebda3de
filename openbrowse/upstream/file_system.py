"""Making a file we wrote known to browser-use's in-memory ``FileSystem`` (so its ``read_file`` finds it).

Upstream: browser-use 0.13.x, ``browser_use.filesystem.file_system.FileSystem``: the private
``_get_file_type_class(extension)`` gives the ``BaseFile`` subclass for an extension (``None`` if unsupported),
and the public ``files`` dict maps ``"stem.ext"`` to its file object (built with ``name=stem, content=...``).
"""

from __future__ import annotations

from browser_use.filesystem.file_system import FileSystem

BINARY_TYPES = frozenset({"pdf", "docx", "png", "gif", "jpg", "jpeg", "webp"})
"""Types browser-use knows but whose objects are not built from text content."""


def register_text_file(file_system: FileSystem, name: str, content: str) -> bool:
    """Add ``name`` with ``content`` to ``file_system`` if it is a text type browser-use supports."""
    if "." not in name:
        return False
    stem, extension = name.rsplit(".", 1)
    file_class = file_system._get_file_type_class(extension)
    if file_class is None or extension in BINARY_TYPES:
        return False
    file_system.files[name] = file_class(name=stem, content=content)
    return True
