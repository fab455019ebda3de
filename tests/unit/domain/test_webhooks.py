"""Webhook signatures as Browser Use documents them, the retry schedule, and which changes announce what."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import timedelta

from openbrowse.domain.browsers import BrowserRecord, BrowserStatus, BrowserStopReason
from openbrowse.domain.clock import utc_now
from openbrowse.domain.end_reasons import EndReason
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.ids import BrowserId, SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.domain.webhooks import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    browser_ended_event,
    canonical_json,
    retry_delay,
    session_events,
    signed_headers,
    verify,
)

SECRET = "whsec-test"


def bu_verify(body: bytes, signature: str, timestamp: str, secret: str) -> bool:
    """Browser Use's published receiver-side check, written out independently of our code."""
    payload = json.loads(body)
    message = f"{timestamp}.{json.dumps(payload, separators=(',', ':'), sort_keys=True)}"
    expected = hmac.new(secret.encode(), message.encode(), hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, signature)


def record(**changes: object) -> SessionRecord:
    now = utc_now()
    base = SessionRecord(
        id=SessionId("s-1"),
        status=SessionStatus.CREATED,
        model="gpt-x",
        llm_model="gpt-x",
        reasoning_effort="none",
        created_at=now,
        updated_at=now,
    )
    return base.evolve(**changes)


def test_signature_passes_browser_use_verifier() -> None:
    body = canonical_json({"type": "agent.task.status_update", "payload": {"z": 1, "a": "é"}, "id": "evt_1"})
    headers = signed_headers(SECRET, 1_760_000_000, body)
    assert headers[TIMESTAMP_HEADER] == "1760000000"
    assert bu_verify(body.encode(), headers[SIGNATURE_HEADER], headers[TIMESTAMP_HEADER], SECRET)
    assert verify(SECRET, headers[TIMESTAMP_HEADER], body, headers[SIGNATURE_HEADER])


def test_signature_fails_for_other_secret_timestamp_or_body() -> None:
    body = canonical_json({"a": 1})
    signature = signed_headers(SECRET, 100, body)[SIGNATURE_HEADER]
    assert not bu_verify(body.encode(), signature, "100", "other")
    assert not bu_verify(body.encode(), signature, "101", SECRET)
    assert not bu_verify(canonical_json({"a": 2}).encode(), signature, "100", SECRET)


def test_unsigned_without_secret() -> None:
    assert signed_headers(None, 5, "{}") == {TIMESTAMP_HEADER: "5"}


def test_body_is_compact_and_sorted() -> None:
    assert canonical_json({"b": [1, {"d": 1, "c": 2}], "a": None}) == '{"a":null,"b":[1,{"c":2,"d":1}]}'


def test_retry_delay_doubles_up_to_the_cap() -> None:
    assert [retry_delay(n, 5, 60) for n in range(1, 7)] == [5, 10, 20, 40, 60, 60]
    assert retry_delay(10_000, 5, 900) == 900
    assert retry_delay(0, 5, 60) == 0


def test_status_change_announced_with_metadata() -> None:
    before = record(status=SessionStatus.RUNNING)
    after = before.evolve(
        status=SessionStatus.STOPPED,
        end_reason=EndReason.ERROR,
        failure_kind=FailureKind("agent_failure"),
        is_task_successful=False,
    )
    moment = utc_now()
    [event] = session_events(before, after, moment)
    assert event["type"] == "agent.task.status_update" and event["id"].startswith("evt_")
    assert event["payload"] == {
        "task_id": "s-1",
        "session_id": "s-1",
        "status": "stopped",
        "metadata": {
            "previousStatus": "running",
            "endReason": "error",
            "failureKind": "agent_failure",
            "isTaskSuccessful": False,
        },
    }


def test_no_event_without_a_status_change_and_unique_ids() -> None:
    running = record(status=SessionStatus.RUNNING)
    assert session_events(running, running.evolve(step_count=3), utc_now()) == []
    first = session_events(record(), running, utc_now())
    second = session_events(record(), running, utc_now())
    assert first[0]["id"] != second[0]["id"]


def test_pause_announced_once_when_it_takes_hold() -> None:
    running = record(status=SessionStatus.RUNNING)
    pausing = running.evolve(pause={"state": "pausing", "reason": "login", "by": "agent"})
    paused = running.evolve(pause={"state": "paused", "reason": "login", "by": "agent", "pausedAt": "t"})
    assert session_events(running, pausing, utc_now()) == []
    [event] = session_events(pausing, paused, utc_now())
    assert event["type"] == "session.paused"
    assert event["payload"]["metadata"] == {"reason": "login", "by": "agent", "pausedAt": "t"}
    assert session_events(paused, paused.evolve(step_count=1), utc_now()) == []


def test_browser_ended_event() -> None:
    now = utc_now()
    browser = BrowserRecord(
        id=BrowserId("b-1"),
        status=BrowserStatus.STOPPED,
        timeout_minutes=60,
        started_at=now,
        timeout_at=now + timedelta(hours=1),
        finished_at=now,
        stop_reason=BrowserStopReason.IDLE_TIMEOUT,
    )
    event = browser_ended_event(browser, now)
    assert event["type"] == "browser.ended"
    assert event["payload"]["browser_id"] == "b-1" and event["payload"]["status"] == "stopped"
    assert event["payload"]["metadata"]["endReason"] == "idle_timeout"
