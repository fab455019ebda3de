"""browser-use messages → Anthropic Messages JSON (as the SDK path sent it), and reply usage."""

from __future__ import annotations

from browser_use.llm.messages import (
    AssistantMessage,
    ContentPartImageParam,
    ContentPartTextParam,
    Function,
    ImageURL,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from pydantic import BaseModel

from openbrowse.llm.anthropic.wire import EPHEMERAL, reply_usage, serialize_messages, structured_tool


def test_system_goes_apart_and_only_the_last_cached_message_keeps_its_mark() -> None:
    messages, system = serialize_messages(
        [
            SystemMessage(content="rules", cache=True),
            UserMessage(content="first", cache=True),
            AssistantMessage(content="ok", cache=True),
            UserMessage(content="second", cache=True),
        ]
    )
    assert system == [{"text": "rules", "type": "text", "cache_control": EPHEMERAL}]
    assert messages == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"text": "second", "type": "text", "cache_control": EPHEMERAL}]},
    ]


def test_images_and_text_parts() -> None:
    parts = [
        ContentPartTextParam(text="look"),
        ContentPartImageParam(image_url=ImageURL(url="DATA:Image/PNG;base64,AAAA")),
        ContentPartImageParam(image_url=ImageURL(url="data:image/bmp;base64,BBBB")),
        ContentPartImageParam(image_url=ImageURL(url="https://example.test/a.png")),
        ContentPartTextParam(text="end"),
    ]
    messages, system = serialize_messages([UserMessage(content=parts, cache=True)])
    assert system is None
    assert messages[0]["content"] == [
        {"text": "look", "type": "text", "cache_control": None},
        {"source": {"data": "AAAA", "media_type": "image/png", "type": "base64"}, "type": "image"},
        {"source": {"data": "BBBB", "media_type": "image/jpeg", "type": "base64"}, "type": "image"},
        {"source": {"url": "https://example.test/a.png", "type": "url"}, "type": "image"},
        {"text": "end", "type": "text", "cache_control": EPHEMERAL},
    ]


def test_assistant_tool_calls_and_empty_messages() -> None:
    calls = [
        ToolCall(id="t1", function=Function(name="AgentOutput", arguments='{"x": 1}')),
        ToolCall(id="t2", function=Function(name="AgentOutput", arguments="not json")),
    ]
    messages, _ = serialize_messages(
        [AssistantMessage(content="a", tool_calls=calls, cache=True), AssistantMessage(content=None)]
    )
    assert messages[0]["content"] == [
        {"text": "a", "type": "text", "cache_control": None},
        {"id": "t1", "input": {"x": 1}, "name": "AgentOutput", "type": "tool_use", "cache_control": None},
        {
            "id": "t2",
            "input": {"arguments": "not json"},
            "name": "AgentOutput",
            "type": "tool_use",
            "cache_control": EPHEMERAL,
        },
    ]
    assert messages[1] == {"role": "assistant", "content": ""}


def test_structured_tool_is_named_after_the_model_and_cache_marked() -> None:
    class Verdict(BaseModel):
        passed: bool

    tool = structured_tool(Verdict)
    assert tool["name"] == "Verdict"
    assert tool["cache_control"] == EPHEMERAL
    assert "title" not in tool["input_schema"]
    assert tool["input_schema"]["properties"]["passed"]["type"] == "boolean"


def test_usage_counts_cache_reads_in_the_prompt_and_writes_apart() -> None:
    usage = reply_usage(
        {
            "input_tokens": 10,
            "output_tokens": 5,
            "cache_read_input_tokens": 7,
            "cache_creation_input_tokens": 3,
            "cache_creation": {"ephemeral_5m_input_tokens": 2, "ephemeral_1h_input_tokens": 1},
        }
    )
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (17, 5, 15)
    assert (usage.prompt_cached_tokens, usage.prompt_cache_creation_tokens) == (7, 3)
    assert (usage.prompt_cache_creation_5m_tokens, usage.prompt_cache_creation_1h_tokens) == (2, 1)
    assert reply_usage({"output_tokens": 5}) is None
