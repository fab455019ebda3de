"""GET /v3/sessions/{id} sends pre-serialised bytes: they must equal what FastAPI sends for the declared
``SessionView`` response model (validated, then dumped by alias), for every kind of row."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from pydantic import TypeAdapter

from openbrowse.api.schemas import SessionView, session_json, session_view
from openbrowse.domain.failures import FailureKind
from openbrowse.domain.ids import SessionId
from openbrowse.domain.sessions import SessionRecord, SessionStatus

NOW = datetime(2026, 11, 30, 22, 0, 1, 123456, tzinfo=UTC)


def _record(**changes: Any) -> SessionRecord:
    base = SessionRecord(
        id=SessionId("5b0c8f4e-1f0a-4c55-9d7e-000000000001"),
        status=SessionStatus.IDLE,
        model="claude-sonnet-5",
        llm_model="claude-sonnet-5",
        reasoning_effort="medium",
        created_at=NOW,
        updated_at=NOW,
    )
    return base.evolve(**changes)


ROWS = [
    _record(),
    _record(
        status=SessionStatus.RUNNING,
        title="Find the price — «Blue Widget» 🔍",
        output={"rows": [{"price": 42.0, "tiny": 1e-7, "big": 1e16, "n": 3, "ok": True, "none": None}], "é": "ü"},
        output_schema={"type": "object", "properties": {"rows": {"type": "array"}}},
        step_count=7,
        last_step_summary='Clicked "Back to shop"\nthen waited',
        is_task_successful=None,
        live_url="/vnc/x/view?path=vnc/x/websockify&token=abc",
        profile_id="p1",
        max_cost_usd=Decimal("2.5"),
        total_input_tokens=123456,
        total_output_tokens=789,
        llm_cost_usd=Decimal("0.012345"),
        captcha_cost_usd=Decimal("0.003"),
        keep_alive=True,
        browser_live=True,
    ),
    _record(
        status=SessionStatus.ERROR,
        output="plain text answer",
        is_task_successful=False,
        failure_kind=FailureKind.AGENT_FAILURE,
        failure_status_code=529,
        reasoning_effort="none",
    ),
    _record(status=SessionStatus.STOPPED, output=[1, 2.5, "three"], is_task_successful=True, reasoning_effort="high"),
]


@pytest.mark.parametrize("record", ROWS)
def test_the_bytes_equal_fastapis_serialisation_of_the_response_model(record: SessionRecord) -> None:
    adapter = TypeAdapter(SessionView)
    validated = adapter.validate_python(session_view(record))
    assert session_json(record) == adapter.dump_json(validated, by_alias=True)
