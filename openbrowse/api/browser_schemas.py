"""Wire models of the v3 ``browsers`` resource, shaped as the BU SDK's ``BrowserSessionView`` expects.

Beyond BU's fields a browser carries the seed's ``state``/``endReason`` (spec §21.1), its two lifetimes, the
``queue`` it waits in (§21.2), in the answers that issue one, a CDP ``token`` (§21.4), and while a person has it
(§21.5), its ``pause`` and ``takeoverUrl``.
"""

from __future__ import annotations

from typing import Any, Literal
from urllib.parse import quote

from pydantic import Field, field_validator
from starlette.requests import HTTPConnection

from openbrowse.api.schemas import WireModel
from openbrowse.config import Settings
from openbrowse.domain.browsers import (
    DEFAULT_IDLE_TIMEOUT_MS,
    DEFAULT_TIMEOUT_MINUTES,
    MAX_LIFETIME_MS,
    MAX_QUEUE_SECONDS,
    MAX_TIMEOUT_MINUTES,
    MAX_WAIT_FOR_CAPACITY_MS,
    MIN_LIFETIME_MS,
    BrowserQueue,
    BrowserRecord,
)
from openbrowse.domain.clock import to_wire
from openbrowse.domain.end_reasons import browser_end_reason, browser_state
from openbrowse.domain.money import format_usd
from openbrowse.errors import InvalidRequest
from openbrowse.sessions.browser_capacity import CapacityRequest
from openbrowse.sessions.browser_tokens import IssuedToken
from openbrowse.sessions.browsers import BrowserRequest
from openbrowse.sessions.pausing import PauseRecord
from openbrowse.sessions.proxies import ProxyChooser, browser_form, proxy_cost_usd, proxy_used_mb, public_proxy

__all__ = [
    "BrowserListView",
    "BrowserTokenView",
    "BrowserView",
    "CreateBrowserBody",
    "UpdateBrowserBody",
    "browser_view",
    "proxied_cdp_url",
]

MAX_METADATA_PAIRS = 10


def _no_booleans(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError("must be a number")
    return value


class QueueForCapacityBody(WireModel):
    max_wait_seconds: int = Field(ge=1, le=MAX_QUEUE_SECONDS)

    _numbers = field_validator("max_wait_seconds", mode="before")(_no_booleans)


class CreateBrowserBody(WireModel):
    """``POST /v3/browsers``. BU-only options we do not implement (captchas, extensions…) are ignored."""

    profile_id: str | None = None
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_MINUTES, allow_inf_nan=False)
    """BU's maximum age in minutes, default 60, at most 240. Fractions are accepted (``0.05`` = 3 s)."""
    max_duration_ms: int | None = Field(default=None, ge=MIN_LIFETIME_MS, le=MAX_LIFETIME_MS)
    idle_timeout_ms: int | None = Field(default=None, ge=MIN_LIFETIME_MS, le=MAX_LIFETIME_MS)
    wait_for_capacity_ms: int = Field(default=0, ge=0, le=MAX_WAIT_FOR_CAPACITY_MS)
    queue_for_capacity: QueueForCapacityBody | None = None
    browser_screen_width: int | None = Field(default=None, ge=320, le=6144)
    browser_screen_height: int | None = Field(default=None, ge=320, le=3456)
    metadata: dict[str, str] | None = Field(default=None, max_length=MAX_METADATA_PAIRS)
    enable_recording: bool | None = None
    """Record the display to an MP4, ``recordingUrl`` once stopped (spec §22.1); default RECORDING_DEFAULT."""
    custom_proxy: dict[str, Any] | None = None
    """``{host, port, username?, password?, ignoreCertErrors?, scheme?}`` (spec §28.1)."""
    proxy_country_code: str | None = None
    """A country of ``PROXY_POOL``; ``null``: direct; absent: ``PROXY_DEFAULT_COUNTRY``."""

    _numbers = field_validator(
        "timeout",
        "max_duration_ms",
        "idle_timeout_ms",
        "wait_for_capacity_ms",
        "browser_screen_width",
        "browser_screen_height",
        mode="before",
    )(_no_booleans)

    def to_request(self, settings: Settings) -> BrowserRequest:
        if self.queue_for_capacity is not None and self.wait_for_capacity_ms > 0:
            raise InvalidRequest("Pass either waitForCapacityMs or queueForCapacity, not both.")
        if self.timeout is not None and self.max_duration_ms is not None:
            raise InvalidRequest("Pass either timeout (minutes) or maxDurationMs, not both.")
        if self.max_duration_ms is not None:
            minutes = self.max_duration_ms / 60_000
        else:
            minutes = self.timeout if self.timeout is not None else DEFAULT_TIMEOUT_MINUTES
        queue = self.queue_for_capacity
        chooser = ProxyChooser(settings)
        sent = self.model_fields_set
        proxy = chooser.choose(
            self.custom_proxy,
            self.proxy_country_code,
            custom_sent="custom_proxy" in sent,
            country_sent="proxy_country_code" in sent,
        )
        return BrowserRequest(
            upstream=chooser.proxy(proxy),
            proxy_form=browser_form(proxy),
            timeout_minutes=minutes,
            idle_timeout_ms=self.idle_timeout_ms if self.idle_timeout_ms is not None else DEFAULT_IDLE_TIMEOUT_MS,
            capacity=CapacityRequest(
                wait_ms=self.wait_for_capacity_ms, queue_seconds=queue.max_wait_seconds if queue else None
            ),
            screen_width=self.browser_screen_width,
            screen_height=self.browser_screen_height,
            profile_id=self.profile_id,
            metadata=dict(self.metadata or {}),
            enable_recording=self.enable_recording,
        )


class UpdateBrowserBody(WireModel):
    action: Literal["stop"]


class QueueView(WireModel):
    position: int
    eta_seconds: int
    reason: str
    queued_at: str
    expires_at: str


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
    custom_proxy: dict[str, Any] | None = None
    """``{host, port, scheme, hasUsername}``: never the proxy's credentials (spec §28.1)."""
    proxy_country_code: str | None = None
    agent_session_id: None = None
    recording_url: str | None = None
    recording_available: bool = False
    metadata: dict[str, str] = Field(default_factory=dict)
    extensions: list[Any] = Field(default_factory=list)
    profile_id: str | None = None
    state: str = "live"
    end_reason: str | None = None
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    max_duration_ms: int = 0
    queue: QueueView | None = None
    token: str | None = None
    """A fresh CDP token, in the answers of ``POST /v3/browsers`` only (``POST …/token`` issues more)."""
    token_expires_at: str | None = None
    pause: dict[str, Any] | None = None
    """While paused: ``{state, reason, by, requestedAt, pausedAt, expiresAt}``, as on a session."""
    takeover_url: str | None = None
    """While paused: the live view with input enabled for this link alone (API-key holders only)."""


class IssueTokenBody(WireModel):
    """``POST /v3/browsers/{id}/token`` takes no fields (a body, if any, is ignored)."""


class BrowserTokenView(WireModel):
    """``POST /v3/browsers/{id}/token``: a fresh CDP token; ``cdpUrl`` carries it once the browser is live."""

    id: str
    token: str
    token_expires_at: str
    cdp_url: str | None


class BrowserListView(WireModel):
    items: list[BrowserView]
    total_items: int
    page_number: int
    page_size: int


def proxied_cdp_url(conn: HTTPConnection, settings: Settings, browser_id: str, token: str | None = None) -> str:
    """``ws(s)://<Host>/v3/browsers/{id}/cdp[?token=…]``: the DevTools socket as reachable through this server.

    The token rides in the query only when auth is on: BU SDK users pass ``cdpUrl`` alone to ``connect_over_cdp``.
    """
    scheme = "wss" if conn.url.scheme in {"https", "wss"} else "ws"
    url = f"{scheme}://{conn.url.netloc}/v3/browsers/{browser_id}/cdp"
    if token is not None and settings.auth_enabled:
        url += f"?token={quote(token, safe='')}"
    return url


def _queue_view(queue: BrowserQueue | None) -> QueueView | None:
    if queue is None:
        return None
    return QueueView(
        position=queue.position,
        eta_seconds=queue.eta_seconds,
        reason=queue.reason,
        queued_at=to_wire(queue.queued_at),
        expires_at=to_wire(queue.expires_at),
    )


def browser_view(
    record: BrowserRecord,
    *,
    live_url: str | None,
    conn: HTTPConnection,
    settings: Settings,
    queue: BrowserQueue | None = None,
    token: IssuedToken | None = None,
    pause: PauseRecord | None = None,
    takeover_url: str | None = None,
    recording_url: str | None = None,
    proxy_bytes: int = 0,
) -> BrowserView:
    end_reason = browser_end_reason(record.status, record.stop_reason)
    custom_proxy, country = public_proxy(record.proxy)
    return BrowserView(
        custom_proxy=custom_proxy,
        proxy_country_code=country,
        proxy_used_mb=proxy_used_mb(proxy_bytes),
        proxy_cost=format_usd(proxy_cost_usd(settings, proxy_bytes)),
        id=record.id,
        status=record.status.value,
        live_url=live_url,
        cdp_url=proxied_cdp_url(conn, settings, record.id, token.value if token else None) if record.live else None,
        timeout_at=to_wire(record.timeout_at),
        started_at=to_wire(record.started_at),
        finished_at=to_wire(record.finished_at) if record.finished_at is not None else None,
        metadata=record.metadata,
        profile_id=record.profile_id,
        state=browser_state(record.status, record.stop_reason, queued=record.starting, paused=pause is not None).value,
        end_reason=end_reason.value if end_reason else None,
        idle_timeout_ms=record.idle_timeout_ms,
        max_duration_ms=record.max_duration_ms,
        queue=_queue_view(queue),
        token=token.value if token else None,
        token_expires_at=to_wire(token.expires_at) if token else None,
        pause=pause.wire() if pause is not None else None,
        takeover_url=takeover_url,
        recording_url=recording_url if not record.active else None,
        recording_available=record.enable_recording and (record.active or recording_url is not None),
    )
