"""Tolerant JSON parsing and browser-use message conversion for the schema-in-prompt adapters."""

from __future__ import annotations

import pytest
from browser_use.llm.messages import (
    AssistantMessage,
    BaseMessage,
    ContentPartImageParam,
    ContentPartTextParam,
    Function,
    ImageURL,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from pydantic import BaseModel, ValidationError

from openbrowse.llm.openai.messages import to_chat_messages, to_responses_input
from openbrowse.llm.replies.parsing import (
    UnusableOutputError,
    extract_json_object,
    first_balanced,
    merged_objects,
    parse_structured,
    strip_code_fences,
)


class Step(BaseModel):
    thinking: str | None = None
    action: list[dict[str, dict[str, object]]]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Sure! Here it is:\n```json\n{"a": {"b": [1, 2]}}\n```\nAnything else?', {"a": {"b": [1, 2]}}),
        (
            'Here: {"a": "brace } in a string", "b": "quote \\" and {"} trailing words',
            {"a": "brace } in a string", "b": 'quote " and {'},
        ),
        ('{"first": 1} {"second": 2}', {"first": 1}),
        ('noise { not json } then {"a": 1}', {"a": 1}),
        ('{"a": 1', None),
        ("no json here", None),
        ("[1, 2, 3]", None),
    ],
)
def test_extract_json_object(text: str, expected: dict[str, object] | None) -> None:
    assert extract_json_object(text) == expected


def test_first_balanced_arrays_and_fences() -> None:
    assert first_balanced('x "action": [{"a": "]"}, {"b": 2}] y', "[") == '[{"a": "]"}, {"b": 2}]'
    assert strip_code_fences("no fence") == "no fence"
    assert strip_code_fences("```python\nprint(1)\n```") == "print(1)"


def test_parse_structured_validates_and_repairs_double_serialised_fields() -> None:
    parsed = parse_structured('```json\n{"thinking": "ok", "action": [{"click": {"index": 3}}]}\n```', Step)
    assert parsed.action == [{"click": {"index": 3}}]
    repaired = parse_structured('{"action": "[{\\"click\\": {\\"index\\": 4}}]"}', Step)
    assert repaired.action == [{"click": {"index": 4}}]


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty reply"),
        ("   ", "empty reply"),
        ("I cannot do that.", "no JSON object"),
        ('{"thinking": "x"}', "does not match Step"),
    ],
)
def test_parse_structured_failures(text: str, match: str) -> None:
    with pytest.raises(UnusableOutputError, match=match) as caught:
        parse_structured(text, Step, model="m")
    assert caught.value.status_code == 400
    if "does not match" in match:
        assert isinstance(caught.value.__cause__, ValidationError)


CONVERSATION: list[BaseMessage] = [
    SystemMessage(content="Be helpful."),
    UserMessage(
        content=[
            ContentPartTextParam(text="What is on the screen?"),
            ContentPartImageParam(image_url=ImageURL(url="data:image/png;base64,AAAA", detail="low")),
        ]
    ),
    AssistantMessage(
        content=None,
        tool_calls=[ToolCall(id="t1", function=Function(name="AgentOutput", arguments='{"action": []}'))],
    ),
    SystemMessage(content="GOAL: finish."),
    UserMessage(content="Continue."),
]


def test_to_responses_input() -> None:
    instructions, items = to_responses_input(CONVERSATION, "\n\nSCHEMA")
    assert instructions == "Be helpful.\n\nSCHEMA"
    assert items == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is on the screen?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "low"},
            ],
        },
        {"role": "assistant", "content": '[Tool call: AgentOutput({"action": []})]'},
        {"role": "developer", "content": "GOAL: finish."},
        {"role": "user", "content": "Continue."},
    ]


def test_to_chat_messages() -> None:
    messages = to_chat_messages(CONVERSATION, "\n\nSCHEMA")
    assert messages[0] == {"role": "system", "content": "Be helpful.\n\nSCHEMA"}
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA", "detail": "low"},
    }
    assert messages[3] == {"role": "system", "content": "GOAL: finish."}
    no_system = to_chat_messages([UserMessage(content="hi")], "\n\nSCHEMA")
    assert no_system == [{"role": "system", "content": "SCHEMA"}, {"role": "user", "content": "hi"}]


def test_a_reply_split_over_two_objects_is_merged() -> None:
    from pydantic import BaseModel

    class Reply(BaseModel):
        memory: str
        action: list[dict[str, object]]

    text = '{"memory": "m"}\n{"action": [{"click": {"index": 1}}], "memory": "ignored"}'
    parsed = parse_structured(text, Reply)
    assert parsed.memory == "m" and parsed.action == [{"click": {"index": 1}}]
    assert merged_objects('{"a": 1}') is None
