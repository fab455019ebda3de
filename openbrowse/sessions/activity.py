"""ActivityBoard: each session's live activity and code records, and the wake-ups of its event streams.

The agent reports through a per-session :class:`BoardReporter` (an ``ActivityReporter``); the feed and session
repos call :meth:`ActivityBoard.touch` after every write. An event stream starts :meth:`watching` *before* it
reads, so a change that lands while it reads still wakes it: nothing is missed, nothing needs a tight poll.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime

from openbrowse.domain.activity import STREAM_LIMIT, Activity, ActivityKind, CodeDraft, CodeStatus
from openbrowse.domain.clock import Clock, utc_now
from openbrowse.domain.redaction import REDACTORS

CODE_SESSIONS_KEPT = 256
"""Code records outlive their turn (the code tab shows the last script); only this many sessions keep one."""


class ActivityBoard:
    def __init__(self, clock: Clock = utc_now) -> None:
        self._clock = clock
        self._activity: dict[str, Activity] = {}
        self._code: OrderedDict[str, CodeDraft] = OrderedDict()
        self._wakeups: dict[str, set[asyncio.Event]] = {}

    # -- change signal -----------------------------------------------------------------------------------------
    def touch(self, session_id: str) -> None:
        """Something about this session changed: wake every stream waiting on it."""
        for event in self._wakeups.pop(session_id, ()):
            event.set()

    def touch_all(self) -> None:
        """Something every stream must show changed (a maintenance warning): wake them all."""
        for session_id in list(self._wakeups):
            self.touch(session_id)

    @contextlib.contextmanager
    def watching(self, session_id: str) -> Iterator[asyncio.Event]:
        """An event set by the next change of this session; enter it *before* reading. Nothing is kept after."""
        event = asyncio.Event()
        self._wakeups.setdefault(session_id, set()).add(event)
        try:
            yield event
        finally:
            waiting = self._wakeups.get(session_id)
            if waiting is not None:
                waiting.discard(event)
                if not waiting:
                    del self._wakeups[session_id]

    def watched(self) -> int:
        """Sessions with a stream waiting on them (for tests: nothing may linger)."""
        return len(self._wakeups)

    # -- records -----------------------------------------------------------------------------------------------
    def activity(self, session_id: str) -> Activity | None:
        return self._activity.get(session_id)

    def code(self, session_id: str) -> CodeDraft | None:
        return self._code.get(session_id)

    def reporter(self, session_id: str) -> BoardReporter:
        return BoardReporter(self, session_id)

    def set_activity(self, session_id: str, activity: Activity | None) -> None:
        if activity is None:
            if self._activity.pop(session_id, None) is None:
                return
        else:
            self._activity[session_id] = activity
        self.touch(session_id)

    def set_code(self, session_id: str, draft: CodeDraft) -> None:
        self._code[session_id] = draft
        self._code.move_to_end(session_id)
        while len(self._code) > CODE_SESSIONS_KEPT:
            self._code.popitem(last=False)
        self.touch(session_id)

    def now(self) -> datetime:
        return self._clock()


class BoardReporter:
    """One session's :class:`openbrowse.domain.activity.ActivityReporter`, writing to the board."""

    def __init__(self, board: ActivityBoard, session_id: str) -> None:
        self._board = board
        self._session_id = session_id

    def begin(self, label: str, kind: ActivityKind, *, step: int | None = None) -> None:
        label = REDACTORS.of(self._session_id).text(label)
        self._board.set_activity(self._session_id, Activity(label, kind, self._board.now(), step))

    def stream(self, text: str) -> None:
        current = self._board.activity(self._session_id)
        if current is not None:
            text = REDACTORS.of(self._session_id).text(text[:STREAM_LIMIT])
            self._board.set_activity(self._session_id, replace(current, stream=text))

    def finish(self) -> None:
        self._board.set_activity(self._session_id, None)

    def code(self, name: str, code: str, status: CodeStatus) -> None:
        redactor = REDACTORS.of(self._session_id)
        self._board.set_code(self._session_id, CodeDraft(redactor.text(name), redactor.text(code), status))
