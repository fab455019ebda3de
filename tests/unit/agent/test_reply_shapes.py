"""Shape coercion of agent replies before validation, and the defect named when a reply stays unusable."""

from __future__ import annotations

import gc
import json
import weakref
from functools import cache
from typing import Any

import pytest
from browser_use import Tools
from browser_use.agent.views import AgentOutput
from pydantic import BaseModel, create_model

from openbrowse.agent.replies.cards import with_cards
from openbrowse.agent.replies.repair import cards_blank, correction, diagnose
from openbrowse.agent.replies.shapes import action_params, coerce_reply, watch_replies

NAV = [{"navigate": {"url": "https://example.com/", "new_tab": False}}]
STEP: dict[str, Any] = {"memory": "m", "next_goal": "open it", "what_i_see": "a page", "action": NAV}


@cache
def output_type() -> type[BaseModel]:
    return with_cards(AgentOutput.type_with_custom_actions(Tools().registry.create_action_model()))


def actions_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    parsed = output_type().model_validate(data)
    return [action.model_dump(exclude_unset=True) for action in parsed.action]  # type: ignore[attr-defined]


def test_action_vocabulary_is_read_from_the_type() -> None:
    names = action_params(output_type())
    assert {"navigate", "click", "done"} <= set(names)
    assert names["navigate"] is not None and "url" in names["navigate"].model_fields


@pytest.mark.parametrize(
    "action",
    [
        json.dumps(NAV),
        json.dumps(NAV[0]),
        NAV[0],
        [json.dumps(NAV[0])],
        [{"navigate": json.dumps(NAV[0]["navigate"])}],
        [{"name": "navigate", "arguments": NAV[0]["navigate"]}],
        f"```json\n{json.dumps(NAV)}\n```",
    ],
    ids=["list-string", "object-string", "object", "item-string", "args-string", "name-arguments", "fenced"],
)
def test_unambiguous_action_shapes_are_coerced(action: object) -> None:
    assert actions_of({**STEP, "action": action}) == NAV


@pytest.mark.parametrize("field", ["thinking", "memory", "next_goal", "evaluation_previous_goal", "next_move"])
def test_action_leaked_into_a_text_field_is_recovered(field: str) -> None:
    data = {key: value for key, value in STEP.items() if key != "action"}
    data[field] = f'I will open the page. {{"action": {json.dumps(NAV)}}}'
    repaired = coerce_reply(data, output_type())
    assert repaired["action"] == NAV
    assert repaired[field] == "I will open the page."
    assert actions_of(data) == NAV


def test_empty_action_with_a_leak_and_raw_newlines_in_a_json_string() -> None:
    leaked = {**STEP, "action": [], "memory": f'Going. {{"action": {json.dumps(NAV)}}}'}
    assert actions_of(leaked) == NAV
    raw_newline = '[{"done": {"text": "line one\nline two", "success": true}}]'
    assert actions_of({**STEP, "action": raw_newline})[0]["done"]["text"] == "line one\nline two"


def test_leak_as_fragment_markup_and_bare_list() -> None:
    base = {key: value for key, value in STEP.items() if key != "action"}
    fragment = {**base, "thinking": f'Plan. "action": {json.dumps(NAV)}'}
    markup = {**base, "memory": f'Note <parameter name="action">{json.dumps(NAV)}</parameter>'}
    bare = {**base, "next_goal": f"Do {json.dumps(NAV)}"}
    for data in (fragment, markup, bare):
        assert actions_of(data) == NAV


def test_actions_as_top_level_keys() -> None:
    data = {"memory": "m", "navigate": NAV[0]["navigate"], "click": {"index": 4}}
    repaired = coerce_reply(data, output_type())
    assert repaired == {"memory": "m", "action": [NAV[0], {"click": {"index": 4}}]}


def test_list_argument_sent_as_json_string() -> None:
    data = {**STEP, "action": [{"done": {"text": "ok", "success": True, "files_to_display": '["a.md"]'}}]}
    assert actions_of(data) == [{"done": {"text": "ok", "success": True, "files_to_display": ["a.md"]}}]


def test_ambiguous_shapes_are_left_for_validation() -> None:
    prose = {**STEP, "action": None, "memory": "nothing to see here {not json}"}
    assert coerce_reply(prose, output_type()) == prose
    unknown = {**STEP, "action": [{"teleport": {"to": "x"}}]}
    assert coerce_reply(unknown, output_type())["action"] == [{"teleport": {"to": "x"}}]
    assert coerce_reply("not a dict", output_type()) == "not a dict"


def test_validation_is_watched() -> None:
    with watch_replies() as seen:
        output_type().model_validate({**STEP, "action": json.dumps(NAV)})
    assert seen[-1]["action"] == NAV


@pytest.mark.parametrize(
    ("raw", "kind", "needle"),
    [
        (None, "format", "not a JSON object"),
        ({"memory": "m"}, "missing_action", "no `action`"),
        ({"action": []}, "missing_action", "no `action`"),
        ({"action": "soon"}, "missing_action", "must be a JSON array"),
        ({"action": [{"teleport": {}}]}, "unknown_action", "`teleport` is not an available action"),
        ({"action": [{"click": {}, "scroll": {}}]}, "action_shape", "exactly one key"),
        (
            {"action": [{"navigate": {"url": "u", "new_tab": "sometimes"}}]},
            "argument",
            "Argument `new_tab` of `navigate` must be a boolean in JSON, not a string.",
        ),
        (
            {"action": [{"done": {"text": "t", "success": True, "files_to_display": "a.md"}}]},
            "argument",
            "Argument `files_to_display` of `done` must be an array in JSON, not a string.",
        ),
        ({"action": [{"navigate": {}}]}, "argument", "`navigate` needs the argument `url`"),
        ({"action": NAV, "memory": ["x"]}, "field", "`memory` must be a string"),
    ],
)
def test_diagnosis_names_the_real_defect(raw: object, kind: str, needle: str) -> None:
    defect = diagnose(raw, output_type())
    assert defect.kind == kind
    assert needle in defect.detail
    assert "pydantic" not in defect.detail and "input_value" not in defect.detail


def test_corrections_escalate_from_full_to_terse() -> None:
    missing = diagnose({"memory": "m"}, output_type())
    first, second = correction(missing, 1), correction(missing, 2)
    assert "single tool call" in first and len(second) < len(first) / 3
    unknown = diagnose({"action": [{"teleport": {}}]}, output_type())
    assert "`teleport` is not an available action" in correction(unknown, 1)


def test_blank_cards() -> None:
    assert cards_blank(output_type().model_validate({"action": NAV, "memory": " ", "next_goal": ""}))
    assert not cards_blank(output_type().model_validate({"action": NAV, "next_move": "Open it."}))


def test_per_agent_output_types_are_not_kept_alive_by_our_caches() -> None:
    """browser-use builds a new AgentOutput type per agent; our caches must die with it."""

    class Navigate(BaseModel):
        url: str

    action_model = create_model("ActionModel", navigate=(Navigate | None, None))
    output_type = create_model("AgentOutput", action=(list[action_model], []))
    assert set(action_params(output_type)) == {"navigate"}
    carded = with_cards(output_type)
    assert set(action_params(carded)) == {"navigate"}
    carded.model_json_schema()
    alive = weakref.ref(output_type)
    del output_type, carded, action_model
    gc.collect()
    assert alive() is None
