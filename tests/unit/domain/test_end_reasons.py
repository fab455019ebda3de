"""Which ``endReason`` each way of ending gets (spec §21.1): one table for sessions, one for raw browsers."""

from __future__ import annotations

import pytest

from openbrowse.domain.browsers import BrowserStatus, BrowserStopReason
from openbrowse.domain.end_reasons import BrowserState, EndReason, browser_end_reason, browser_state
from openbrowse.domain.failures import FailureKind
from openbrowse.errors import ProcessDied, ResourceLimitExceeded
from openbrowse.sessions.states import Trigger, end_reason_of
from openbrowse.sessions.turns import death_end_reason


@pytest.mark.parametrize(
    ("trigger", "kind", "expected"),
    [
        (Trigger.FINISH, None, EndReason.CLOSED),
        (Trigger.STOP_SESSION, None, EndReason.CLOSED),
        (Trigger.BUDGET_STOP, FailureKind.BUDGET_EXCEEDED, EndReason.CLOSED),
        (Trigger.TIMEOUT, FailureKind.SESSION_TIMEOUT, EndReason.MAX_DURATION),
        (Trigger.FAIL, FailureKind.PROVIDER_ERROR, EndReason.ERROR),
        (Trigger.FAIL, FailureKind.RESOURCE_LIMIT, EndReason.ERROR),
        (Trigger.RELEASE, None, EndReason.IDLE_TIMEOUT),
        (Trigger.EXPIRE, None, EndReason.IDLE_TIMEOUT),
        (Trigger.RESTART_INTERRUPT, None, EndReason.RUNNER_LOST),
    ],
)
def test_a_session_end_without_a_named_reason_gets_one_from_its_trigger(
    trigger: Trigger, kind: FailureKind | None, expected: EndReason
) -> None:
    assert end_reason_of(trigger, kind) is expected


def test_a_slot_death_is_a_lost_runner_unless_the_memory_cap_ended_it() -> None:
    assert death_end_reason(ProcessDied("chromium", -9)) is EndReason.RUNNER_LOST
    assert death_end_reason(ResourceLimitExceeded("memory", "768 MiB", "again")) is EndReason.MEMORY_LIMIT
    assert death_end_reason(ResourceLimitExceeded("disk", "1024 MiB", "full")) is EndReason.ERROR


@pytest.mark.parametrize(
    ("reason", "end", "state"),
    [
        (BrowserStopReason.REQUESTED, EndReason.CLOSED, BrowserState.ENDED),
        (BrowserStopReason.TIMEOUT, EndReason.MAX_DURATION, BrowserState.ENDED),
        (BrowserStopReason.BROWSER_EXITED, EndReason.RUNNER_LOST, BrowserState.LOST),
        (BrowserStopReason.RESTART, EndReason.RUNNER_LOST, BrowserState.LOST),
        (BrowserStopReason.SHUTDOWN, EndReason.MAINTENANCE, BrowserState.ENDED),
        (BrowserStopReason.MEMORY_LIMIT, EndReason.MEMORY_LIMIT, BrowserState.ENDED),
    ],
)
def test_a_stopped_browser_shows_its_end_reason_and_state(
    reason: BrowserStopReason, end: EndReason, state: BrowserState
) -> None:
    assert browser_end_reason(BrowserStatus.STOPPED, reason) is end
    assert browser_state(BrowserStatus.STOPPED, reason) is state


def test_an_active_browser_is_live_with_no_end_reason() -> None:
    assert browser_end_reason(BrowserStatus.ACTIVE, None) is None
    assert browser_state(BrowserStatus.ACTIVE, None) is BrowserState.LIVE
