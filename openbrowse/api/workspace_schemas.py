"""Wire models of the v3 ``workspaces`` resource, shaped as the BU SDK's models expect (spec §27.1)."""

from __future__ import annotations

from pydantic import Field

from openbrowse.api.schemas import WireModel
from openbrowse.domain.clock import to_wire
from openbrowse.domain.workspaces import WorkspaceRecord

__all__ = [
    "UploadItem",
    "UploadPlanView",
    "UploadRequest",
    "UploadTicket",
    "WorkspaceBody",
    "WorkspaceFileView",
    "WorkspaceFilesView",
    "WorkspaceListView",
    "WorkspaceSizeView",
    "WorkspaceView",
    "workspace_view",
]


class WorkspaceBody(WireModel):
    """``POST`` and ``PATCH /v3/workspaces``."""

    name: str | None = Field(default=None, max_length=500)


class WorkspaceView(WireModel):
    id: str
    name: str | None
    created_at: str
    updated_at: str


class WorkspaceListView(WireModel):
    items: list[WorkspaceView]
    total_items: int
    page_number: int
    page_size: int


class WorkspaceFileView(WireModel):
    path: str
    size: int
    last_modified: str
    url: str | None = None


class WorkspaceFilesView(WireModel):
    files: list[WorkspaceFileView]
    folders: list[str]
    next_cursor: str | None
    has_more: bool


class UploadItem(WireModel):
    name: str = Field(min_length=1, max_length=255)
    content_type: str | None = Field(default=None, max_length=255)
    size: int = Field(ge=0, description="The file's size in bytes; the PUT may not send more.")


class UploadRequest(WireModel):
    files: list[UploadItem] = Field(min_length=1, max_length=10)


class UploadTicket(WireModel):
    name: str
    upload_url: str
    path: str


class UploadPlanView(WireModel):
    files: list[UploadTicket]


class WorkspaceSizeView(WireModel):
    used_bytes: int
    file_count: int
    limit_bytes: int


def workspace_view(record: WorkspaceRecord) -> WorkspaceView:
    return WorkspaceView(
        id=record.id, name=record.name, created_at=to_wire(record.created_at), updated_at=to_wire(record.updated_at)
    )
