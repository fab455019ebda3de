"""Rows to insert in store tests: a session record with the fields every session has, and the caller's."""

from __future__ import annotations

from typing import Any

from openbrowse.domain.clock import utc_now
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus


def session_record(session_id: str, status: SessionStatus = SessionStatus.CREATED, **fields: Any) -> SessionRecord:
    now = utc_now()
    return SessionRecord(
        id=SessionId(session_id),
        status=status,
        model="gpt-x",
        llm_model="gpt-x",
        reasoning_effort="none",
        created_at=now,
        updated_at=now,
        **fields,
    )
