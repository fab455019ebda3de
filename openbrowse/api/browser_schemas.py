"""Wire models of the v3 ``browsers`` resource, shaped as the BU SDK's ``BrowserSessionView`` expects."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator
from starlette.requests import HTTPConnection

from openbrowse.api.resource_auth import cdp_token
from openbrowse.api.schemas import WireModel
from openbrowse.config import Settings
from openbrowse.domain.browsers import DEFAULT_TIMEOUT_MINUTES, MAX_TIMEOUT_MINUTES, BrowserRecord
from openbrowse.domain.clock import to_wire
from openbrowse.domain.end_reasons import browser_end_reason, browser_state
from openbrowse.sessions.browsers import BrowserRequest

__all__ = [
    "BrowserListView",
    "BrowserView",
    "CreateBrowserBody",
    "UpdateBrowserBody",
    "browser_view",
    "proxied_cdp_url",
]

MAX_METADATA_PAIRS = 10


class CreateBrowserBody(WireModel):
    """``POST /v3/browsers``. BU-only options (proxy, captchas, recording, extensions…) are ignored."""

    profile_id: str | None = None
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_MINUTES, allow_inf_nan=False)
    """Minutes, default 60, at most 240. Fractions are accepted (``0.05`` = 3 s)."""
    browser_screen_width: int | None = Field(default=None, ge=320, le=6144)
    browser_screen_height: int | None = Field(default=None, ge=320, le=3456)
    metadata: dict[str, str] | None = Field(default=None, max_length=MAX_METADATA_PAIRS)

    @field_validator("timeout", "browser_screen_width", "browser_screen_height", mode="before")
    @classmethod
    def _no_booleans(cls, value: object) -> object:
        if isinstance(value, bool):
            raise ValueError("must be a number")
        return value

    def to_request(self) -> BrowserRequest:
        return BrowserRequest(
            timeout_minutes=self.timeout if self.timeout is not None else DEFAULT_TIMEOUT_MINUTES,
            screen_width=self.browser_screen_width,
            screen_height=self.browser_screen_height,
            profile_id=self.profile_id,
            metadata=dict(self.metadata or {}),
        )


class UpdateBrowserBody(WireModel):
    action: Literal["stop"]


class BrowserView(WireModel):
    id: str
    status: str
    live_url: str | None
    cdp_url: str | None
    timeout_at: str
    started_at: str
    finished_at: str | None
    proxy_used_mb: str = "0"
    proxy_cost: str = "0"
    browser_cost: str = "0"
    agent_session_id: None = None
    recording_url: None = None
    recording_available: bool = False
    metadata: dict[str, str] = Field(default_factory=dict)
    extensions: list[Any] = Field(default_factory=list)
    profile_id: str | None = None
    state: str = "live"
    end_reason: str | None = None


class BrowserListView(WireModel):
    items: list[BrowserView]
    total_items: int
    page_number: int
    page_size: int


def proxied_cdp_url(conn: HTTPConnection, settings: Settings, browser_id: str) -> str:
    """``ws(s)://<Host>/v3/browsers/{id}/cdp[?token=…]``: the DevTools socket as reachable through this server."""
    scheme = "wss" if conn.url.scheme in {"https", "wss"} else "ws"
    url = f"{scheme}://{conn.url.netloc}/v3/browsers/{browser_id}/cdp"
    if settings.auth_enabled:
        url += f"?token={cdp_token(settings.API_KEY or '', browser_id)}"
    return url


def browser_view(
    record: BrowserRecord, *, live_url: str | None, conn: HTTPConnection, settings: Settings
) -> BrowserView:
    return BrowserView(
        id=record.id,
        status=record.status.value,
        live_url=live_url,
        cdp_url=proxied_cdp_url(conn, settings, record.id) if record.active else None,
        timeout_at=to_wire(record.timeout_at),
        started_at=to_wire(record.started_at),
        finished_at=to_wire(record.finished_at) if record.finished_at is not None else None,
        metadata=record.metadata,
        profile_id=record.profile_id,
        state=browser_state(record.status, record.stop_reason).value,
        end_reason=end_reason.value if (end_reason := browser_end_reason(record.status, record.stop_reason)) else None,
    )
