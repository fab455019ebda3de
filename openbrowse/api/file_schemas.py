"""Wire models of the file routes (spec §22.2): BU's ``BrowserDownloadListResponse`` and an upload's answer."""

from __future__ import annotations

from openbrowse.api.schemas import WireModel
from openbrowse.domain.clock import to_wire
from openbrowse.domain.file_listing import FileEntry

__all__ = ["FileListView", "FileView", "file_view"]


class FileView(WireModel):
    """One file: its plain name (``path``, BU's field), size in bytes, last change, and a signed URL if asked."""

    path: str
    size: int
    last_modified: str
    url: str | None = None


class FileListView(WireModel):
    files: list[FileView]
    next_cursor: str | None = None
    has_more: bool = False


def file_view(entry: FileEntry, url: str | None = None) -> FileView:
    return FileView(path=entry.name, size=entry.size, last_modified=to_wire(entry.modified_at), url=url)
