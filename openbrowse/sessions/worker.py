"""SessionWorker: one session's run from queue to teardown (spec §6, §7, §8).

A worker waits FIFO for a display slot, launches the browser, drives turns through its engine, parks between
keep-alive turns, and tears everything down. It is an owned asyncio task of the SessionManager. Stops and
deletes cancel the task; the worker then records the outcome named by its ``stop_reason`` (shielded).

Whenever the browser closes, the run's profile is merged back before the session's status says the run ended and
before the slot is released (spec §9.3): a turn that does not park saves it, then records its outcome; a release
of a parked browser likewise; a stop or a crash closes the engine (which saves it) before recording.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from openbrowse.domain.clock import utc_now
from openbrowse.domain.feed import FeedEntry, MessageType
from openbrowse.domain.ids import SessionId
from openbrowse.domain.runs import NOTHING_KEPT, Salvage, TurnEnding, TurnOutcome
from openbrowse.errors import NotPausable, NotPaused, SessionNotFound
from openbrowse.logs import session_id_var
from openbrowse.memory import trim_malloc
from openbrowse.sessions.max_duration import DeadlineTimer
from openbrowse.sessions.pausing import PausedBy, SessionPause, idle_until
from openbrowse.sessions.pressure import host_pressure
from openbrowse.sessions.proxies import engine_route, put_route_on
from openbrowse.sessions.recordings import session_recording
from openbrowse.sessions.run_endings import EndingRecorder, Phase, Release, StopReason
from openbrowse.sessions.sandbox_feed import SandboxFeed
from openbrowse.sessions.states import Trigger
from openbrowse.sessions.turns import bounded_turn, death_end_reason
from openbrowse.shielding import discard_task, run_shielded
from openbrowse.slots.lease import SlotLease as PoolLease
from openbrowse.slots.slot import Slot as PoolSlot

if TYPE_CHECKING:
    from openbrowse.domain.sessions import SessionRecord
    from openbrowse.sessions.runtime import Engine, LiveSlot, SlotEndpoints, SlotLease, WorkerRuntime
    from openbrowse.sessions.status_port import StatusPort

__all__ = ["SessionWorker"]

logger = logging.getLogger(__name__)

MAINTENANCE_RELEASE = "Keep-alive browser released: the server restarts for maintenance"
SAFE_POINT_LIMIT = 540.0
"""How long a maintenance stop waits for the step in progress: past one step's own cap (520 s, spec §10.8)."""


class SessionWorker:
    def __init__(
        self,
        session_id: SessionId,
        runtime: WorkerRuntime,
        status: StatusPort,
        predecessor: asyncio.Task[None] | None = None,
    ) -> None:
        self.session_id = session_id
        self._runtime = runtime
        self._status = status
        self._endings = EndingRecorder(session_id, runtime, status)
        self._predecessor = predecessor
        self.phase: Phase = "waiting"
        self.task: asyncio.Task[None] | None = None
        self.parked_since: float | None = None
        self.queued_at: datetime | None = None
        self._stop_reason: StopReason | None = None
        self._engine: Engine | None = None
        self._lease: SlotLease | None = None
        self._browser: asyncio.Task[SlotEndpoints] | None = None
        self._sandbox_feed: SandboxFeed | None = None
        # open from a keep-alive turn's end until the worker stops waiting; resolved exactly once, by a follow-up
        # (the task to run) or by whatever ends the wait (a Release), so a hand-over cannot be half done
        self._wake: asyncio.Future[str | Release] | None = None
        self.pauses = SessionPause(session_id, runtime, self._pause_expired)
        self._deadline = DeadlineTimer(self._max_duration_reached)
        self._recording = session_recording(runtime.settings, session_id, runtime.feed)  # one file per turn

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

    # -- maintenance (spec §21.6) ------------------------------------------------------------------------------
    def release_for_maintenance(self) -> bool:
        """A parked session closes its browser and stays idle (cold, resumable); False when it is not parked."""
        if self.phase != "parked" or not self.awaiting_follow_up:
            return False
        self.request_release(MAINTENANCE_RELEASE, final_status=False)
        return True

    async def end_for_maintenance(self) -> None:
        """End the run at its next safe point (a step in progress finishes), then record ``maintenance``."""
        engine, task = self._engine, self.task
        if task is None or task.done():
            return
        if self.phase == "running" and engine is not None:
            try:
                await engine.pause()
                landed = asyncio.ensure_future(engine.wait_paused())
                try:
                    await asyncio.wait({landed, task}, timeout=SAFE_POINT_LIMIT, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    landed.cancel()
            except Exception:
                logger.exception("Session %s did not reach a safe point; it ends now", self.session_id)
        await self.stop(StopReason.MAINTENANCE)

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

    def control_slot(self) -> PoolSlot | None:
        """The slot whose browser the control API may drive (spec §20), while the run's browser is up."""
        if self.phase not in {"running", "parked"} or not isinstance(self._lease, PoolLease):
            return None
        return self._lease.slot

    @property
    def may_be_driven(self) -> bool:
        """No agent step runs, so a control client may act: parked for a follow-up, or paused (spec §20.3)."""
        return (self.phase == "parked" and self.awaiting_follow_up) or self.pauses.landed

    # -- a person takes over (spec §21.5) ------------------------------------------------------------------------
    async def pause(self, by: PausedBy, reason: str | None) -> None:
        """Pause a running turn (lands at its next safe point) or a parked session (at once); idempotent."""
        if self.pauses.active:
            return
        if self.phase == "running" and self._engine is not None:
            await self.pauses.pause(self._engine, by=by, reason=reason)
        elif self.phase == "parked" and self.awaiting_follow_up:
            await self.pauses.pause(None, by=by, reason=reason)
        else:
            raise NotPausable("Only a running session or an idle keep-alive session with a live browser can pause.")

    async def resume(self, note: str | None, *, expired: bool = False) -> None:
        """Hand back to the agent: a paused turn goes on with one note; a parked session waits for follow-ups."""
        engine = self._engine if self.phase == "running" else None
        await self.pauses.resume(engine, note, expired=expired)

    async def _pause_expired(self) -> None:
        with contextlib.suppress(NotPaused):
            await self.resume(None, expired=True)

    def _max_duration_reached(self) -> None:
        """The session's maxDurationMs is up: end the run as a stop would, unless it is already ending."""
        task = self.task
        if task is None or task.done() or self.phase in {"closing", "done"} or self._stop_reason is not None:
            return
        logger.info("Session %s reached its maximum duration", self.session_id)
        self._stop_reason = StopReason.MAX_DURATION
        task.cancel()

    async def _agent_asked(self, reason: str) -> None:
        await self.pause("agent", reason)

    # -- the run -----------------------------------------------------------------------------------------------
    async def _main(self) -> None:
        session_id_var.set(self.session_id)
        try:
            self._deadline.arm((await self._runtime.sessions.get(self.session_id)).ends_at)
            if self._predecessor is not None:
                await asyncio.wait({self._predecessor})
            await self._run()
        except asyncio.CancelledError:
            phase = self.phase
            self.phase = "closing"
            self._end_wake(Release("Stopped"))
            try:
                await run_shielded(self._endings.stopped(self._stop_reason, phase, self._salvage))
            finally:
                if self._predecessor is not None:  # never leave the previous run's teardown unowned
                    await run_shielded(asyncio.wait({self._predecessor}))
            raise
        except SessionNotFound:
            logger.info("Session %s was deleted while its run was ending", self.session_id)
        except Exception as exc:
            logger.exception("Run of session %s failed", self.session_id)
            await run_shielded(self._endings.crashed(exc))
        finally:
            self._deadline.cancel()
            self._end_wake(Release("The run ended"))
            self.phase = "done"

    async def _run(self) -> None:
        runtime = self._runtime
        record = await runtime.sessions.get(self.session_id)
        task = record.pending_task
        problem = runtime.policy.never_started_problem(record)
        if task is None or problem is not None:
            await self._endings.never_started(problem or "The session has no task to run")
            return
        self.phase = "queued"
        self.queued_at = utc_now()
        async with runtime.pool.acquire(self.session_id, on_wait=self._endings.queued) as lease:
            self.phase = "starting"
            self._lease = lease
            # the worker starts the slot's browser and hands it on; the engine is built meanwhile (the first run after
            # a start waits for browser-use's import) and awaits it while its goal pre-flight runs
            self._browser = browser = asyncio.create_task(lease.start_browser(), name=f"browser-{self.session_id}")
            try:
                self._engine = engine = await runtime.make_engine(record)
            except BaseException:
                await run_shielded(discard_task(browser))
                raise
            engine.on_human_needed = self._agent_asked
            put_route_on(lease, engine_route(engine))  # spec §28.1: before the first page, never direct
            try:
                turn = await self._launch(engine, lease, browser, task, record)
                while True:
                    self.phase = "running"
                    began, paused_before = asyncio.get_running_loop().time(), self.pauses.paused_seconds()
                    if turn.enable_recording and isinstance(lease, PoolLease):
                        await self._recording.begin(lease.slot)
                    outcome = await bounded_turn(runtime, self.session_id, engine, task, paused=self.pauses)
                    await self._recording.finish()  # final (and listed) before the turn's end is recorded
                    paused_during = self.pauses.paused_seconds() - paused_before
                    runtime.turn_seconds.append(asyncio.get_running_loop().time() - began - paused_during)
                    if not await self._finish_turn(engine, outcome, keep_alive=turn.keep_alive):
                        break
                    next_task = await self._park(lease)
                    if next_task is None:
                        break
                    task = await self._runtime.control.hand_back(self.session_id, next_task)
                    # one read per turn: only a follow-up changes these fields, and none lands while a turn runs
                    turn = await runtime.sessions.get(self.session_id)
            finally:
                self.phase = "closing"
                self._end_wake(Release("Closing"))
                # one shielded teardown: a cancellation re-raised after one part must not skip the next
                await run_shielded(self._teardown(engine))

    async def _launch(
        self, engine: Engine, lease: SlotLease, browser: asyncio.Task[SlotEndpoints], task: str, record: SessionRecord
    ) -> SessionRecord:
        """Start the first turn's browser; returns the row as the start left it (what the first turn reads)."""
        await engine.launch(browser, task)
        if self._sandbox_feed is None and isinstance(lease, PoolLease):
            self._sandbox_feed = SandboxFeed(lease.slot.confinement, self.session_id, self._runtime.feed)
        started = await self._status.apply(
            self.session_id,
            Trigger.START,
            pending_task=None,
            live_url=self._runtime.policy.live_url(self.session_id),
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
        return started

    async def _finish_turn(self, engine: Engine, outcome: TurnOutcome, *, keep_alive: bool) -> bool:
        """Record the turn's end; True if the worker should park for a follow-up (its engine saved the profile).

        A turn that does not park closes the browser: its profile is merged back before the outcome is recorded.
        From then on the run is closing, so a stop waits for this outcome rather than replacing it.
        """
        park = keep_alive and outcome.ending is TurnEnding.FINISHED and not outcome.release_browser
        if not park:
            self.phase = "closing"
            await engine.save_profile()
        await self._endings.turn_ended(outcome, parked=park)
        return park

    async def _park(self, lease: SlotLease) -> str | None:
        """Wait parked for a follow-up; None when the browser must close instead (its profile saved first)."""
        engine = self._engine
        assert engine is not None
        self._wake = wake = asyncio.get_running_loop().create_future()
        if self._status.draining:
            self._end_wake(Release(MAINTENANCE_RELEASE, final_status=False))
        await self._wait_parked(wake, lease, engine)
        self._wake = None
        woke = wake.result()
        if isinstance(woke, str):
            async with self._status.lock(self.session_id):
                pass  # the follow-up that handed this task over has recorded it
            return woke
        self.phase = "closing"
        await engine.save_profile()
        await self._endings.released(woke)
        return None

    async def _wait_parked(self, wake: asyncio.Future[str | Release], lease: SlotLease, engine: Engine) -> None:
        loop = asyncio.get_running_loop()
        self.parked_since = loop.time()
        self.phase = "parked"
        lease.park(self._evict)
        timeout = self._runtime.settings.KEEP_ALIVE_IDLE_TIMEOUT or None
        died = asyncio.ensure_future(engine.wait_died())
        try:
            await idle_until(self.pauses, wake, died, timeout)
        finally:
            if died.done() and not died.cancelled() and died.exception() is None:
                self._end_wake(
                    Release(f"Keep-alive browser closed: {died.result()}", end_reason=death_end_reason(died.result()))
                )
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

    async def _teardown(self, engine: Engine) -> None:
        """Everything the run holds, each part even when one before it failed: the pause, the recording, the browser,
        the feed."""
        await discard_task(self._browser)  # still starting when the launch failed before awaiting it
        try:
            await self._recording.finish()
        except Exception:
            logger.exception("Saving the recording of session %s failed", self.session_id)
        try:
            await self.pauses.aclose()
        except Exception:
            logger.exception("Ending the pause of session %s failed", self.session_id)
        self._runtime.takeovers.forget(self.session_id)
        await self._close(engine)
        if self._sandbox_feed is not None:
            try:
                await self._sandbox_feed.detach()
            finally:
                self._sandbox_feed = None

    async def _close(self, engine: Engine) -> None:
        await self._runtime.control.browser_closing(self.session_id)
        try:
            await engine.close()
        except Exception:
            logger.exception("Closing the browser of session %s failed", self.session_id)
        with contextlib.suppress(SessionNotFound):
            await self._runtime.sessions.update(self.session_id, live_url=None, browser_live=False)
        await asyncio.to_thread(trim_malloc)  # the run's memory goes back to the kernel

    async def _salvage(self) -> Salvage:
        return await self._engine.salvage() if self._engine is not None else NOTHING_KEPT
