"""How a turn ended (spec §15): the outcome, the completion sentence, and what output stands."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import jsonschema

from openbrowse.agent.turns.steps import first_sentence
from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.domain.runs import TurnEnding, TurnOutcome
from openbrowse.llm.replies.parsing import first_json_value

OUTPUT_CLIP = 4000


def schema_errors(output: Any, schema: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(output)][:5]


def parse_structured(text: str, schema: dict[str, Any]) -> tuple[Any, bool]:
    """The JSON value in ``text`` and whether it matches ``schema``."""
    value = first_json_value(text)
    if value is None:
        return None, False
    return value, not schema_errors(value, schema)


def clip_output(output: Any) -> str:
    if output is None:
        return ""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return text[:OUTPUT_CLIP]


def completed(
    *,
    text: str,
    agent_success: bool | None,
    schema: dict[str, Any] | None,
    structured: tuple[Any, bool] | None,
    recovered: int,
) -> TurnOutcome:
    """A turn that reached ``done``."""
    if not agent_success:
        return TurnOutcome(
            ending=TurnEnding.FINISHED,
            summary=f"Task failed: {first_sentence(text, 300) or 'the agent reported failure'}",
            output=text or None,
            is_task_successful=False,
            failure=Failure(FailureKind.AGENT_FAILURE),
        )
    if schema is not None:
        value, valid = structured if structured is not None else (None, False)
        if not valid:
            return TurnOutcome(
                ending=TurnEnding.FINISHED,
                summary="Task finished but the result did not match the requested schema",
                output=value if value is not None else (text or None),
                is_task_successful=False,
                failure=Failure(FailureKind.INVALID_OUTPUT),
            )
        output: Any = value
    else:
        output = text
    summary = "Task completed successfully"
    if recovered:
        summary += f" (recovered from {recovered} transient error(s))"
    return TurnOutcome(ending=TurnEnding.FINISHED, summary=summary, output=output, is_task_successful=True)


def not_completed(*, out_of_steps: bool, unusable_replies: bool) -> TurnOutcome:
    """A turn that ended without ``done`` and with nothing salvaged."""
    if unusable_replies:
        return TurnOutcome(
            ending=TurnEnding.FINISHED,
            summary="Task failed: the model's replies stayed unusable",
            is_task_successful=False,
            failure=Failure(FailureKind.INVALID_OUTPUT),
        )
    reason = "ran out of steps" if out_of_steps else "stopped"
    return TurnOutcome(
        ending=TurnEnding.FINISHED,
        summary=f"Task failed: {reason} before the goal was reached",
        is_task_successful=False,
        failure=Failure(FailureKind.AGENT_FAILURE),
    )


def count_recovered(errors: Sequence[str | None]) -> int:
    return sum(1 for error in errors if error)
