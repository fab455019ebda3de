"""The feed rows one run writes, bound to its session: raw entries, events by category, judge events."""

from __future__ import annotations

from typing import Any

from openbrowse.domain.feed import EventCategory, FeedEntry, FeedSink
from openbrowse.domain.ids import SessionId


class RunFeed:
    def __init__(self, session_id: SessionId, sink: FeedSink) -> None:
        self.session_id = session_id
        self._sink = sink

    async def append(self, entry: FeedEntry) -> None:
        await self._sink.append(self.session_id, entry)

    async def event(self, category: EventCategory, action: str, summary: str, **data: Any) -> None:
        await self.append(FeedEntry.event(category, action, summary, **data))

    async def judge(self, action: str, summary: str, data: dict[str, Any]) -> None:
        """A ``judge`` event: review rounds, dissent, a store that stands without done."""
        await self.event(EventCategory.JUDGE, action, summary, **data)
