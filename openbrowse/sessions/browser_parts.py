"""What :class:`~openbrowse.sessions.browsers.BrowserService` is given and gives: a validated request, the
slot-side protocols it drives, and the loopback endpoint it hands the CDP proxy."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from openbrowse.domain.browser_folders import BrowserFolders
from openbrowse.domain.browsers import DEFAULT_IDLE_TIMEOUT_MS, DEFAULT_TIMEOUT_MINUTES
from openbrowse.network.upstream import UpstreamProxy
from openbrowse.sessions.browser_capacity import CapacityRequest, SlotGauge
from openbrowse.sessions.runtime import LiveSlot
from openbrowse.slots.layout import SCREEN_HEIGHT, SCREEN_WIDTH

__all__ = ["BrowserLease", "BrowserRequest", "BrowserSlot", "CdpEndpoint", "SlotSource"]


class BrowserSlot(LiveSlot, Protocol):
    """What a raw browser needs of a started slot (implemented by :class:`openbrowse.slots.slot.Slot`)."""

    @property
    def cdp_url(self) -> str: ...

    @property
    def cdp_ws_url(self) -> str: ...

    @property
    def uploads_dir(self) -> Path: ...

    @property
    def downloads_dir(self) -> Path: ...

    @property
    def viewers(self) -> int: ...

    async def watch(self) -> BaseException: ...


class BrowserLease(Protocol):
    async def start_browser(self, *, vnc: bool = ..., window_size: tuple[int, int] | None = ...) -> BrowserSlot: ...

    async def release(self) -> None: ...


class SlotSource(SlotGauge, Protocol):
    """The slot pool as raw browsers use it: leases, and a look at how full it is."""

    async def lease(self, owner: str, on_wait: Callable[[int], Awaitable[None]] | None = ...) -> BrowserLease: ...


@dataclass(frozen=True, slots=True)
class BrowserRequest:
    """A validated ``POST /v3/browsers``. ``timeout_minutes`` is the maximum age and may be fractional."""

    timeout_minutes: float = DEFAULT_TIMEOUT_MINUTES
    idle_timeout_ms: int = DEFAULT_IDLE_TIMEOUT_MS
    capacity: CapacityRequest = field(default_factory=CapacityRequest)
    screen_width: int | None = None
    screen_height: int | None = None
    profile_id: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    enable_recording: bool | None = None
    """Record the display until the browser stops (spec §22.1); None: the server's RECORDING_DEFAULT."""
    upstream: UpstreamProxy | None = None
    """The upstream proxy all its traffic goes through (spec §28.1); None: direct, under the network policy."""
    proxy_form: dict[str, Any] | None = None
    """What the row keeps of it: ``country``, or host, port, scheme and whether a username is set."""

    @property
    def window_size(self) -> tuple[int, int] | None:
        if self.screen_width is None and self.screen_height is None:
            return None
        return (self.screen_width or SCREEN_WIDTH, self.screen_height or SCREEN_HEIGHT)


@dataclass(frozen=True, slots=True)
class CdpEndpoint:
    """Where the browser's own DevTools endpoint listens (loopback only), and the folders its files may use."""

    ws_url: str
    http_url: str
    folders: BrowserFolders
