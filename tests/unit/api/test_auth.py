"""The failed-authentication throttle and the view token (spec §2.1, §4.10)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from openbrowse.api.auth import MAX_TRACKED_CLIENTS, AuthThrottled, FailureThrottle, client_ip, view_token


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


def test_the_table_stays_bounded_and_keeps_the_latest_clients() -> None:
    throttle = FailureThrottle(Clock(), max_clients=100)
    for n in range(10_000):
        throttle.failed(f"10.0.{n // 256}.{n % 256}")
    assert len(throttle) == 100
    for _ in range(6):
        throttle.failed("203.0.113.9")
    assert len(throttle) == 100
    with pytest.raises(AuthThrottled):
        throttle.check("203.0.113.9")
    assert len(FailureThrottle()) == 0 and MAX_TRACKED_CLIENTS <= 100_000


def test_the_client_is_the_socket_peer_whatever_x_forwarded_for_says() -> None:
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v3/sessions",
        "headers": [(b"x-forwarded-for", b"203.0.113.1, 10.0.0.1")],
        "client": ("198.51.100.7", 50000),
    }
    assert client_ip(Request(scope)) == "198.51.100.7"
