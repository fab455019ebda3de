"""SessionWorker: one session's run from queue to teardown (spec §6, §7, §8).

A worker waits FIFO for a display slot, launches the browser, drives turns through its engine, parks between
keep-alive turns, and tears everything down. It is an owned asyncio task of the SessionManager. Stops and
deletes cancel the task; the worker then records the outcome named by its ``stop_reason`` (shielded).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import NOTHING_KEPT, TurnEnding, TurnOutcome
from openbrowse.errors import OpenBrowseError, SessionNotFound
from openbrowse.logs import session_id_var
from openbrowse.sessions.pressure import host_pressure
from openbrowse.sessions.states import Trigger, can

if TYPE_CHECKING:
    from openbrowse.domain.sessions import SessionRecord
    from openbrowse.sessions.runtime import Engine, LiveSlot, SlotLease, WorkerRuntime

logger = logging.getLogger(__name__)

Phase = Literal["waiting", "queued", "starting", "running", "parked", "closing", "done"]


class StopReason(StrEnum):
    STOP_TASK = "stop_task"
    STOP_SESSION = "stop_session"
    DELETE = "delete"
    SHUTDOWN = "shutdown"


@dataclass(frozen=True, slots=True)
class Release:
    """Why a parked browser is being closed; ``final_status`` says whether the session moves to ``stopped``."""

    note: str
    final_status: bool = True


class SessionWorker:
    def __init__(
        self, session_id: SessionId, runtime: WorkerRuntime, predecessor: asyncio.Task[None] | None = None
    ) -> None:
        self.session_id = session_id
        self._runtime = runtime
        self._predecessor = predecessor
        self.phase: Phase = "waiting"
        self.task: asyncio.Task[None] | None = None
        self.parked_since: float | None = None
        self._stop_reason: StopReason | None = None
        self._engine: Engine | None = None
        self._lease: SlotLease | None = None
        # open from a keep-alive turn's end until the worker stops waiting; resolved exactly once, by a follow-up
        # (the task to run) or by whatever ends the wait (a Release), so a hand-over cannot be half done
        self._wake: asyncio.Future[str | Release] | None = None

    # -- control from the manager ------------------------------------------------------------------------------
    def start(self, on_done: Callable[[SessionWorker], None]) -> None:
        self.task = asyncio.create_task(self._main(), name=f"session-{self.session_id}")
        self.task.add_done_callback(lambda _: on_done(self))

    async def stop(self, reason: StopReason) -> bool:
        """Cancel the run and wait until it has recorded ``reason`` and released everything.

        Returns False when the run had already recorded its end and was only tearing down: then nothing was
        recorded for ``reason`` and the caller treats the session as resting.
        """
        task = self.task
        if task is None:
            return False
        if task.done() or (self.phase in {"closing", "done"} and reason is not StopReason.DELETE):
            await asyncio.shield(asyncio.wait({task}))
            return False
        if self._stop_reason is None:
            self._stop_reason = reason
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(asyncio.wait({task}))
        return True

    @property
    def awaiting_follow_up(self) -> bool:
        """Parked (or about to park) with the door open for a warm follow-up."""
        return self._wake is not None and not self._wake.done()

    def take_follow_up(self, task: str) -> bool:
        """Hand a warm follow-up to this keep-alive worker, in one step: True means it will run ``task``; False
        means it is closing (or never parked) and the caller must queue a cold run.

        Unparking the lease here, synchronously, is what keeps the pool from evicting a worker that took a task.
        """
        wake = self._wake
        if wake is None or wake.done() or self._lease is None or not self._lease.unpark():
            return False
        wake.set_result(task)
        return True

    def request_release(self, note: str, *, final_status: bool = False) -> None:
        """Ask a parked worker to close its browser (restart-field change, eviction, idle timeout)."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(Release(note, final_status))

    def live_slot(self) -> LiveSlot | None:
        if self.phase not in {"starting", "running", "parked"} or self._engine is None:
            return None
        return self._engine.live_slot()

    # -- the run -----------------------------------------------------------------------------------------------
    async def _main(self) -> None:
        session_id_var.set(self.session_id)
        try:
            if self._predecessor is not None:
                await asyncio.wait({self._predecessor})
            await self._run()
        except asyncio.CancelledError:
            phase = self.phase
            self.phase = "closing"
            self._end_wake(Release("Stopped"))
            await asyncio.shield(self._record_stop(phase))
            if self._predecessor is not None:  # never leave the previous run's teardown unowned
                await asyncio.shield(asyncio.wait({self._predecessor}))
            raise
        except SessionNotFound:
            logger.info("Session %s was deleted while its run was ending", self.session_id)
        except Exception as exc:
            logger.exception("Run of session %s failed", self.session_id)
            await asyncio.shield(self._record_crash(exc))
        finally:
            self._end_wake(Release("The run ended"))
            self.phase = "done"

    async def _run(self) -> None:
        runtime = self._runtime
        record = await runtime.sessions.get(self.session_id)
        task = record.pending_task
        problem = runtime.never_started_problem(record)
        if task is None or problem is not None:
            await self._never_started(problem or "The session has no task to run")
            return
        self.phase = "queued"
        async with runtime.pool.acquire(self.session_id, on_wait=self._on_queued) as lease:
            self.phase = "starting"
            self._lease = lease
            early_browser = self._start_browser_early(lease)
            try:
                self._engine = engine = await runtime.make_engine(record)
            except BaseException:
                await asyncio.shield(_discard(early_browser))
                raise
            try:
                if early_browser is not None:
                    await early_browser
                await self._launch(engine, lease, task)
                while True:
                    self.phase = "running"
                    outcome = await self._turn(engine, task)
                    if not await self._finish_turn(outcome):
                        break
                    next_task = await self._park(lease)
                    if next_task is None:
                        break
                    task = next_task
            finally:
                self.phase = "closing"
                self._end_wake(Release("Closing"))
                await asyncio.shield(self._close(engine))

    def _start_browser_early(self, lease: SlotLease) -> asyncio.Task[object] | None:
        """The first run after a start waits for browser-use's import: start the slot's browser meanwhile.

        The engine's launch starts it again, which finds it up (starting is idempotent).
        """
        if self._runtime.engine_ready():
            return None
        return asyncio.create_task(lease.start_browser(), name=f"early-browser-{self.session_id}")

    async def _launch(self, engine: Engine, lease: SlotLease, task: str) -> None:
        record = await self._runtime.sessions.get(self.session_id)
        await engine.launch(lease, task)
        await self._runtime.manager.apply(
            self.session_id,
            Trigger.START,
            pending_task=None,
            live_url=self._runtime.live_url(self.session_id),
            browser_live=True,
        )
        await self._runtime.feed.append(
            self.session_id, FeedEntry(MessageType.PLANNING, f"Session started with model {record.llm_model}", {})
        )
        pressure = await asyncio.to_thread(host_pressure)
        if pressure is not None:
            await self._runtime.feed.append(
                self.session_id, FeedEntry.system("pressure", pressure.summary, level=pressure.level)
            )

    async def _turn(self, engine: Engine, task: str) -> TurnOutcome:
        """One dispatch, bounded by TASK_TIMEOUT and cut short if a child process of the slot dies."""
        limit = self._runtime.settings.TASK_TIMEOUT or None
        turn = asyncio.create_task(engine.run_turn(task), name=f"turn-{self.session_id}")
        died = asyncio.ensure_future(engine.wait_died())
        try:
            done, _ = await asyncio.wait({turn, died}, timeout=limit, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for child in (turn, died):
                if not child.done():
                    child.cancel()
            await asyncio.shield(asyncio.wait({turn, died}))
        if turn in done and not turn.cancelled():
            return turn.result()
        if died in done and not died.cancelled():
            return await self._slot_died_outcome(died.result())
        salvage = await engine.salvage()
        limit_text = f"{self._runtime.settings.TASK_TIMEOUT} s"
        await self._runtime.feed.append(
            self.session_id,
            FeedEntry(
                MessageType.COMPLETION,
                f"Timed out after {limit_text}. {salvage.kept}",
                {"output": _clip_output(salvage.output)},
            ),
        )
        return TurnOutcome(
            ending=TurnEnding.TIMEOUT,
            summary=f"Timed out after {limit_text}. {salvage.kept}",
            output=salvage.output,
            is_task_successful=salvage.is_task_successful,
            failure=Failure(FailureKind.SESSION_TIMEOUT),
        )

    async def _slot_died_outcome(self, exc: BaseException) -> TurnOutcome:
        message = str(exc) if isinstance(exc, OpenBrowseError) else f"The browser stack failed: {exc}"
        await self._runtime.feed.append(
            self.session_id,
            FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Fatal error: {message}"[:220], {"errorFull": message}),
        )
        return TurnOutcome(
            ending=TurnEnding.ERROR,
            summary=f"Fatal error: {message}",
            is_task_successful=False,
            failure=Failure(FailureKind.AGENT_FAILURE, message=message),
            release_browser=True,
        )

    async def _finish_turn(self, outcome: TurnOutcome) -> bool:
        """Record the turn's end; True if the worker should park for a follow-up."""
        record = await self._runtime.sessions.get(self.session_id)
        park = record.keep_alive and outcome.ending is TurnEnding.FINISHED and not outcome.release_browser
        trigger = {
            TurnEnding.FINISHED: Trigger.PARK if park else Trigger.FINISH,
            TurnEnding.BUDGET: Trigger.BUDGET_STOP,
            TurnEnding.TIMEOUT: Trigger.TIMEOUT,
            TurnEnding.ERROR: Trigger.FAIL,
        }[outcome.ending]
        failure = outcome.failure
        gone: dict[str, object] = {} if park else {"live_url": None, "browser_live": False}
        await self._runtime.manager.apply(
            self.session_id,
            trigger,
            **gone,
            output=outcome.output,
            is_task_successful=outcome.is_task_successful,
            last_step_summary=outcome.summary,
            failure_kind=failure.kind if failure else None,
            failure_status_code=failure.status_code if failure else None,
        )
        return park

    async def _park(self, lease: SlotLease) -> str | None:
        """Wait parked for a follow-up; None when the browser must close instead."""
        assert self._engine is not None
        self._wake = wake = asyncio.get_running_loop().create_future()
        await self._wait_parked(wake, lease, self._engine)
        self._wake = None
        woke = wake.result()
        if isinstance(woke, str):
            async with self._runtime.manager.lock(self.session_id):
                pass  # the follow-up that handed this task over has recorded it
            return woke
        self.phase = "closing"
        await self._record_release(woke)
        return None

    async def _wait_parked(self, wake: asyncio.Future[str | Release], lease: SlotLease, engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        self.parked_since = loop.time()
        self.phase = "parked"
        lease.park(self._evict)
        timeout = self._runtime.settings.KEEP_ALIVE_IDLE_TIMEOUT or None
        died = asyncio.ensure_future(engine.wait_died())
        try:
            waiting: set[asyncio.Future[Any]] = {wake, died}
            await asyncio.wait(waiting, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if died.done() and not died.cancelled() and died.exception() is None:
                self._end_wake(Release(f"Keep-alive browser closed: {died.result()}"))
            else:
                died.cancel()
                minutes = max(1, round((timeout or 0) / 60))
                self._end_wake(Release(f"Expired: no follow-up for {minutes} idle minute(s)"))
            lease.unpark()
            self.parked_since = None

    def _end_wake(self, release: Release) -> None:
        """Close the follow-up door with ``release`` unless a follow-up or an earlier release got there first."""
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(release)

    async def _evict(self) -> None:
        self.request_release(
            "Keep-alive browser released: display slot handed to a newly started session", final_status=True
        )

    async def _record_release(self, release: Release) -> None:
        await self._runtime.feed.append(self.session_id, FeedEntry.system("keepAlive", release.note))
        if not release.final_status:
            return
        manager = self._runtime.manager
        async with manager.lock(self.session_id):
            record = await self._runtime.sessions.get(self.session_id)
            if not record.is_queued and record.status.value == "idle":
                await manager.apply_locked(self.session_id, Trigger.RELEASE, live_url=None, browser_live=False)

    async def _close(self, engine: Engine) -> None:
        try:
            await engine.close()
        except Exception:
            logger.exception("Closing the browser of session %s failed", self.session_id)
        with contextlib.suppress(SessionNotFound):
            await self._runtime.sessions.update(self.session_id, live_url=None, browser_live=False)

    # -- recording ends that are not turn outcomes -------------------------------------------------------------
    async def _on_queued(self, ahead: int) -> None:
        await self._runtime.feed.append(
            self.session_id, FeedEntry.system("queued", f"Waiting for a free display slot ({ahead} ahead)", ahead=ahead)
        )

    async def _never_started(self, problem: str) -> None:
        await self._runtime.feed.append(
            self.session_id,
            FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Error: {problem}"[:200], {"errorFull": problem}),
        )
        await self._runtime.manager.apply(
            self.session_id,
            Trigger.FAIL,
            pending_task=None,
            is_task_successful=False,
            last_step_summary=problem,
            failure_kind=FailureKind.AGENT_FAILURE,
            failure_status_code=None,
        )

    async def _record_crash(self, exc: Exception) -> None:
        message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
        with contextlib.suppress(SessionNotFound):
            await self._runtime.feed.append(
                self.session_id,
                FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Fatal error: {message}"[:214], {"errorFull": message}),
            )
            record = await self._runtime.sessions.get(self.session_id)
            if record.status.value in {"created", "running"}:
                await self._runtime.manager.apply(
                    self.session_id,
                    Trigger.FAIL,
                    pending_task=None,
                    is_task_successful=False,
                    last_step_summary=f"Fatal error: {message}",
                    failure_kind=FailureKind.AGENT_FAILURE,
                    failure_status_code=None,
                )

    async def _record_stop(self, phase: Phase) -> None:
        reason = self._stop_reason
        if reason is None or reason is StopReason.DELETE:
            return
        try:
            if reason is StopReason.SHUTDOWN:
                await self._record_shutdown(phase)
            else:
                await self._record_user_stop(reason)
        except SessionNotFound:
            pass
        except Exception:
            logger.exception("Recording the stop of session %s failed", self.session_id)

    async def _record_user_stop(self, reason: StopReason) -> None:
        trigger = Trigger.STOP_TASK if reason is StopReason.STOP_TASK else Trigger.STOP_SESSION
        record = await self._runtime.sessions.get(self.session_id)
        if _turn_was_interrupted(record):
            await self._record_interrupted_turn(trigger, "Stopped by request.")
            return
        # parked (or between a recorded turn end and parking): no turn was cut short, its answer stands
        if record.keep_alive and record.status.value == "idle":
            await self._runtime.feed.append(
                self.session_id, FeedEntry.system("keepAlive", "Keep-alive browser released: stopped by request")
            )
        await self._record_resting(trigger)

    async def _record_shutdown(self, phase: Phase) -> None:
        if phase in {"waiting", "queued"}:
            return  # never started: re-queued at the next start-up
        if _turn_was_interrupted(await self._runtime.sessions.get(self.session_id)):
            await self._record_interrupted_turn(Trigger.STOP_SESSION, "Stopped: the server shut down.")
            return
        await self._record_resting(Trigger.GO_COLD)  # a parked session stays idle, cold (spec §6 transition 21)

    async def _record_resting(self, trigger: Trigger) -> None:
        """The browser is gone; move a resting session along ``trigger`` where the table allows it."""
        manager = self._runtime.manager
        async with manager.lock(self.session_id):
            record = await self._runtime.sessions.get(self.session_id)
            if can(record.status, trigger):
                await manager.apply_locked(self.session_id, trigger, live_url=None, browser_live=False)
            else:  # e.g. stop "session" of a session whose turn already ended stopped: idempotent
                await self._runtime.sessions.update(self.session_id, live_url=None, browser_live=False)

    async def _record_interrupted_turn(self, trigger: Trigger, headline: str) -> None:
        """A turn cut short by a stop: keep what can be salvaged (spec §13.8) and say so in the feed."""
        salvage = await self._engine.salvage() if self._engine is not None else NOTHING_KEPT
        summary = f"{headline} {salvage.kept}"
        await self._runtime.feed.append(
            self.session_id, FeedEntry(MessageType.COMPLETION, summary, {"output": _clip_output(salvage.output)})
        )
        await self._runtime.manager.apply(
            self.session_id,
            trigger,
            pending_task=None,
            output=salvage.output,
            is_task_successful=salvage.is_task_successful,
            last_step_summary=summary,
            failure_kind=None,
            failure_status_code=None,
            live_url=None,
            browser_live=False,
        )


def _turn_was_interrupted(record: SessionRecord) -> bool:
    """Whether the row still says a run is going on (a started, queued or handed-over turn)."""
    return record.status.value in {"created", "running"}


async def _discard(task: asyncio.Task[object] | None) -> None:
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


def _clip_output(output: object) -> str:
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text[:4000]
