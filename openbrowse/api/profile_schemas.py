"""Wire models of the v3 ``profiles`` resource, shaped as the BU SDK's ``ProfileView`` expects (spec §5.3)."""

from __future__ import annotations

from pydantic import Field

from openbrowse.api.schemas import WireModel
from openbrowse.domain.clock import to_wire
from openbrowse.domain.profiles import ProfileRecord

__all__ = ["ProfileBody", "ProfileListView", "ProfileView", "profile_view"]


class ProfileBody(WireModel):
    """``POST``, ``PATCH`` and ``PUT /v3/profiles``: only non-null fields are applied."""

    name: str | None = Field(default=None, max_length=500)
    user_id: str | None = Field(default=None, max_length=500)


class ProfileView(WireModel):
    id: str
    user_id: str | None
    name: str | None
    last_used_at: str | None
    created_at: str
    updated_at: str
    cookie_domains: list[str] | None


class ProfileListView(WireModel):
    items: list[ProfileView]
    total_items: int
    page_number: int
    page_size: int


def profile_view(record: ProfileRecord) -> ProfileView:
    return ProfileView(
        id=record.id,
        user_id=record.user_id,
        name=record.name,
        last_used_at=to_wire(record.last_used_at) if record.last_used_at else None,
        created_at=to_wire(record.created_at),
        updated_at=to_wire(record.updated_at),
        cookie_domains=list(record.cookie_domains) if record.cookie_domains is not None else None,
    )
