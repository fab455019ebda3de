"""How a turn's end is recorded (spec §15.1, §15.3)."""

from __future__ import annotations

from openbrowse.agent.preflight import first_sentence
from openbrowse.agent.turns.outcome import completed, not_completed, parse_structured
from openbrowse.domain.failures import FailureKind
from openbrowse.llm.replies.parsing import first_json_value

SCHEMA = {"type": "object", "properties": {"price": {"type": "string"}}, "required": ["price"]}


def test_success_without_schema() -> None:
    outcome = completed(text="42 EUR", agent_success=True, schema=None, structured=None, recovered=2)
    assert outcome.is_task_successful and outcome.output == "42 EUR" and outcome.failure is None
    assert outcome.summary == "Task completed successfully (recovered from 2 transient error(s))"


def test_agent_reported_failure() -> None:
    outcome = completed(
        text="Blocked by a login. Sorry.", agent_success=False, schema=None, structured=None, recovered=0
    )
    assert outcome.summary == "Task failed: Blocked by a login."
    assert outcome.failure is not None and outcome.failure.kind is FailureKind.AGENT_FAILURE


def test_schema_match_and_mismatch() -> None:
    good = completed(
        text='```json\n{"price": "42"}\n```', agent_success=True, schema=SCHEMA,
        structured=parse_structured('```json\n{"price": "42"}\n```', SCHEMA), recovered=0,
    )  # fmt: skip
    assert good.is_task_successful and good.output == {"price": "42"}
    bad = completed(
        text='{"cost": 1}',
        agent_success=True,
        schema=SCHEMA,
        structured=parse_structured('{"cost": 1}', SCHEMA),
        recovered=0,
    )
    assert not bad.is_task_successful and bad.failure is not None and bad.failure.kind is FailureKind.INVALID_OUTPUT
    assert bad.summary == "Task finished but the result did not match the requested schema"


def test_endings_without_done() -> None:
    assert not_completed(out_of_steps=True, unusable_replies=False).summary == (
        "Task failed: ran out of steps before the goal was reached"
    )
    assert not_completed(out_of_steps=False, unusable_replies=False).summary == (
        "Task failed: stopped before the goal was reached"
    )
    unusable = not_completed(out_of_steps=False, unusable_replies=True)
    assert unusable.failure is not None and unusable.failure.kind is FailureKind.INVALID_OUTPUT


def test_json_recovery_and_goal_fallback() -> None:
    assert first_json_value("Here you go: [1, 2] done") == [1, 2]
    assert first_json_value("no json") is None
    assert first_sentence("Buy the widget. Then pay!  More.") == "Buy the widget."
    assert first_sentence("What costs most?  Tell me.") == "What costs most?"
