"""Turning a create/follow-up request into validated values: model, effort, budget (spec §4.2, §10.7, §16.3)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from openbrowse.config import Settings
from openbrowse.domain.money import ceil_cents, to_decimal
from openbrowse.errors import InvalidRequest
from openbrowse.llm.catalog import THINKING_LEVEL_TO_EFFORT, ModelSpec, ResolvedModel, resolve_effort, resolve_model

_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class SessionCreate:
    """A validated ``POST /v3/sessions`` body. ``sent_fields`` names the fields present in the request."""

    task: str | None = None
    session_id: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None
    thinking_level: Any = None
    keep_alive: bool | None = None
    max_cost_usd: float | None = None
    profile_id: str | None = None
    output_schema: dict[str, Any] | None = None
    sensitive_data: Mapping[str, object] | None = None
    """As sent: validated and scoped by :func:`openbrowse.domain.secrets.scope_secrets` with the task."""
    system_prompt_extension: str | None = None
    max_duration_ms: int | None = None
    enable_recording: bool | None = None
    webhook_url: str | None = None
    workspace_id: str | None = None
    cache_script: bool | None = None
    auto_heal: bool | None = None
    custom_proxy: Any = None
    proxy_country_code: Any = None
    retired_field: str | None = None
    sent_fields: frozenset[str] = frozenset()

    def sent(self, name: str) -> bool:
        return name in self.sent_fields

    def effort_request(self) -> EffortRequest:
        return EffortRequest(
            reasoning_effort=self.reasoning_effort,
            reasoning_effort_sent=self.sent("reasoning_effort"),
            thinking_level=self.thinking_level if self.sent("thinking_level") else _UNSET,
            retired_field=self.retired_field,
        )


@dataclass(frozen=True, slots=True)
class EffortRequest:
    """What the caller said about reasoning: ``reasoningEffort`` and/or BU's ``thinkingLevel``."""

    reasoning_effort: str | None = None
    reasoning_effort_sent: bool = False
    thinking_level: Any = _UNSET
    retired_field: str | None = None

    @property
    def sent(self) -> bool:
        return self.reasoning_effort_sent or self.thinking_level is not _UNSET


def requested_effort(request: EffortRequest) -> str | None:
    """The effort name the caller asked for, after BU compatibility rules; None means the model default."""
    if request.retired_field:
        raise InvalidRequest(f"'{request.retired_field}' is no longer supported; use 'reasoningEffort' instead.")
    if request.thinking_level is not _UNSET:
        if request.reasoning_effort_sent:
            raise InvalidRequest("Send either 'reasoningEffort' or 'thinkingLevel', not both.")
        level = request.thinking_level
        if not isinstance(level, str) or level not in THINKING_LEVEL_TO_EFFORT:
            raise InvalidRequest(
                f"'{level}' is not a valid thinkingLevel. Valid values: {', '.join(THINKING_LEVEL_TO_EFFORT)}."
            )
        return THINKING_LEVEL_TO_EFFORT[level]
    return request.reasoning_effort


def resolve_session_model(settings: Settings, requested: str | None) -> ResolvedModel:
    return resolve_model(
        requested,
        default_model=settings.DEFAULT_MODEL,
        has_openai_key=bool(settings.OPENAI_API_KEY),
        has_anthropic_key=bool(settings.ANTHROPIC_API_KEY),
    )


def resolve_session_effort(spec: ModelSpec, request: EffortRequest) -> str:
    return resolve_effort(spec, requested_effort(request))


def scaled_budget(settings: Settings, max_cost_usd: float) -> Decimal:
    """``ceil(value × CLOUD_MAX_COST_FACTOR × 100) / 100``."""
    return ceil_cents(to_decimal(max_cost_usd) * to_decimal(settings.CLOUD_MAX_COST_FACTOR))


def follow_up_ceiling(
    settings: Settings, *, sent_max_cost: float | None, spent: Decimal, allowance: Decimal | None
) -> tuple[Decimal | None, bool]:
    """The ceiling for a follow-up dispatch, and whether the stored ceiling changes at all (spec §16.3).

    A ``maxCostUsd`` named by a follow-up binds that dispatch only: the next one without it goes back to the
    creation allowance on top of what was spent, or to no ceiling when the session was created without one.
    """
    if sent_max_cost is not None:
        return scaled_budget(settings, sent_max_cost), True
    if allowance is not None:
        return ceil_cents(spent + allowance), True
    return None, True


def task_text(value: str | None) -> str | None:
    """An empty task counts as absent."""
    if value is None or not value.strip():
        return None
    return value
