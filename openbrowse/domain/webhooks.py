"""Webhook events and their signature, as Browser Use sends them (spec §22.4). Pure functions.

An event is ``{id, type, timestamp, payload}``. The body on the wire is the event as compact JSON with sorted keys,
so a receiver can verify either the raw body or ``json.dumps(json.loads(body), separators=(",", ":"),
sort_keys=True)``, as Browser Use's own verifier does; both give the same bytes.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from datetime import datetime
from typing import Any

from openbrowse.domain.browsers import BrowserRecord
from openbrowse.domain.clock import to_wire
from openbrowse.domain.end_reasons import browser_end_reason
from openbrowse.domain.sessions import SessionRecord

STATUS_UPDATE = "agent.task.status_update"
SESSION_PAUSED = "session.paused"
BROWSER_ENDED = "browser.ended"
EVENT_TYPES = (STATUS_UPDATE, SESSION_PAUSED, BROWSER_ENDED)

TIMESTAMP_HEADER = "X-Browser-Use-Timestamp"
SIGNATURE_HEADER = "X-Browser-Use-Signature"
EVENT_ID_HEADER = "X-OpenBrowse-Event-Id"


def new_event(event_type: str, moment: datetime, payload: dict[str, Any]) -> dict[str, Any]:
    """An event with a fresh unique ``id``; ``timestamp`` is when it happened (ISO 8601, UTC)."""
    return {"id": f"evt_{uuid.uuid4().hex}", "type": event_type, "timestamp": to_wire(moment), "payload": payload}


def canonical_json(value: Any) -> str:
    """Compact JSON with sorted keys, non-ASCII escaped (``json.dumps``' default, which receivers re-serialise
    with): what is signed, and what is sent."""
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def signature(secret: str, timestamp: str, body: str) -> str:
    """Hex HMAC-SHA256 of ``"{timestamp}.{body}"`` with ``secret`` (``body`` already canonical)."""
    message = f"{timestamp}.{body}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(secret: str | None, timestamp: int, body: str) -> dict[str, str]:
    """The headers of one delivery attempt; without a secret only the timestamp is sent."""
    headers = {TIMESTAMP_HEADER: str(timestamp)}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, str(timestamp), body)
    return headers


def verify(secret: str, timestamp: str, body: bytes | str, given: str) -> bool:
    """True when ``given`` is the signature of ``body`` sent at ``timestamp`` (the receiver's side, for tests)."""
    canonical = canonical_json(json.loads(body))
    return hmac.compare_digest(signature(secret, timestamp, canonical), given)


def retry_delay(attempt: int, base: float, cap: float) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based): ``base``, then doubling, at most ``cap``."""
    if attempt < 1:
        return 0.0
    exponent = min(attempt - 1, 62)  # 2**62 s is beyond any cap; never an overflow
    return float(min(cap, base * (2**exponent)))


def _pause_state(pause: dict[str, Any] | None) -> str | None:
    value = (pause or {}).get("state")
    return value if isinstance(value, str) else None


def session_events(before: SessionRecord, after: SessionRecord, moment: datetime) -> list[dict[str, Any]]:
    """The events one committed change of a session announces: a status change, and the start of a pause."""
    events: list[dict[str, Any]] = []
    if after.status != before.status:
        metadata: dict[str, Any] = {"previousStatus": str(before.status)}
        if after.end_reason is not None:
            metadata["endReason"] = str(after.end_reason)
        if after.failure_kind is not None:
            metadata["failureKind"] = str(after.failure_kind)
        if after.is_task_successful is not None:
            metadata["isTaskSuccessful"] = after.is_task_successful
        events.append(new_event(STATUS_UPDATE, moment, _session_payload(after, metadata)))
    if _pause_state(after.pause) == "paused" and _pause_state(before.pause) != "paused":
        pause = after.pause or {}
        metadata = {key: pause[key] for key in ("reason", "by", "pausedAt", "expiresAt") if key in pause}
        events.append(new_event(SESSION_PAUSED, moment, _session_payload(after, metadata)))
    return events


def _session_payload(record: SessionRecord, metadata: dict[str, Any]) -> dict[str, Any]:
    # A session is BU v3's task: one id for both (a follow-up is a new turn of the same task).
    return {"task_id": record.id, "session_id": record.id, "status": str(record.status), "metadata": metadata}


def browser_ended_event(record: BrowserRecord, moment: datetime) -> dict[str, Any]:
    """``browser.ended`` for a raw browser that just stopped (spec §21.1's ``endReason`` in the metadata)."""
    end_reason = browser_end_reason(record.status, record.stop_reason)
    metadata: dict[str, Any] = {"endReason": str(end_reason) if end_reason is not None else None}
    if record.finished_at is not None:
        metadata["finishedAt"] = to_wire(record.finished_at)
    payload = {"browser_id": record.id, "status": str(record.status), "metadata": metadata}
    return new_event(BROWSER_ENDED, moment, payload)
