"""The failed-authentication throttle and the view token (spec §2.1, §4.10)."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from openbrowse.api.auth import MAX_TRACKED_CLIENTS, AuthThrottled, FailureThrottle, client_ip
from openbrowse.api.view_tokens import ViewTokens


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


def test_a_view_token_is_random_expires_unless_renewed_and_a_new_browser_revokes_the_old() -> None:
    now = [0.0]
    tokens = ViewTokens(ttl=900, monotonic=lambda: now[0])
    first = tokens.issue("session-1")
    assert tokens.current("session-1") == first and first != tokens.issue("session-2")
    assert tokens.allows("session-1", first) and not tokens.allows("session-2", first)
    now[0] = 800
    tokens.renew("session-1")
    now[0] = 1600
    assert tokens.allows("session-1", first), "renewed at 800 s: good until 1700 s"
    now[0] = 1701
    assert not tokens.allows("session-1", first)
    assert tokens.current("session-1") != first, "an expired token is replaced, never revived"
    fresh = tokens.issue("session-1")
    assert not tokens.allows("session-1", first) and tokens.allows("session-1", fresh)
    tokens.revoke("session-1")
    assert not tokens.allows("session-1", fresh)


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
