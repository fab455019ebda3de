"""What a session shows for each way its run can end: the status change and its feed rows (spec §4.5, §6, §17).

The :class:`~openbrowse.sessions.worker.SessionWorker` decides when a run ended and closes its browser; an
:class:`EndingRecorder` writes the ending. By the time one of its terminal writes runs, the worker has merged the
run's profile back (spec §9.3), so a user who sees the status can rely on the profile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import Salvage, TurnEnding, TurnOutcome
from openbrowse.errors import NodeFenced, SessionNotFound, StoreUnavailable
from openbrowse.sessions.max_duration import reached_summary
from openbrowse.sessions.states import Trigger, can
from openbrowse.sessions.turns import clip_output

if TYPE_CHECKING:
    from openbrowse.domain.sessions import SessionRecord
    from openbrowse.sessions.runtime import WorkerRuntime
    from openbrowse.sessions.status_port import StatusPort

logger = logging.getLogger(__name__)

STORE_RECOVERY_DELAYS_S = (1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0, 5.0)
"""Pauses between attempts to write a run's end while the database is away (about 30 s in all): bounded, because
the worker's end is shielded and a server shutting down waits for it."""

Phase = Literal["waiting", "queued", "starting", "running", "parked", "closing", "done"]
Salvager = Callable[[], Awaitable[Salvage]]


class StopReason(StrEnum):
    STOP_TASK = "stop_task"
    STOP_SESSION = "stop_session"
    DELETE = "delete"
    SHUTDOWN = "shutdown"
    MAINTENANCE = "maintenance"  # the end of a maintenance drain (spec §21.6)
    MAX_DURATION = "max_duration"  # the session's maxDurationMs was reached (spec §21.1)


@dataclass(frozen=True, slots=True)
class Release:
    """Why a parked browser is being closed; ``final_status`` says whether the session moves to ``stopped``."""

    note: str
    final_status: bool = True
    end_reason: EndReason | None = None


class EndingRecorder:
    def __init__(self, session_id: SessionId, runtime: WorkerRuntime, status: StatusPort) -> None:
        self.session_id = session_id
        self._runtime = runtime
        self._status = status

    # -- before the run starts ---------------------------------------------------------------------------------
    async def queued(self, ahead: int) -> None:
        await self._runtime.feed.append(
            self.session_id, FeedEntry.system("queued", f"Waiting for a free display slot ({ahead} ahead)", ahead=ahead)
        )

    async def never_started(self, problem: str) -> None:
        await self._runtime.feed.append(
            self.session_id,
            FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Error: {problem}"[:200], {"errorFull": problem}),
        )
        await self._status.apply(
            self.session_id,
            Trigger.FAIL,
            pending_task=None,
            is_task_successful=False,
            last_step_summary=problem,
            failure_kind=FailureKind.AGENT_FAILURE,
            failure_status_code=None,
        )

    # -- turn outcomes and releases ----------------------------------------------------------------------------
    async def turn_ended(self, outcome: TurnOutcome, *, parked: bool) -> None:
        trigger = {
            TurnEnding.FINISHED: Trigger.PARK if parked else Trigger.FINISH,
            TurnEnding.BUDGET: Trigger.BUDGET_STOP,
            TurnEnding.TIMEOUT: Trigger.TIMEOUT,
            TurnEnding.ERROR: Trigger.FAIL,
        }[outcome.ending]
        failure = outcome.failure
        gone: dict[str, object] = {} if parked else {"live_url": None, "browser_live": False}
        await self._status.apply(
            self.session_id,
            trigger,
            **gone,
            output=outcome.output,
            is_task_successful=outcome.is_task_successful,
            last_step_summary=outcome.summary,
            failure_kind=failure.kind if failure else None,
            failure_status_code=failure.status_code if failure else None,
            **({"end_reason": outcome.end_reason} if outcome.end_reason else {}),
        )

    async def released(self, release: Release) -> None:
        await self._runtime.feed.append(self.session_id, FeedEntry.system("keepAlive", release.note))
        if not release.final_status:
            return
        status = self._status
        async with status.lock(self.session_id):
            record = await self._runtime.sessions.get(self.session_id)
            if not record.is_queued and record.status.value == "idle":
                reason = {"end_reason": release.end_reason} if release.end_reason else {}
                await status.apply_locked(self.session_id, Trigger.RELEASE, live_url=None, browser_live=False, **reason)

    # -- ends that are not turn outcomes -----------------------------------------------------------------------
    async def crashed(self, exc: Exception) -> None:
        if isinstance(exc, NodeFenced):
            return  # the cluster gave this session to another node, which records its end (spec §26.5)
        if isinstance(exc, StoreUnavailable):
            await self._crashed_without_store(exc)
            return
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        with contextlib.suppress(SessionNotFound):
            await self._runtime.feed.append(
                self.session_id,
                FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Fatal error: {message}"[:214], {"errorFull": message}),
            )
            await self._fail(f"Fatal error: {message}", FailureKind.AGENT_FAILURE)

    async def _crashed_without_store(self, exc: StoreUnavailable) -> None:
        """The database went away mid-run for longer than the store's own retries: the run is over, and its end
        is written as soon as the database answers again (``STORE_RECOVERY_DELAYS_S``; after that a restart's
        reconciliation types it)."""
        summary = f"The database was lost mid-run: {exc.message}"
        for delay in STORE_RECOVERY_DELAYS_S:
            try:
                with contextlib.suppress(SessionNotFound):
                    await self._fail(summary, FailureKind.STORE_UNAVAILABLE)
                    await self._runtime.feed.append(self.session_id, FeedEntry.system("store", summary))
                return
            except NodeFenced:
                return
            except StoreUnavailable:
                await asyncio.sleep(delay)
        logger.error("Session %s ended without its end recorded: the database stayed away", self.session_id)

    async def _fail(self, summary: str, kind: FailureKind) -> None:
        record = await self._runtime.sessions.get(self.session_id)
        if record.status.value in {"created", "running"}:
            await self._status.apply(
                self.session_id,
                Trigger.FAIL,
                pending_task=None,
                is_task_successful=False,
                last_step_summary=summary,
                failure_kind=kind,
                failure_status_code=None,
            )

    async def stopped(self, reason: StopReason | None, phase: Phase, salvage: Salvager) -> None:
        """Record a stop that cancelled the run in ``phase``; ``salvage`` reads what an interrupted turn kept."""
        if reason is None or reason is StopReason.DELETE:
            return
        try:
            if reason in {StopReason.SHUTDOWN, StopReason.MAINTENANCE}:
                await self._shutdown(phase, salvage, maintenance=reason is StopReason.MAINTENANCE)
            elif reason is StopReason.MAX_DURATION:
                await self._max_duration(salvage)
            else:
                await self._user_stop(reason, salvage)
        except SessionNotFound:
            pass
        except Exception:
            logger.exception("Recording the stop of session %s failed", self.session_id)

    async def _user_stop(self, reason: StopReason, salvage: Salvager) -> None:
        trigger = Trigger.STOP_TASK if reason is StopReason.STOP_TASK else Trigger.STOP_SESSION
        record = await self._runtime.sessions.get(self.session_id)
        if _turn_was_interrupted(record):
            await self._interrupted_turn(trigger, "Stopped by request.", salvage)
            return
        # parked (or between a recorded turn end and parking): no turn was cut short, its answer stands
        if record.keep_alive and record.status.value == "idle":
            await self._runtime.feed.append(
                self.session_id, FeedEntry.system("keepAlive", "Keep-alive browser released: stopped by request")
            )
        await self._resting(trigger)

    async def _max_duration(self, salvage: Salvager) -> None:
        record = await self._runtime.sessions.get(self.session_id)
        headline = reached_summary(record)
        if _turn_was_interrupted(record):
            await self._interrupted_turn(Trigger.STOP_SESSION, headline, salvage, end_reason=EndReason.MAX_DURATION)
            return
        note = f"Keep-alive browser released: {headline[len('Stopped: ') :]}" if record.keep_alive else headline
        await self._runtime.feed.append(self.session_id, FeedEntry.system("maxDuration", note))
        await self._resting(Trigger.STOP_SESSION, end_reason=EndReason.MAX_DURATION, last_step_summary=headline)

    async def _shutdown(self, phase: Phase, salvage: Salvager, *, maintenance: bool) -> None:
        if phase in {"waiting", "queued"}:
            return  # never started: re-queued at the next start-up
        if _turn_was_interrupted(await self._runtime.sessions.get(self.session_id)):
            headline = f"Stopped: the server {'restarted for maintenance' if maintenance else 'shut down'}."
            await self._interrupted_turn(Trigger.STOP_SESSION, headline, salvage, end_reason=EndReason.MAINTENANCE)
            return
        await self._resting(Trigger.GO_COLD)  # a parked session stays idle, cold (spec §6 transition 21)

    async def _resting(self, trigger: Trigger, **changes: object) -> None:
        """The browser is gone; move a resting session along ``trigger`` where the table allows it."""
        status = self._status
        async with status.lock(self.session_id):
            record = await self._runtime.sessions.get(self.session_id)
            if can(record.status, trigger):
                await status.apply_locked(self.session_id, trigger, live_url=None, browser_live=False, **changes)
            else:  # e.g. stop "session" of a session whose turn already ended stopped: idempotent
                await self._runtime.sessions.update(self.session_id, live_url=None, browser_live=False)

    async def _interrupted_turn(
        self, trigger: Trigger, headline: str, salvage: Salvager, end_reason: EndReason | None = None
    ) -> None:
        """A turn cut short by a stop: keep what can be salvaged (spec §13.8) and say so in the feed."""
        kept = await salvage()
        summary = f"{headline} {kept.kept}"
        await self._runtime.feed.append(
            self.session_id, FeedEntry(MessageType.COMPLETION, summary, {"output": clip_output(kept.output)})
        )
        await self._status.apply(
            self.session_id,
            trigger,
            pending_task=None,
            output=kept.output,
            is_task_successful=kept.is_task_successful,
            last_step_summary=summary,
            failure_kind=None,
            failure_status_code=None,
            live_url=None,
            browser_live=False,
            **({"end_reason": end_reason} if end_reason else {}),
        )


def _turn_was_interrupted(record: SessionRecord) -> bool:
    """Whether the row still says a run is going on (a started, queued or handed-over turn)."""
    return record.status.value in {"created", "running"}
