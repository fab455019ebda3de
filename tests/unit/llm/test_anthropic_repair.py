"""Shape repairs of Anthropic structured replies (split calls, leaked action, call rendered as text).

Content blocks are plain dicts, as the Messages API sends them."""

from __future__ import annotations

import json
from typing import Any

from openbrowse.llm.anthropic.repair import merge_tool_calls, recover_leaked_action, repair_content

CLICK = [{"click": {"index": 12}}]


Block = dict[str, Any]


def tool(data: dict[str, Any], name: str = "AgentOutput", block_id: str = "toolu_1") -> Block:
    return {"id": block_id, "name": name, "input": data, "type": "tool_use"}


def text(value: str) -> Block:
    return {"text": value, "type": "text", "citations": None}


def thinking_block(value: str, signature: str = "sig") -> Block:
    return {"thinking": value, "signature": signature, "type": "thinking"}


def is_tool_use(block: Block) -> bool:
    return block.get("type") == "tool_use"


def test_split_tool_calls_are_merged_into_the_first() -> None:
    thinking = thinking_block("hm")
    content = [
        thinking,
        tool({"thinking": "look", "memory": "m", "action": []}),
        text("between"),
        tool({"action": CLICK, "memory": "ignored"}, block_id="toolu_2"),
        tool({"action": [{"scroll": {"down": True}}], "next_goal": "go"}, block_id="toolu_3"),
    ]
    merged = merge_tool_calls(content)
    assert [b["type"] for b in merged] == ["thinking", "tool_use", "text"]
    block = merged[1]
    assert block["id"] == "toolu_1"
    assert block["input"] == {
        "thinking": "look",
        "memory": "m",
        "action": [*CLICK, {"scroll": {"down": True}}],
        "next_goal": "go",
    }


def test_single_call_is_left_alone() -> None:
    content = [tool({"action": CLICK})]
    assert merge_tool_calls(content) is content
    data = {"thinking": "x", "action": CLICK}
    assert recover_leaked_action(data) is data


def test_action_leaked_as_parameter_markup() -> None:
    data = {
        "thinking": 'I will click.\n<parameter name="memory">m1</parameter>\n'
        f'<parameter name="action">{json.dumps(CLICK)}</parameter>',
        "evaluation_previous_goal": "ok",
    }
    repaired = recover_leaked_action(data)
    assert repaired["action"] == CLICK
    assert repaired["memory"] == "m1"
    assert repaired["evaluation_previous_goal"] == "ok"
    assert repaired["thinking"] == "I will click."


def test_whole_call_serialised_into_thinking() -> None:
    leaked = {"thinking": "real thoughts", "memory": "m", "next_goal": "n", "action": CLICK}
    repaired = recover_leaked_action({"thinking": json.dumps(leaked)})
    assert repaired == leaked


def test_trailing_action_fragment_in_thinking() -> None:
    data = {"thinking": f'The button is visible, so: "action": {json.dumps(CLICK)}', "memory": "m", "action": []}
    repaired = recover_leaked_action(data)
    assert repaired["action"] == CLICK
    assert repaired["thinking"] == "The button is visible, so:"
    assert repaired["memory"] == "m"


def test_action_as_a_json_string() -> None:
    assert recover_leaked_action({"action": json.dumps(CLICK)})["action"] == CLICK


def test_nothing_recoverable_is_left_alone() -> None:
    data = {"thinking": "I do not know what to do", "memory": "m"}
    assert recover_leaked_action(data) is data


def test_tool_call_rendered_as_text_becomes_a_tool_use_block() -> None:
    payload = {"thinking": "t", "action": CLICK}
    for rendered in (
        f"Here is my answer:\n```json\n{json.dumps(payload)}\n```",
        json.dumps({"name": "AgentOutput", "input": payload}),
        f'<invoke name="AgentOutput"><parameter name="thinking">t</parameter>'
        f'<parameter name="action">{json.dumps(CLICK)}</parameter></invoke>',
    ):
        repaired = repair_content([text(rendered)], "AgentOutput", expects_action=True)
        blocks = [b for b in repaired if is_tool_use(b)]
        assert len(blocks) == 1, rendered
        assert blocks[0]["name"] == "AgentOutput"
        assert blocks[0]["input"] == payload, rendered


def test_plain_prose_gets_no_tool_block() -> None:
    content = [text("I am not sure what you mean.")]
    assert repair_content(content, "AgentOutput", expects_action=True) == content


def test_models_without_action_are_not_given_one() -> None:
    data = {"verdict": True, "reasoning": '"action": [{"click": {"index": 1}}]'}
    content = [tool(data, name="JudgementResult")]
    assert repair_content(content, "JudgementResult", expects_action=False)[0]["input"] == data


def test_action_written_into_the_thinking_block_is_recovered() -> None:
    thinking = thinking_block(f'I should click. "action": {json.dumps(CLICK)}', "s")
    content = [thinking, tool({"memory": "m", "next_goal": "click"})]
    repaired = repair_content(content, "AgentOutput", expects_action=True)
    block = repaired[1]
    assert is_tool_use(block)
    assert block["input"] == {"memory": "m", "next_goal": "click", "action": CLICK}


def test_a_usable_action_ignores_the_thinking_block() -> None:
    thinking = thinking_block(f'"action": {json.dumps(CLICK)}', "s")
    content = [thinking, tool({"action": [{"scroll": {"down": True}}]})]
    assert repair_content(content, "AgentOutput", expects_action=True) == content
