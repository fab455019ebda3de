"""Corrective retries for agent replies that stay unusable after shape coercion (spec §10.4, §10.6).

One agent step asks the model at most :data:`REPAIR_RETRIES` + 1 times for a usable reply. Each retry appends a
correction that names the real defect, found by looking at what the model actually sent:

* no ``action`` (or an empty one): first a full explanation including the single-tool-call rule, then a terse
  reminder;
* an action name the schema does not have: the correction says so and lists the available names;
* an argument of the wrong JSON type (a list sent as a quoted string, say): the correction names the argument
  and the JSON type it needs;
* no JSON object at all: the correction asks for one.

After the last retry the step is abandoned with :class:`UnusableOutputError` carrying one short instructive
sentence, never a validation dump. A truncated reply is not retried here: the adapters already retried it once
(Anthropic: streaming with the 64 000-token ceiling), and it ends the turn as ``invalid_output``.

A usable reply whose narrative fields are all blank is retried with a correction too, on a separate budget of
:data:`BLANK_CARD_RETRIES`; after that, or if a retry fails, the last usable reply is accepted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from browser_use.llm.base import BaseChatModel
from browser_use.llm.exceptions import ModelOutputTruncatedError
from browser_use.llm.messages import BaseMessage, UserMessage
from browser_use.llm.views import ChatInvokeCompletion
from pydantic import BaseModel, ValidationError

from openbrowse.agent.replies.shapes import action_params, watch_replies
from openbrowse.domain.failures import FailureKind
from openbrowse.llm.failures import classify
from openbrowse.llm.replies.parsing import UnusableOutputError

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

REPAIR_RETRIES = 2
BLANK_CARD_RETRIES = 2
NARRATIVE_FIELDS = ("what_i_see", "plan_to_goal", "next_move", "evaluation_previous_goal", "memory", "next_goal")
_NAMES_SHOWN = 40
_JSON_TYPES = {
    "list_type": "an array",
    "tuple_type": "an array",
    "set_type": "an array",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "string_type": "a string",
}
_MISSING_ACTION_FULL = (
    "Your previous reply had no usable `action` field. Every reply must be exactly ONE JSON object — one single "
    "tool call, never several — that contains all the fields of the schema, including `action`: a JSON array "
    'of 1 to 8 action objects, for example "action": [{"navigate": {"url": "https://example.com", '
    '"new_tab": false}}]. Put the actions in `action` itself: not inside `thinking`, `memory` or any other text '
    "field, not as a JSON string, and not as separate top-level keys."
)
_MISSING_ACTION_TERSE = 'Still no `action` array. Reply with one JSON object that includes "action": [{…}].'
_BLANK_CARDS = (
    "Your previous reply left every narrative field blank. Fill `what_i_see`, `plan_to_goal` and `next_move` "
    "with one sentence each (and `evaluation_previous_goal`, `memory`, `next_goal`), keeping your actions."
)


@dataclass(frozen=True, slots=True)
class Defect:
    """What is wrong with a reply: ``kind`` picks the correction, ``detail`` is one instructive sentence."""

    kind: str
    detail: str


def _type_word(value: Any) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def _argument_defect(name: str, args: Any, params: type[BaseModel] | None) -> Defect | None:
    if params is None:
        return None
    if not isinstance(args, dict):
        return Defect("argument", f"The arguments of `{name}` must be a JSON object, not {_type_word(args)}.")
    try:
        params.model_validate(args)
    except ValidationError as exc:
        error = exc.errors()[0]
        argument = ".".join(str(part) for part in error["loc"]) or name
        if error["type"] == "missing":
            return Defect("argument", f"`{name}` needs the argument `{argument}`.")
        if error["type"] == "extra_forbidden":
            return Defect("argument", f"`{argument}` is not an argument of `{name}`.")
        expected = _JSON_TYPES.get(error["type"])
        if expected is not None:
            got = _type_word(error.get("input"))
            return Defect("argument", f"Argument `{argument}` of `{name}` must be {expected} in JSON, not {got}.")
        return Defect("argument", f"Argument `{argument}` of `{name}` is invalid: {error['msg']}.")
    return None


def diagnose(raw: Any, output_format: type[BaseModel]) -> Defect:
    """Name the defect of a reply that failed validation (``raw`` is what validation saw, if anything)."""
    if not isinstance(raw, dict):
        return Defect("format", "The reply was not a JSON object matching the schema.")
    names: Mapping[str, type[BaseModel] | None] = action_params(output_format)
    actions = raw.get("action")
    if actions in (None, "", [], {}):
        return Defect("missing_action", "The reply had no `action` list.")
    if not isinstance(actions, list):
        return Defect("missing_action", f"`action` must be a JSON array of action objects, not {_type_word(actions)}.")
    for position, item in enumerate(actions, start=1):
        if not isinstance(item, dict) or len(item) != 1:
            return Defect(
                "action_shape",
                f"Action {position} must be an object with exactly one key, the action name, "
                'like {"click": {"index": 3}}.',
            )
        name, args = next(iter(item.items()))
        if name not in names:
            shown = ", ".join(list(names)[:_NAMES_SHOWN])
            return Defect("unknown_action", f"`{name}` is not an available action; use one of: {shown}.")
        defect = _argument_defect(name, args, names[name])
        if defect is not None:
            return defect
    try:
        output_format.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        expected = _JSON_TYPES.get(error["type"])
        if error["type"] == "extra_forbidden":
            return Defect("field", f"`{field}` is not a field of the reply schema.")
        if expected is not None:
            return Defect("field", f"The field `{field}` must be {expected} in JSON.")
        return Defect("field", f"The field `{field}` is invalid: {error['msg']}.")
    return Defect("format", "The reply did not match the schema.")


def correction(defect: Defect, attempt: int) -> str:
    """The user message appended for retry number ``attempt`` (1-based)."""
    if defect.kind == "missing_action":
        return _MISSING_ACTION_FULL if attempt == 1 else _MISSING_ACTION_TERSE
    if defect.kind == "format" and attempt == 1:
        return f"Your previous reply could not be used: {defect.detail} {_MISSING_ACTION_FULL}"
    return f"Your previous reply could not be used: {defect.detail} Send the whole reply again with this fixed."


def abandoned(defect: Defect, model: str | None) -> UnusableOutputError:
    """The short error a step ends with when the replies stayed unusable."""
    return UnusableOutputError(
        f"The model's reply stayed unusable after {REPAIR_RETRIES} corrections: {defect.detail}", model
    )


def is_repairable(exc: BaseException) -> bool:
    """An answer came back but could not be used (not a transport/status fault, not a truncation)."""
    if isinstance(exc, ModelOutputTruncatedError):
        return False
    return classify(exc).kind is FailureKind.INVALID_OUTPUT


def cards_blank(reply: BaseModel) -> bool:
    values = [getattr(reply, name, None) for name in NARRATIVE_FIELDS]
    return not any(isinstance(value, str) and value.strip() for value in values)


def _raw_of(seen: list[Any]) -> Any:
    dicts = [value for value in seen if isinstance(value, dict)]
    return dicts[-1] if dicts else None


async def invoke_with_repair(
    llm: BaseChatModel, messages: list[BaseMessage], output_format: type[T], **kwargs: Any
) -> ChatInvokeCompletion[T]:
    """Ask until the reply is usable (at most ``REPAIR_RETRIES`` corrections), then fix blank cards."""
    conversation = list(messages)
    attempt = 0
    while True:
        with watch_replies() as seen:
            try:
                result = await llm.ainvoke(conversation, output_format, **kwargs)
            except Exception as exc:
                if not is_repairable(exc):
                    raise
                defect = diagnose(_raw_of(seen), output_format)
                if attempt >= REPAIR_RETRIES:
                    raise abandoned(defect, getattr(llm, "name", None)) from exc
                attempt += 1
                logger.info("Unusable agent reply (%s); correction %d: %s", defect.kind, attempt, defect.detail)
                conversation = [*messages, UserMessage(content=correction(defect, attempt))]
                continue
        actions = getattr(result.completion, "action", None)
        if not actions:
            defect = Defect("missing_action", "The reply had no `action` list.")
            if attempt >= REPAIR_RETRIES:
                raise abandoned(defect, getattr(llm, "name", None))
            attempt += 1
            conversation = [*messages, UserMessage(content=correction(defect, attempt))]
            continue
        return await _fill_blank_cards(llm, messages, output_format, result, **kwargs)


async def _fill_blank_cards(
    llm: BaseChatModel,
    messages: list[BaseMessage],
    output_format: type[T],
    result: ChatInvokeCompletion[T],
    **kwargs: Any,
) -> ChatInvokeCompletion[T]:
    for _ in range(BLANK_CARD_RETRIES):
        if not cards_blank(result.completion):
            return result
        logger.info("Agent reply with blank narrative fields; asking again")
        try:
            retry = await llm.ainvoke([*messages, UserMessage(content=_BLANK_CARDS)], output_format, **kwargs)
        except Exception as exc:
            if not is_repairable(exc):
                raise
            return result
        if not getattr(retry.completion, "action", None):
            return result
        result = retry
    return result
