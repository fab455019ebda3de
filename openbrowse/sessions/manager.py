"""SessionManager: the facade the API calls. Creates sessions, routes follow-ups, stops and deletes runs. It owns
every run task (one :class:`SessionWorker` per session with a run queued, running or parked) and the expiry
sweeper. Status changes go through :meth:`SessionManager.apply`: serialised per session, checked against the
transition table."""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, nullcontext
from types import TracebackType
from typing import Any

from openbrowse.config import Settings
from openbrowse.domain.clock import Clock, to_wire, utc_now
from openbrowse.domain.feed import FeedEntry, Message
from openbrowse.domain.ids import SessionId, new_session_id
from openbrowse.domain.secrets import scope_secrets
from openbrowse.domain.sessions import TERMINAL_STATUSES, SessionRecord, SessionStatus, StopStrategy, title_from_task
from openbrowse.errors import BrowserUnavailable, InvalidRequest, NotPausable, NotPaused, SessionNotFound, SessionPaused
from openbrowse.sessions.admission import QueueAdmission, queue_eta
from openbrowse.sessions.follow_ups import check_accepts_follow_up, follow_up_changes
from openbrowse.sessions.held_secrets import HeldSecrets
from openbrowse.sessions.locks import KeyedLocks
from openbrowse.sessions.max_duration import end_overdue_sessions, refuse_if_overdue
from openbrowse.sessions.proxies import ProxyChooser, has_credentials, wipe_credentials
from openbrowse.sessions.reconcile import adopt_from_dead_node, reconcile_after_restart
from openbrowse.sessions.requests import (
    SessionCreate,
    resolve_session_effort,
    resolve_session_model,
    scaled_budget,
    task_text,
)
from openbrowse.sessions.run_endings import StopReason
from openbrowse.sessions.runtime import LiveSlot, WorkerRuntime
from openbrowse.sessions.states import Trigger, end_reason_of, transition
from openbrowse.sessions.sweeper import EXPIRED_SUMMARY, Sweeper, is_stale_shell
from openbrowse.sessions.worker import SessionWorker
from openbrowse.sessions.workspace_choice import new_session_fields
from openbrowse.shielding import run_shielded
from openbrowse.store.feed import FeedRepo
from openbrowse.store.profiles import ProfileRepo
from openbrowse.store.sessions import NEXT_IN_QUEUE, SessionRepo
from openbrowse.workspaces.service import WorkspaceService

logger = logging.getLogger(__name__)


class SessionManager:
    def __init__(
        self,
        settings: Settings,
        sessions: SessionRepo,
        feed: FeedRepo,
        profiles: ProfileRepo,
        runtime: WorkerRuntime,
        clock: Clock = utc_now,
        admission: QueueAdmission | None = None,
        workspaces: WorkspaceService | None = None,
    ) -> None:
        self._settings, self._workspaces = settings, workspaces
        self.sessions = sessions
        self.feed = feed
        self._profiles = profiles
        self._runtime = runtime
        self._clock = clock
        self._workers: dict[SessionId, SessionWorker] = {}
        self._locks = KeyedLocks()
        self._sweeper = Sweeper(self._sweep)
        self._secrets = HeldSecrets()
        self._admission = admission
        self.draining = False
        """Set by a maintenance drain (spec §21.6): no new run starts, and a finished keep-alive turn never parks."""
        if admission is not None:
            admission.add_source(self.waiting_for_slot)

    # -- lifecycle ---------------------------------------------------------------------------------------------
    async def __aenter__(self) -> SessionManager:
        await self._reconcile_after_restart()
        await self._sweeper.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._sweeper.aclose()
        workers = list(self._workers.values())
        await asyncio.gather(*(worker.stop(StopReason.SHUTDOWN) for worker in workers), return_exceptions=True)

    def _refuse_while_draining(self) -> None:  # spec §21.6
        if self.draining:
            raise BrowserUnavailable("The server restarts for maintenance; start the session again once it is back")

    async def _reconcile_after_restart(self) -> None:
        await reconcile_after_restart(self, self._spawn, self._settings.sessions_dir)
        await self._sweep()

    async def adopt(self, node_id: str, session_ids: list[str]) -> None:
        """Take over the sessions of a dead node that this node adopted (spec §26.5)."""
        await adopt_from_dead_node(self, self._spawn, self._settings.sessions_dir, node_id, session_ids)

    def hold_secrets(self, record: SessionRecord) -> None:
        """Keep ``record``'s secrets out of everything this process writes (spec §25.3)."""
        self._secrets.hold(record.id, record.sensitive_data)

    async def _sweep(self) -> None:
        await self.expire_stale_shells()
        await end_overdue_sessions(self.sessions, self.feed, self, lambda sid: sid in self._workers, self._clock())

    async def expire_stale_shells(self) -> list[SessionRecord]:
        """Expire every ``created`` shell older than 15 minutes; returns the expired records."""
        expired = []
        for candidate in await self.sessions.with_status(SessionStatus.CREATED):
            async with self.lock(candidate.id):
                record = await self.sessions.get(candidate.id)
                if is_stale_shell(record, self._clock()):
                    expired.append(
                        await self.apply_locked(record.id, Trigger.EXPIRE, last_step_summary=EXPIRED_SUMMARY)
                    )
        return expired

    # -- status changes ----------------------------------------------------------------------------------------
    def lock(self, session_id: SessionId) -> AbstractAsyncContextManager[None]:
        """Serialises status changes of one session (``async with manager.lock(id):``)."""
        return self._locks.hold(session_id)

    def held_locks(self) -> int:
        return len(self._locks)

    async def apply(self, session_id: SessionId, trigger: Trigger, **changes: Any) -> SessionRecord:
        """Move a session along the transition table and write ``changes`` with it, atomically per session."""
        async with self.lock(session_id):
            return await self.apply_locked(session_id, trigger, **changes)

    async def apply_locked(self, session_id: SessionId, trigger: Trigger, **changes: Any) -> SessionRecord:
        record = await self.sessions.get(session_id)
        status = transition(record.status, trigger, keep_alive=record.keep_alive)
        holds_secrets = record.sensitive_data is not None or changes.get("sensitive_data") is not None
        holds_secrets = holds_secrets or has_credentials(record.proxy)  # spec §25.3, §28.1: wiped when it ends
        if holds_secrets and self._ends_for_good(status, changes.get("keep_alive", record.keep_alive)):
            changes.update(sensitive_data=None, proxy=wipe_credentials(record.proxy))
            self._secrets.retire(session_id, run_alive=session_id in self._workers)
        if status in TERMINAL_STATUSES:
            changes.setdefault("end_reason", end_reason_of(trigger, changes.get("failure_kind", record.failure_kind)))
        else:
            changes["end_reason"] = None
        return await self.sessions.update(session_id, status=status, **changes)

    @staticmethod
    def _ends_for_good(status: SessionStatus, keep_alive: bool) -> bool:
        """A keep-alive session takes follow-ups in every terminal status but ``expired``: it keeps its secrets."""
        return status is SessionStatus.EXPIRED or (status in TERMINAL_STATUSES and not keep_alive)

    # -- queries -----------------------------------------------------------------------------------------------
    async def rename(self, session_id: SessionId, title: str | None) -> SessionRecord:
        """Set the session's title (spec §21.3); None or blanks clear it."""
        words = " ".join((title or "").split()) or None
        async with self.lock(session_id):
            await self.sessions.get(session_id)  # SessionNotFound for an unknown id
            return await self.sessions.update(session_id, title=words)

    # -- a person takes over (spec §21.5) ------------------------------------------------------------------------
    async def pause(self, session_id: SessionId, reason: str | None) -> SessionRecord:
        """Pause a running or parked session for a person; idempotent. Its browser must be live."""
        async with self.lock(session_id):
            await self.sessions.get(session_id)  # SessionNotFound for an unknown id
            worker = self._workers.get(session_id)
            if worker is None:
                raise NotPausable("Only a running session or an idle keep-alive session with a live browser can pause.")
            await worker.pause("user", reason)
        return await self.get(session_id)

    async def resume(self, session_id: SessionId, note: str | None) -> SessionRecord:
        """Hand a paused session back to its agent."""
        async with self.lock(session_id):
            await self.sessions.get(session_id)
            worker = self._workers.get(session_id)
            if worker is None or not worker.pauses.active:
                raise NotPaused("The session is not paused.")
            await worker.resume(note)
        return await self.get(session_id)

    def queue_of(self, record: SessionRecord) -> dict[str, Any] | None:
        """Where a queued session stands (spec §21.2): ``position`` (1 = next), ``etaSeconds`` estimated from recent
        turns (None before any finished), ``queuedAt``; None when it is not queued."""
        if not record.is_queued:
            return None
        worker = self._workers.get(record.id)
        position = self._runtime.queue_position(record.id) if worker is not None else None
        if position is None:  # not at the pool yet (its previous run is closing): behind everyone waiting there
            position = self.waiting_for_slot() or 1
        eta = queue_eta(position, self._runtime.turn_seconds, self._settings.MAX_CONCURRENT_SESSIONS)
        queued_at = worker.queued_at if worker is not None and worker.queued_at is not None else record.updated_at
        return {"position": position, "etaSeconds": eta, "queuedAt": to_wire(queued_at)}

    def takeover_token(self, session_id: str) -> str | None:
        """The takeover link's token while the session is paused, else None."""
        worker = self._workers.get(SessionId(session_id))
        return worker.pauses.takeover_token if worker is not None else None

    def human_input(self, session_id: str) -> None:
        """A person acted on a paused session (control call, takeover input): its pause timeout starts again."""
        worker = self._workers.get(SessionId(session_id))
        if worker is not None:
            worker.pauses.touch()

    async def get(self, session_id: str) -> SessionRecord:
        """The row for display (shared with other readers: never mutate it)."""
        return await self.sessions.view(session_id)

    async def page(self, page: int, page_size: int) -> tuple[list[SessionRecord], int]:
        return await self.sessions.page(page, page_size)

    async def messages(
        self, session_id: str, *, after: str | None, before: str | None, limit: int
    ) -> tuple[list[Message], bool]:
        await self.sessions.view(session_id)
        return await self.feed.page(session_id, after=after, before=before, limit=limit)

    def counts(self) -> dict[str, int]:
        phases = [worker.phase for worker in self._workers.values()]
        return {
            "running": sum(1 for p in phases if p in {"starting", "running"}),
            "queued": sum(1 for p in phases if p == "queued"),
            "parked": sum(1 for p in phases if p == "parked"),
        }

    def waiting_for_slot(self) -> int:
        """Runs dispatched that hold no slot yet (queued, or not yet at the pool): ``MAX_QUEUED`` counts them."""
        return sum(1 for worker in self._workers.values() if worker.phase in {"waiting", "queued"})

    def _check_queue(self) -> None:
        if self._admission is not None:
            self._admission.admit()

    def _queue_place(self, *, needed: bool) -> AbstractContextManager[None]:
        """Hold a place in the slot queue from the check until the run's worker exists (or the create fails)."""
        if not needed or self._admission is None:
            return nullcontext()
        return self._admission.place()

    # -- create ------------------------------------------------------------------------------------------------
    async def create(self, request: SessionCreate) -> SessionRecord:
        if request.session_id is not None:
            return await self.follow_up(SessionId(request.session_id), request)
        resolved = resolve_session_model(self._settings, request.model)
        effort = resolve_session_effort(resolved.spec, request.effort_request())
        if request.profile_id is not None:
            await self._require_profile(request.profile_id)
        workspace_fields = await new_session_fields(request, self._workspaces)  # spec §27
        task = task_text(request.task)
        if task:
            self._refuse_while_draining()
        secrets = scope_secrets(request.sensitive_data, task) if request.sensitive_data else None
        budget = scaled_budget(self._settings, request.max_cost_usd) if request.max_cost_usd is not None else None
        now = self._clock()
        record = SessionRecord(
            id=new_session_id(),
            status=SessionStatus.CREATED,
            model=resolved.echo,
            llm_model=resolved.llm_id,
            reasoning_effort=effort,
            created_at=now,
            updated_at=now,
            title=title_from_task(task),
            task=task,
            pending_task=task,
            keep_alive=bool(request.keep_alive),
            output_schema=request.output_schema,
            sensitive_data=secrets or None,
            system_prompt_extension=request.system_prompt_extension,
            profile_id=request.profile_id,
            max_cost_usd=budget,
            allowance_usd=budget,
            max_duration_ms=request.max_duration_ms,
            webhook_url=request.webhook_url,
            proxy=ProxyChooser(self._settings).for_request(request),
            enable_recording=self._settings.RECORDING_DEFAULT
            if request.enable_recording is None
            else request.enable_recording,
            **workspace_fields,
        )
        with self._queue_place(needed=bool(task)):
            self._secrets.hold(record.id, record.sensitive_data)
            record = await self.sessions.insert(record, enqueue=bool(task))
            if task:
                await self.feed.append(record.id, FeedEntry.user_message(task))
                self._spawn(record.id)
        return record

    async def _require_profile(self, profile_id: str) -> None:
        if not await self._profiles.exists(profile_id):
            raise InvalidRequest("Profile not found")

    # -- follow-up ---------------------------------------------------------------------------------------------
    async def follow_up(self, session_id: SessionId, request: SessionCreate) -> SessionRecord:
        async with self.lock(session_id):
            record = await self.sessions.find(session_id)
            if record is None:
                raise SessionNotFound()
            worker = self._workers.get(session_id)
            if record.pause is not None or (worker is not None and worker.pauses.active):
                raise SessionPaused()
            check_accepts_follow_up(record)
            self._refuse_while_draining()
            refuse_if_overdue(record, self._clock(), sent_limit=request.sent("max_duration_ms"))
            task = task_text(request.task)
            if task is None:
                raise InvalidRequest("Task is required when targeting an existing session")
            changes, changed = await follow_up_changes(self._settings, record, request, task, self._require_profile)
            self._secrets.hold(session_id, changes.get("sensitive_data"))
            changes.update(task=task, title=record.title or title_from_task(task))
            worker = self._workers.get(session_id)
            if worker is None or changed or not worker.awaiting_follow_up:
                self._check_queue()  # a cold run queues for a slot
            if worker is not None and changed:
                worker.request_release(f"Browser released to apply new {', '.join(changed)}")
            elif worker is not None and worker.take_follow_up(task):
                # the worker runs it once this lock is released; recording the hand-over must not be abandoned
                return await run_shielded(self._record_warm_follow_up(session_id, task, changes))
            # any worker left is closing its browser: the cold run starts after it (its predecessor)
            changes.update(pending_task=task, queue_seq=NEXT_IN_QUEUE)
            record = await self.apply_locked(session_id, Trigger.DISPATCH, **changes)
            await self.feed.append(session_id, FeedEntry.user_message(task))
        self._spawn(session_id)
        return record

    async def _record_warm_follow_up(self, session_id: SessionId, task: str, changes: dict[str, Any]) -> SessionRecord:
        record = await self.apply_locked(session_id, Trigger.WARM_FOLLOW_UP, pending_task=None, **changes)
        await self.feed.append(session_id, FeedEntry.user_message(task))
        return record

    # -- stop / delete -----------------------------------------------------------------------------------------
    async def stop(self, session_id: SessionId, strategy: StopStrategy) -> SessionRecord:
        record = await self.sessions.get(session_id)
        worker = self._workers.get(session_id)
        reason = StopReason.STOP_TASK if strategy is StopStrategy.TASK else StopReason.STOP_SESSION
        if worker is not None and await worker.stop(reason):
            return await self.sessions.get(session_id)
        async with self.lock(session_id):
            record = await self.sessions.get(session_id)
            if strategy is StopStrategy.TASK and record.status not in {SessionStatus.IDLE, SessionStatus.EXPIRED}:
                record = await self.apply_locked(session_id, Trigger.STOP_TASK, pending_task=None)
            elif strategy is StopStrategy.SESSION and record.status in {SessionStatus.CREATED, SessionStatus.IDLE}:
                record = await self.apply_locked(session_id, Trigger.STOP_SESSION, pending_task=None)
        return record

    async def delete(self, session_id: SessionId) -> None:
        await self.sessions.get(session_id)
        worker = self._workers.get(session_id)
        if worker is not None:
            await worker.stop(StopReason.DELETE)
        await self.sessions.delete(session_id)
        self._secrets.forget(session_id)
        folder = self._settings.sessions_dir / session_id
        await asyncio.to_thread(shutil.rmtree, folder, True)

    # -- workers -----------------------------------------------------------------------------------------------
    def _spawn(self, session_id: SessionId) -> None:
        previous = self._workers.get(session_id)
        worker = SessionWorker(session_id, self._runtime, self, predecessor=previous.task if previous else None)
        self._workers[session_id] = worker
        worker.start(on_done=self._forget)

    def _forget(self, worker: SessionWorker) -> None:
        if self._workers.get(worker.session_id) is worker:
            del self._workers[worker.session_id]
            self._secrets.run_ended(worker.session_id)

    def live_slot(self, session_id: str) -> LiveSlot | None:
        """The display slot showing this session's browser, or None when it has no live browser."""
        worker = self._workers.get(SessionId(session_id))
        return worker.live_slot() if worker is not None else None

    def worker(self, session_id: SessionId) -> SessionWorker | None:
        return self._workers.get(session_id)

    def workers(self) -> Sequence[SessionWorker]:
        return list(self._workers.values())
