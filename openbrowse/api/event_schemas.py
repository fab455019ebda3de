"""Wire shapes of the ``/events`` stream (spec §4.8): each event's ``data`` JSON, camelCase like the API."""

from __future__ import annotations

import json

from sse_starlette import ServerSentEvent

from openbrowse.api.schemas import WireModel, message_view
from openbrowse.domain.activity import Activity, CodeDraft
from openbrowse.domain.clock import Clock, to_wire, utc_now
from openbrowse.domain.money import format_usd
from openbrowse.domain.sessions import SessionRecord
from openbrowse.sessions.events import (
    ActivityEvent,
    CodeEvent,
    MaintenanceEvent,
    MessageEvent,
    SessionEvent,
    StatusEvent,
)


class ActivityView(WireModel):
    label: str
    started_at: str
    step: int | None
    spin: bool
    kind: str
    stream: str | None
    seconds: float
    """Seconds since ``startedAt`` when the event was sent."""


class StatusEventView(WireModel):
    status: str
    live_url: str | None
    step_count: int
    total_input_tokens: int
    total_output_tokens: int
    llm_cost_usd: str
    captcha_cost_usd: str
    total_cost_usd: str
    is_task_successful: bool | None
    failure_kind: str | None
    end_reason: str | None = None
    browser_live: bool
    activity: ActivityView | None


class CodeEventView(WireModel):
    name: str
    code: str
    status: str


def activity_view(activity: Activity | None, clock: Clock = utc_now) -> ActivityView | None:
    if activity is None:
        return None
    elapsed = (clock() - activity.started_at).total_seconds()
    return ActivityView(
        label=activity.label,
        started_at=to_wire(activity.started_at),
        step=activity.step,
        spin=activity.spin,
        kind=activity.kind.value,
        stream=activity.stream,
        seconds=round(max(0.0, elapsed), 1),
    )


def status_view(record: SessionRecord, activity: Activity | None) -> StatusEventView:
    return StatusEventView(
        status=record.status.value,
        live_url=record.live_url,
        step_count=record.step_count,
        total_input_tokens=record.total_input_tokens,
        total_output_tokens=record.total_output_tokens,
        llm_cost_usd=format_usd(record.llm_cost_usd),
        captcha_cost_usd=format_usd(record.captcha_cost_usd),
        total_cost_usd=format_usd(record.total_cost_usd),
        is_task_successful=record.is_task_successful,
        failure_kind=record.failure_kind.value if record.failure_kind else None,
        end_reason=record.end_reason.value if record.end_reason else None,
        browser_live=record.browser_live,
        activity=activity_view(activity),
    )


def code_view(code: CodeDraft) -> CodeEventView:
    return CodeEventView(name=code.name, code=code.code, status=code.status.value)


def server_sent(event: SessionEvent) -> ServerSentEvent:
    """One stream event as SSE framing: ``message`` events carry the message id as their ``id:``."""
    match event:
        case MessageEvent(message):
            data = message_view(message).model_dump_json(by_alias=True)
            return ServerSentEvent(data=data, event="message", id=message.id)
        case StatusEvent(record, activity):
            return ServerSentEvent(data=status_view(record, activity).model_dump_json(by_alias=True), event="status")
        case ActivityEvent(activity):
            view = activity_view(activity)
            return ServerSentEvent(data=view.model_dump_json(by_alias=True) if view else "null", event="activity")
        case CodeEvent(code):
            return ServerSentEvent(data=code_view(code).model_dump_json(by_alias=True), event="code")
        case MaintenanceEvent(notice):  # spec §21.6
            return ServerSentEvent(data=json.dumps(notice.wire()), event="maintenance_warning")
