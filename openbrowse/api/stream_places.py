"""Bounds on open ``/events`` streams (spec §25.1): per session and in all, a stream past either is a 429.

A stream takes a place when it is opened and gives it back when its response ends, however it ends (the
session rested, the client went away, the send timed out, the server shuts down): :class:`CountedEventSource`
holds the place for exactly as long as the ASGI response runs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.types import Receive, Scope, Send

from openbrowse.errors import OverLimit

__all__ = ["CountedEventSource", "StreamPlace", "StreamPlaces"]

TOO_MANY_FOR_SESSION = "This session already has {limit} open event streams; close one before opening another."
TOO_MANY_IN_ALL = "The server already has {limit} open event streams; close one before opening another."


class StreamPlace:
    """One open stream's place; :meth:`release` gives it back (idempotent)."""

    def __init__(self, places: StreamPlaces, session_id: str) -> None:
        self._places = places
        self.session_id = session_id
        self._held = True

    def release(self) -> None:
        if self._held:
            self._held = False
            self._places._give_back(self.session_id)


class StreamPlaces:
    """Counts open streams per session and in all (one event loop: no lock needed)."""

    def __init__(self, per_session: int, total: int) -> None:
        self.per_session = per_session
        self.total = total
        self._open: Counter[str] = Counter()

    def take(self, session_id: str) -> StreamPlace:
        """A place for one more stream of ``session_id``, or :class:`OverLimit`."""
        if self._open[session_id] >= self.per_session:
            raise OverLimit(TOO_MANY_FOR_SESSION.format(limit=self.per_session))
        if self.open_streams() >= self.total:
            raise OverLimit(TOO_MANY_IN_ALL.format(limit=self.total))
        self._open[session_id] += 1
        return StreamPlace(self, session_id)

    def open_streams(self, session_id: str | None = None) -> int:
        return self._open[session_id] if session_id is not None else sum(self._open.values())

    def _give_back(self, session_id: str) -> None:
        self._open[session_id] -= 1
        if self._open[session_id] <= 0:
            del self._open[session_id]


class CountedEventSource(EventSourceResponse):
    """An event stream that gives its place back when the response ends."""

    def __init__(self, place: StreamPlace, *args: Any, **kwargs: Any) -> None:
        self._place = place
        try:
            super().__init__(*args, **kwargs)
        except BaseException:
            place.release()
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._place.release()
