"""The session state machine (spec §6): one table every status change goes through.

``transition(current, trigger)`` returns the new status or raises :class:`InvalidTransition`. Business rules
that depend on more than the status (keep-alive exemptions, busy checks) live in the manager; this table only
says which status changes exist at all.
"""

from __future__ import annotations

from enum import StrEnum

from openbrowse.domain.end_reasons import EndReason, end_reason_of_failure
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.sessions import SessionStatus
from openbrowse.errors import InvalidTransition

S = SessionStatus


class Trigger(StrEnum):
    DISPATCH = "dispatch"  # a task was submitted and waits for a slot (create with task, or follow-up)
    START = "start"  # slot acquired and Chromium ready
    WARM_FOLLOW_UP = "warm_follow_up"  # a parked worker took a follow-up
    FINISH = "finish"  # a turn ended without keep-alive
    PARK = "park"  # a keep-alive turn ended and the worker parked
    BUDGET_STOP = "budget_stop"  # maxCostUsd reached: stopped, or cold idle for keep-alive
    TIMEOUT = "timeout"  # TASK_TIMEOUT elapsed
    FAIL = "fail"  # unrecoverable error, never-started run, or launch failure
    STOP_TASK = "stop_task"
    STOP_SESSION = "stop_session"
    RELEASE = "release"  # a parked browser closed: idle timeout, eviction, shutdown
    EXPIRE = "expire"  # a created shell got no task within 15 minutes
    RESTART_INTERRUPT = "restart_interrupt"  # running when the server died
    RESTART_REQUEUE = "restart_requeue"  # queued, never started, when the server died
    GO_COLD = "go_cold"  # a parked browser closed but the session stays idle (restart, shutdown)


_RESTING = (S.IDLE, S.STOPPED, S.TIMED_OUT, S.ERROR)

TRANSITIONS: dict[Trigger, dict[SessionStatus, SessionStatus]] = {
    Trigger.DISPATCH: {S.CREATED: S.CREATED, **dict.fromkeys(_RESTING, S.CREATED)},
    Trigger.START: {S.CREATED: S.RUNNING},
    Trigger.WARM_FOLLOW_UP: {S.IDLE: S.RUNNING},
    Trigger.FINISH: {S.RUNNING: S.STOPPED},
    Trigger.PARK: {S.RUNNING: S.IDLE},
    Trigger.TIMEOUT: {S.RUNNING: S.TIMED_OUT},
    Trigger.FAIL: {S.RUNNING: S.ERROR, S.CREATED: S.ERROR},
    Trigger.STOP_TASK: {S.CREATED: S.IDLE, S.RUNNING: S.IDLE, **dict.fromkeys(_RESTING, S.IDLE)},
    Trigger.STOP_SESSION: {S.CREATED: S.STOPPED, S.RUNNING: S.STOPPED, S.IDLE: S.STOPPED},
    Trigger.RELEASE: {S.IDLE: S.STOPPED},
    Trigger.EXPIRE: {S.CREATED: S.EXPIRED},
    Trigger.RESTART_INTERRUPT: {S.RUNNING: S.ERROR},
    Trigger.RESTART_REQUEUE: {S.CREATED: S.CREATED},
    Trigger.GO_COLD: {S.IDLE: S.IDLE},
}


def budget_stop_status(keep_alive: bool) -> SessionStatus:
    return S.IDLE if keep_alive else S.STOPPED


def transition(current: SessionStatus, trigger: Trigger, *, keep_alive: bool = False) -> SessionStatus:
    """The status ``trigger`` moves ``current`` to; raises InvalidTransition when the table has no such edge."""
    if trigger is Trigger.BUDGET_STOP:
        if current is S.RUNNING:
            return budget_stop_status(keep_alive)
        raise InvalidTransition(f"Session is {current}, so a budget stop cannot apply")
    target = TRANSITIONS[trigger].get(current)
    if target is None:
        raise InvalidTransition(f"Session is {current}, so '{trigger}' is not allowed")
    return target


def can(current: SessionStatus, trigger: Trigger) -> bool:
    if trigger is Trigger.BUDGET_STOP:
        return current is S.RUNNING
    return current in TRANSITIONS[trigger]


_END_REASONS = {
    Trigger.TIMEOUT: EndReason.MAX_DURATION,
    Trigger.RELEASE: EndReason.IDLE_TIMEOUT,
    Trigger.EXPIRE: EndReason.IDLE_TIMEOUT,
    Trigger.RESTART_INTERRUPT: EndReason.RUNNER_LOST,
}


def end_reason_of(trigger: Trigger, failure_kind: FailureKind | None) -> EndReason:
    """The ``endReason`` of a move into a terminal status, when the caller named none (spec §21.1)."""
    if trigger is Trigger.FAIL:
        return end_reason_of_failure(failure_kind)
    return _END_REASONS.get(trigger, EndReason.CLOSED)
