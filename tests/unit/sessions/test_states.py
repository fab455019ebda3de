"""The transition table (spec §6): every edge the spec names exists, and nothing else does."""

from __future__ import annotations

import pytest

from openbrowse.domain.sessions import SessionStatus as S
from openbrowse.errors import InvalidTransition
from openbrowse.sessions.states import TRANSITIONS, Trigger, can, transition

ALL = list(S)

SPEC_EDGES = [
    (S.CREATED, Trigger.DISPATCH, S.CREATED),  # 3: shell gets a task
    (S.CREATED, Trigger.EXPIRE, S.EXPIRED),  # 4
    (S.CREATED, Trigger.START, S.RUNNING),  # 5
    (S.RUNNING, Trigger.FINISH, S.STOPPED),  # 6
    (S.RUNNING, Trigger.PARK, S.IDLE),  # 7
    (S.RUNNING, Trigger.TIMEOUT, S.TIMED_OUT),  # 9
    (S.RUNNING, Trigger.FAIL, S.ERROR),  # 10
    (S.RUNNING, Trigger.STOP_TASK, S.IDLE),  # 11
    (S.CREATED, Trigger.STOP_TASK, S.IDLE),  # 11 (queued)
    (S.IDLE, Trigger.STOP_TASK, S.IDLE),  # 11 (parked)
    (S.RUNNING, Trigger.STOP_SESSION, S.STOPPED),  # 12
    (S.CREATED, Trigger.STOP_SESSION, S.STOPPED),  # 12 (queued)
    (S.IDLE, Trigger.STOP_SESSION, S.STOPPED),  # 12 (parked)
    (S.STOPPED, Trigger.STOP_TASK, S.IDLE),  # 13
    (S.TIMED_OUT, Trigger.STOP_TASK, S.IDLE),  # 13
    (S.ERROR, Trigger.STOP_TASK, S.IDLE),  # 13
    (S.IDLE, Trigger.WARM_FOLLOW_UP, S.RUNNING),  # 14
    (S.IDLE, Trigger.RELEASE, S.STOPPED),  # 15, 16
    (S.IDLE, Trigger.DISPATCH, S.CREATED),  # 17, 18, 19
    (S.STOPPED, Trigger.DISPATCH, S.CREATED),  # 17 (keep-alive)
    (S.TIMED_OUT, Trigger.DISPATCH, S.CREATED),  # 17
    (S.ERROR, Trigger.DISPATCH, S.CREATED),  # 17
    (S.RUNNING, Trigger.RESTART_INTERRUPT, S.ERROR),  # 20
    (S.CREATED, Trigger.RESTART_REQUEUE, S.CREATED),  # 20b
    (S.IDLE, Trigger.GO_COLD, S.IDLE),  # 21
    (S.CREATED, Trigger.FAIL, S.ERROR),  # never-started runs
]


@pytest.mark.parametrize(("current", "trigger", "target"), SPEC_EDGES)
def test_spec_edges_exist(current: S, trigger: Trigger, target: S) -> None:
    assert transition(current, trigger) is target


def test_no_edge_outside_the_spec() -> None:
    allowed = {(current, trigger) for current, trigger, _ in SPEC_EDGES}
    for trigger, edges in TRANSITIONS.items():
        for current in edges:
            assert (current, trigger) in allowed, f"unexpected edge {current} --{trigger}-->"


@pytest.mark.parametrize("trigger", list(Trigger))
def test_illegal_changes_raise(trigger: Trigger) -> None:
    for current in ALL:
        if can(current, trigger):
            continue
        with pytest.raises(InvalidTransition):
            transition(current, trigger)


def test_expired_is_final() -> None:
    assert [t for t in Trigger if can(S.EXPIRED, t)] == []


def test_budget_stop_depends_on_keep_alive() -> None:
    assert transition(S.RUNNING, Trigger.BUDGET_STOP, keep_alive=False) is S.STOPPED
    assert transition(S.RUNNING, Trigger.BUDGET_STOP, keep_alive=True) is S.IDLE
    with pytest.raises(InvalidTransition):
        transition(S.IDLE, Trigger.BUDGET_STOP)
