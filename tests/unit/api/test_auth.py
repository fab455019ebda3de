"""The failed-authentication throttle and the view token (spec §2.1, §4.10)."""

from __future__ import annotations

import pytest

from openbrowse.api.auth import AuthThrottled, FailureThrottle, view_token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_five_free_failures_then_doubling_lockouts() -> None:
    clock = Clock()
    throttle = FailureThrottle(clock)
    for _ in range(5):
        throttle.check("1.2.3.4")
        throttle.failed("1.2.3.4")
    throttle.check("1.2.3.4")
    lockouts = []
    for _ in range(12):
        throttle.failed("1.2.3.4")
        with pytest.raises(AuthThrottled) as locked:
            throttle.check("1.2.3.4")
        lockouts.append(locked.value.retry_after)
        clock.now += locked.value.retry_after
        throttle.check("1.2.3.4")
    assert lockouts[:5] == [1, 2, 4, 8, 16]
    assert max(lockouts) == 900
    throttle.check("5.6.7.8")


def test_success_clears_the_record() -> None:
    clock = Clock()
    throttle = FailureThrottle(clock)
    for _ in range(6):
        throttle.failed("ip")
    with pytest.raises(AuthThrottled):
        throttle.check("ip")
    throttle.succeeded("ip")
    throttle.check("ip")


def test_view_token_is_a_per_id_hmac() -> None:
    token = view_token("secret", "session-1")
    assert len(token) == 32 and int(token, 16) >= 0
    assert token != view_token("secret", "session-2")
    assert token != view_token("other", "session-1")
