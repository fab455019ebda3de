"""What a follow-up to an existing session may change (spec §7): whether the session takes one now, and the row
changes it makes, with the restart fields among them (a changed one closes a parked browser first)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from openbrowse.config import Settings
from openbrowse.domain.secrets import scope_secrets
from openbrowse.domain.sessions import SessionRecord, SessionStatus
from openbrowse.errors import InvalidRequest
from openbrowse.sessions.proxies import ProxyChooser
from openbrowse.sessions.requests import SessionCreate, follow_up_ceiling, resolve_session_effort, resolve_session_model
from openbrowse.sessions.workspace_choice import follow_up_fields

RESTART_FIELDS = ("model", "reasoning effort", "output schema", "sensitive data", "system prompt extension", "profile")
"""The fields a follow-up can only change by restarting the browser."""


def check_accepts_follow_up(record: SessionRecord) -> None:
    """A follow-up needs a session at rest: idle or a fresh shell, or a keep-alive one that ended a turn."""
    status = record.status
    busy = status is SessionStatus.RUNNING or record.is_queued
    keep_alive_ok = record.keep_alive and status in {
        SessionStatus.IDLE,
        SessionStatus.STOPPED,
        SessionStatus.TIMED_OUT,
        SessionStatus.ERROR,
    }
    if busy or not (status in {SessionStatus.IDLE, SessionStatus.CREATED} or keep_alive_ok):
        raise InvalidRequest(f"Session is {status}, not idle")


async def follow_up_changes(
    settings: Settings,
    record: SessionRecord,
    request: SessionCreate,
    task: str,
    require_profile: Callable[[str], Awaitable[None]],
) -> tuple[dict[str, Any], list[str]]:
    """The row changes a follow-up makes (only fields it sent) and the restart fields it changed."""
    changes: dict[str, Any] = {}
    changed: list[str] = []
    llm_model = record.llm_model
    if request.sent("model"):
        resolved = resolve_session_model(settings, request.model)
        changes.update(model=resolved.echo, llm_model=resolved.llm_id)
        llm_model = resolved.llm_id
        spec = resolved.spec
    else:
        spec = resolve_session_model(settings, record.llm_model).spec
    effort_request = request.effort_request()
    if effort_request.sent or llm_model != record.llm_model:
        changes["reasoning_effort"] = resolve_session_effort(spec, effort_request)
    if llm_model != record.llm_model:
        changed.append("model")
    if changes.get("reasoning_effort", record.reasoning_effort) != record.reasoning_effort:
        changed.append("reasoning effort")
    for field, label in (
        ("output_schema", "output schema"),
        ("sensitive_data", "sensitive data"),
        ("system_prompt_extension", "system prompt extension"),
        ("profile_id", "profile"),
    ):
        if request.sent(field):
            value = getattr(request, field)
            if field == "profile_id" and value is not None:
                await require_profile(value)
            if field == "sensitive_data":
                value = (scope_secrets(value, task) or None) if value else None
            changes[field] = value
            if value != getattr(record, field):
                changed.append(label)
    sent_proxy = request.sent("custom_proxy") or request.sent("proxy_country_code")
    if sent_proxy and ProxyChooser(settings).for_request(request) != record.proxy:  # spec §28.1
        raise InvalidRequest("A session keeps the proxy it was created with; start a new session for another one.")
    if request.sent("keep_alive") and request.keep_alive is not None:
        changes["keep_alive"] = request.keep_alive
    if request.sent("webhook_url"):  # spec §22.4: this session's own target, from this change on
        changes["webhook_url"] = request.webhook_url
    if request.enable_recording is not None:  # from the next turn on
        changes["enable_recording"] = request.enable_recording
    ceiling, ceiling_changes = follow_up_ceiling(
        settings,
        sent_max_cost=request.max_cost_usd if request.sent("max_cost_usd") else None,
        spent=record.total_cost_usd,
        allowance=record.allowance_usd,
    )
    if ceiling_changes:
        changes["max_cost_usd"] = ceiling
    changes.update(follow_up_fields(record, request))  # spec §27: the workspace stays, cache choices may change
    return changes, changed
