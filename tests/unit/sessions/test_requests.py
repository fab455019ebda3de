"""Create/follow-up request values: efforts, budgets and top-ups (spec §4.2, §10.7, §16.3)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from openbrowse.config import Settings
from openbrowse.errors import InvalidRequest
from openbrowse.llm.catalog import MODELS
from openbrowse.sessions.requests import (
    EffortRequest,
    SessionCreate,
    follow_up_ceiling,
    requested_effort,
    resolve_session_effort,
    resolve_session_model,
    scaled_budget,
    task_text,
)


def settings(**values: object) -> Settings:
    return Settings(OPENBROWSE_HOME="/tmp/openbrowse-unit", **values)  # type: ignore[arg-type]


def test_budget_scaling_rounds_up_to_the_cent() -> None:
    assert scaled_budget(settings(CLOUD_MAX_COST_FACTOR=0.7), 3) == Decimal("2.10")
    assert scaled_budget(settings(), 0.001) == Decimal("0.01")
    assert scaled_budget(settings(), 1.234) == Decimal("1.24")


def test_follow_up_ceiling() -> None:
    s = settings(CLOUD_MAX_COST_FACTOR=0.5)
    assert follow_up_ceiling(s, sent_max_cost=4, spent=Decimal("9"), allowance=Decimal(1)) == (Decimal("2.00"), True)
    assert follow_up_ceiling(s, sent_max_cost=None, spent=Decimal("0.333"), allowance=Decimal(1)) == (
        Decimal("1.34"),
        True,
    )
    # an earlier follow-up's own ceiling does not carry over to a session created without one
    assert follow_up_ceiling(s, sent_max_cost=None, spent=Decimal(5), allowance=None) == (None, True)


def test_empty_task_counts_as_absent() -> None:
    assert task_text("") is None and task_text("   ") is None and task_text(None) is None
    assert task_text(" go ") == " go "


def test_thinking_level_compatibility() -> None:
    assert requested_effort(EffortRequest(thinking_level="disabled")) == "none"
    with pytest.raises(InvalidRequest, match="not both"):
        requested_effort(EffortRequest(reasoning_effort="low", reasoning_effort_sent=True, thinking_level="low"))
    with pytest.raises(InvalidRequest, match="thinkingLevel"):
        requested_effort(EffortRequest(thinking_level=None))
    with pytest.raises(InvalidRequest, match="reasoningEffort"):
        requested_effort(EffortRequest(retired_field="thinkingEffort"))


def test_default_model_follows_configured_keys() -> None:
    assert resolve_session_model(settings(), None).llm_id == "gpt-5.6-terra"
    assert resolve_session_model(settings(ANTHROPIC_API_KEY="k"), None).llm_id == "claude-sonnet-5"
    assert resolve_session_model(settings(ANTHROPIC_API_KEY="k", OPENAI_API_KEY="k"), None).llm_id == "gpt-5.6-terra"
    assert resolve_session_model(settings(DEFAULT_MODEL="claude-opus-4.7"), None).llm_id == "claude-opus-4-7"


def test_bu_tiers_pick_from_configured_providers() -> None:
    anthropic_only = settings(ANTHROPIC_API_KEY="k")
    assert resolve_session_model(anthropic_only, "bu-mini").llm_id == "claude-sonnet-5"
    assert resolve_session_model(anthropic_only, "bu-ultra").spec.id in {"claude-fable-5", "claude-mythos-5"}
    assert resolve_session_model(settings(OPENAI_API_KEY="k"), "bu-mini").llm_id == "gpt-5.6-luna"
    assert resolve_session_model(settings(OPENAI_API_KEY="k"), "bu-max").echo == "bu-max"


@pytest.mark.parametrize("model_id", sorted(MODELS))
def test_every_model_resolves_its_default_effort(model_id: str) -> None:
    spec = MODELS[model_id]
    assert resolve_session_effort(spec, EffortRequest()) == spec.default_effort
    for effort in spec.accepted_efforts:
        resolved = resolve_session_effort(spec, EffortRequest(reasoning_effort=effort, reasoning_effort_sent=True))
        assert resolved in spec.accepted_efforts


def test_session_create_knows_what_was_sent() -> None:
    request = SessionCreate(task="x", model="gpt-5.6-terra", sent_fields=frozenset({"task", "model"}))
    assert request.sent("model") and not request.sent("keep_alive")
    assert not request.effort_request().sent
