"""Reply cards in the schema, and the feed row a step becomes (spec §5.2, §10.4)."""

from __future__ import annotations

import pytest
from browser_use.agent.views import ActionResult, AgentOutput
from browser_use.tools.service import Tools

from openbrowse.agent.replies.cards import CARD_FIELDS, prepare_schema, with_cards
from openbrowse.agent.turns.steps import category_of, first_sentence, step_entry
from openbrowse.domain.feed import MessageType


@pytest.fixture(scope="module")
def output_model() -> type[AgentOutput]:
    return AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


def test_cards_are_required_in_the_schema_but_optional_when_validating(output_model: type[AgentOutput]) -> None:
    model = with_cards(output_model)
    schema = model.model_json_schema()
    assert list(schema["properties"])[:5] == ["thinking", "action", *CARD_FIELDS]
    assert set(CARD_FIELDS) <= set(schema["required"])
    parsed = model.model_validate({"action": [{"navigate": {"url": "https://example.com"}}]})
    assert isinstance(parsed, output_model) and parsed.model_dump()["what_i_see"] is None
    assert with_cards(output_model) is model


def test_step_rows(output_model: type[AgentOutput]) -> None:
    model = with_cards(output_model)
    reply = model.model_validate(
        {
            "action": [{"click": {"index": 5}}, {"navigate": {"url": "https://example.com"}}],
            "what_i_see": "A shop.",
            "plan_to_goal": "Open the product.",
            "next_move": "Click the product link.",
        }
    )
    entry = step_entry(step=3, duration=1.234, model_output=reply, results=[ActionResult(extracted_content="Clicked")])
    assert entry.type is MessageType.BROWSER_ACTION and entry.summary == "Click the product link."
    assert entry.data is not None
    assert entry.data["actions"] == ["click"] and entry.data["category"] == "interaction"
    assert (entry.data["see"], entry.data["plan"], entry.data["next"]) == (
        "A shop.",
        "Open the product.",
        "Click the product link.",
    )
    failed = step_entry(
        step=4, duration=0.5, model_output=reply, results=[ActionResult(error="Element 5 is gone. Try again.")]
    )
    assert failed.type is MessageType.BROWSER_ACTION_ERROR and failed.summary == "Error: Element 5 is gone."
    assert failed.data is not None and failed.data["errorAction"] == "click"


def test_categories_and_sentences() -> None:
    assert category_of("done") == "done" and category_of("read_pages") == "read" and category_of("zzz") == "action"
    assert first_sentence("One. Two.") == "One."
    assert first_sentence("x" * 200).endswith("…") and len(first_sentence("x" * 200)) == 140


def test_a_schema_prepared_ahead_is_the_one_the_model_call_gets() -> None:
    output = AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())
    prepare_schema(output)
    model = with_cards(output)
    assert "_openbrowse_card_schema" in model.__dict__  # built ahead, cached on the class
    first, second = model.model_json_schema(), model.model_json_schema()
    assert first == second
    assert first is not second  # each caller gets its own copy to change
    assert set(CARD_FIELDS) <= set(first["required"])
