"""SessionPause: one session's human takeover, as its worker owns it (spec §21.5).

A pause is asked for by a person (``POST /v3/sessions/{id}/pause``) or by the agent (``wait_for_human``). From a
running turn it is ``pausing`` until the agent reaches a safe point (the engine says when), then ``paused``; from a
parked keep-alive session it is ``paused`` at once. While it lasts:

* the row carries ``pause`` (``state``, ``reason``, ``by``, ``requestedAt``, ``pausedAt``, ``expiresAt``), the
  status stays what BU's SDK knows (``running`` or ``idle``);
* a takeover link lets its holder give input to the live view;
* the task and idle clocks stop (:meth:`paused_seconds`, :attr:`changed`);
* ``PAUSE_TIMEOUT`` after the last human input the agent resumes by itself (``pauseExpired``).

A resume tells the agent, in one note, how long it waited, what the person did through the control API, and
their own note. Feed: ``system`` events ``pause``, ``resume`` and ``pauseExpired``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from openbrowse.domain.clock import to_wire, utc_now
from openbrowse.domain.feed import FeedEntry
from openbrowse.domain.ids import SessionId
from openbrowse.errors import NotPaused, SessionNotFound
from openbrowse.shielding import run_shielded

if TYPE_CHECKING:
    from openbrowse.sessions.runtime import Engine, WorkerRuntime

__all__ = ["PauseRecord", "PausedBy", "SessionPause", "resume_note"]

logger = logging.getLogger(__name__)

PausedBy = Literal["user", "agent"]
NOTE_LIMIT = 2000


@dataclass(frozen=True, slots=True)
class PauseRecord:
    state: Literal["pausing", "paused"]
    by: PausedBy
    reason: str | None
    requested_at: datetime
    paused_at: datetime | None = None
    expires_at: datetime | None = None

    def wire(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "reason": self.reason,
            "by": self.by,
            "requestedAt": to_wire(self.requested_at),
            "pausedAt": to_wire(self.paused_at) if self.paused_at else None,
            "expiresAt": to_wire(self.expires_at) if self.expires_at else None,
        }


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def resume_note(seconds: float, by_hand: list[str], note: str | None, *, expired: bool) -> str:
    """The one message the agent's next step gets after a pause."""
    why = "Nobody handed back in time, so you go on by yourself" if expired else "The person handed back"
    lines = [f"The session was paused for {_duration(seconds)} while a person had the browser. {why}."]
    if by_hand:
        shown = by_hand[:20]
        more = f" (and {len(by_hand) - 20} more)" if len(by_hand) > 20 else ""
        lines.append("What they did through the control API (typed text hidden):")
        lines.extend(f"- {line}" for line in shown)
        if more:
            lines.append(more.strip())
    if note:
        lines.append(f"Their note: {note[:NOTE_LIMIT]}")
    lines.append("Continue from the page as it is now; do not undo or repeat their work.")
    return "\n".join(lines)


class SessionPause:
    """See the module docstring. ``on_expired`` resumes the session when ``PAUSE_TIMEOUT`` runs out."""

    def __init__(
        self, session_id: SessionId, runtime: WorkerRuntime, on_expired: Callable[[], Awaitable[None]]
    ) -> None:
        self._session_id = session_id
        self._runtime = runtime
        self._on_expired = on_expired
        self.record: PauseRecord | None = None
        self.takeover_token: str | None = None
        self.changed = asyncio.Event()
        """Set whenever a pause starts or ends: the task and idle clocks recompute their deadlines."""
        self._landing: asyncio.Task[None] | None = None
        self._expiry: asyncio.Task[None] | None = None
        self._since: float | None = None
        self._total = 0.0
        self._last_input = 0.0

    @property
    def active(self) -> bool:
        return self.record is not None

    @property
    def landed(self) -> bool:
        """Paused for real: no agent step runs, so a person (or a control client) may drive."""
        return self.record is not None and self.record.state == "paused"

    def paused_seconds(self) -> float:
        """Seconds spent paused so far in this run, the current pause included."""
        current = asyncio.get_running_loop().time() - self._since if self._since is not None else 0.0
        return self._total + current

    # -- pause -------------------------------------------------------------------------------------------------
    async def pause(self, engine: Engine | None, *, by: PausedBy, reason: str | None) -> None:
        """Pause (idempotent). ``engine`` is the running turn's, or None for a parked session (lands at once)."""
        if self.record is not None:
            return
        loop = asyncio.get_running_loop()
        self._since = self._last_input = loop.time()
        self.record = PauseRecord("pausing", by, reason, utc_now())
        self.takeover_token = self._runtime.takeovers.open(self._session_id)
        self.changed.set()
        await self._write()
        who = "The agent asked for a person" if by == "agent" else "Paused by a person"
        await self._event("pause", f"{who}{': ' + reason if reason else ''}", by=by, reason=reason)
        if engine is None:
            await self._land()
            return
        await engine.pause()
        self._landing = asyncio.create_task(self._land_when(engine), name=f"pause-{self._session_id}")

    async def _land_when(self, engine: Engine) -> None:
        try:
            await engine.wait_paused()
        except Exception:
            logger.exception("Waiting for session %s to pause failed", self._session_id)
        await self._land()

    async def _land(self) -> None:
        if self.record is None or self.record.state == "paused":
            return
        self.record = replace(self.record, state="paused", paused_at=utc_now(), expires_at=self._expires_at())
        await self._write()
        self._arm_expiry()

    def touch(self) -> None:
        """A person gave input: ``PAUSE_TIMEOUT`` counts from now."""
        if self.record is None:
            return
        self._last_input = asyncio.get_running_loop().time()
        if self.record.state == "paused":
            self.record = replace(self.record, expires_at=self._expires_at())
            self._arm_expiry()

    def _expires_at(self) -> datetime | None:
        timeout = self._runtime.settings.PAUSE_TIMEOUT
        return utc_now() + timedelta(seconds=timeout) if timeout else None

    def _arm_expiry(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        timeout = self._runtime.settings.PAUSE_TIMEOUT
        if timeout:
            self._expiry = asyncio.create_task(self._expire_after(timeout), name=f"pause-expiry-{self._session_id}")

    async def _expire_after(self, seconds: float) -> None:
        """Resume ``seconds`` after the person's last input: control calls, or input through the takeover link."""
        loop = asyncio.get_running_loop()
        while True:
            through_link = self._runtime.takeovers.last_input(self._session_id) or 0.0
            idle = loop.time() - max(self._last_input, through_link)  # both on the monotonic clock
            if idle >= seconds:
                break
            await asyncio.sleep(seconds - idle)
        self._expiry = None  # the resume below must not cancel this very task
        await self._on_expired()

    # -- resume ------------------------------------------------------------------------------------------------
    async def resume(self, engine: Engine | None, note: str | None, *, expired: bool = False) -> None:
        """End the pause; ``engine`` (a paused turn's) goes on with the resume note. NotPaused when not paused."""
        record = self.record
        if record is None:
            raise NotPaused("The session is not paused.")
        waited = self.paused_seconds()
        by_hand = await self._runtime.control.handed_back(self._session_id) if engine is not None else []
        self._end()
        await self._write()
        action, summary = ("pauseExpired", "The pause expired") if expired else ("resume", "Handed back to the agent")
        await self._event(action, summary + (f": {note}" if note else ""), note=note)
        if engine is not None:
            await engine.resume(resume_note(waited, by_hand, note, expired=expired))

    def _end(self) -> None:
        for task in (self._landing, self._expiry):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        self._landing = self._expiry = None
        if self._since is not None:
            self._total += asyncio.get_running_loop().time() - self._since
        self._since = None
        self.record = None
        self.takeover_token = None
        self._runtime.takeovers.close(self._session_id)
        self.changed.set()

    async def aclose(self) -> None:
        """The run ends: drop the pause quietly (its row shows none)."""
        if self.record is None:
            return
        self._end()
        with contextlib.suppress(SessionNotFound):
            await run_shielded(self._write())

    # -- the row and the feed ----------------------------------------------------------------------------------
    async def _write(self) -> None:
        wire = self.record.wire() if self.record is not None else None
        await self._runtime.sessions.update(self._session_id, pause=wire)

    async def _event(self, action: str, summary: str, **data: Any) -> None:
        await self._runtime.feed.append(self._session_id, FeedEntry.system(action, summary, **data))


async def idle_until(
    pauses: SessionPause, wake: asyncio.Future[Any], died: asyncio.Future[Any], idle_limit: float | None
) -> None:
    """A parked run waits for a follow-up (``wake``), the browser's death (``died``) or the idle timeout; a pause
    stops the idle clock, and a resume starts it again from zero."""
    while True:
        pauses.changed.clear()
        changed = asyncio.ensure_future(pauses.changed.wait())
        try:
            done, _ = await asyncio.wait(
                {wake, died, changed},
                timeout=None if pauses.active else idle_limit,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            changed.cancel()
        if wake in done or died in done or changed not in done:
            return
