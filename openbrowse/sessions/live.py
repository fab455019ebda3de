"""LiveTargets: one lookup from an id in a ``/vnc/{id}/…`` path to what the live view can show.

Sessions and raw browsers share the live-view routes (spec §4.10, §19.1), so an id resolves against both:
raw browsers first (an in-memory check plus one indexed row lookup), then sessions. An id that is neither is
``SessionNotFound`` (the live view's 404 speaks of sessions, as the spec says).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from openbrowse.domain.sessions import TERMINAL_STATUSES, SessionStatus
from openbrowse.sessions.browsers import BrowserService
from openbrowse.sessions.manager import SessionManager
from openbrowse.sessions.runtime import LiveSlot

__all__ = ["LiveTarget", "LiveTargets"]


@dataclass(frozen=True, slots=True)
class LiveTarget:
    """A session or raw browser as the live view sees it. ``slot`` is None when nothing is on screen."""

    kind: Literal["session", "browser"]
    id: str
    status: str
    slot: LiveSlot | None
    ended: asyncio.Event | None = None
    """A raw browser's: set when it stops, and its viewers' connections close then (sessions: None)."""

    @property
    def may_come_alive(self) -> bool:
        """Whether a browser may still appear for this id (a queued or running session), worth a page refresh."""
        if self.kind == "browser":
            return False
        return SessionStatus(self.status) not in TERMINAL_STATUSES


class LiveTargets:
    def __init__(self, sessions: SessionManager, browsers: BrowserService) -> None:
        self._sessions = sessions
        self._browsers = browsers

    async def resolve(self, target_id: str) -> LiveTarget:
        """The session or raw browser with this id; raises ``SessionNotFound`` when it is neither."""
        browser = await self._browsers.find(target_id)
        if browser is not None:
            slot, ended = self._browsers.live_slot(target_id), self._browsers.ended_signal(target_id)
            return LiveTarget("browser", target_id, str(browser.status), slot, ended)
        record = await self._sessions.get(target_id)
        return LiveTarget("session", target_id, str(record.status), self._sessions.live_slot(target_id))
