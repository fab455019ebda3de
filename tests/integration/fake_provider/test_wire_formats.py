"""The fake LLM provider speaks Anthropic Messages, OpenAI Responses and Chat Completions well enough for the real
SDKs, streaming and not, with token usage."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import httpx
import openai
import pytest
from anthropic.types import TextBlock, ThinkingBlock, ToolUseBlock
from openai.types.responses import ResponseReasoningItem

from tests.fakes.llm_server import FakeProvider, Usage, structured, text
from tests.integration.fake_provider.helpers import USER, WEATHER_TOOL, Weather, anthropic_client, nth, openai_client

# ------------------------------------------------------------------------------------------------- Anthropic


async def test_anthropic_forced_tool_with_thinking_and_usage(fake: FakeProvider) -> None:
    fake.script("TOKEN-A", [structured({"city": "Oslo", "temperature": 3}, usage=(100, 20, 50, 10), thinking="Hmm.")])
    message = await anthropic_client(fake).messages.create(
        model="claude-sonnet-5",
        max_tokens=500,
        messages=USER,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "Weather"},
    )
    assert [b.type for b in message.content] == ["thinking", "tool_use"]
    assert nth(message.content, 0, ThinkingBlock).thinking == "Hmm."
    assert nth(message.content, 1, ToolUseBlock).input == {"city": "Oslo", "temperature": 3}
    assert nth(message.content, 1, ToolUseBlock).name == "Weather"
    assert message.stop_reason == "tool_use"
    usage = message.usage
    assert (usage.input_tokens, usage.output_tokens) == (100, 20)
    assert (usage.cache_read_input_tokens, usage.cache_creation_input_tokens) == (50, 10)
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_5m_input_tokens == 10
    record = fake.requests[0]
    assert (record.api, record.schema_name, record.reply_kind, record.stream) == (
        "anthropic",
        "Weather",
        "structured",
        False,
    )
    assert record.headers["x-api-key"] == "sk-ant-test"
    assert "TOKEN-A" in record.text


async def test_anthropic_streaming_events(fake: FakeProvider) -> None:
    reply = structured({"city": "Oslo", "temperature": 3}, usage=(7, 9, 1, 2), thinking="Let me think " * 10)
    fake.script("TOKEN-A", [reply, reply])
    client = anthropic_client(fake)
    params: dict[str, Any] = {
        "model": "claude-sonnet-5",
        "max_tokens": 500,
        "messages": USER,
        "tools": [WEATHER_TOOL],
        "tool_choice": {"type": "tool", "name": "Weather"},
    }
    raw = await client.messages.create(stream=True, **params)
    events = [event async for event in raw]
    types = [e.type for e in events]
    assert types[0] == "message_start"
    assert types[-2:] == ["message_delta", "message_stop"]
    deltas = {e.delta.type for e in events if e.type == "content_block_delta"}
    assert deltas == {"thinking_delta", "signature_delta", "input_json_delta"}
    async with client.messages.stream(**params) as stream:
        final = await stream.get_final_message()
    assert nth(final.content, 1, ToolUseBlock).input == {"city": "Oslo", "temperature": 3}
    assert nth(final.content, 0, ThinkingBlock).signature
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cache_read_input_tokens) == (7, 9, 1)
    assert fake.requests[1].stream


async def test_anthropic_text_stream(fake: FakeProvider) -> None:
    fake.default("Hello from the stream, a somewhat longer sentence to get several text deltas.")
    async with anthropic_client(fake).messages.stream(model="m", max_tokens=50, messages=USER) as stream:
        pieces = [chunk async for chunk in stream.text_stream]
        final = await stream.get_final_message()
    assert len(pieces) > 1
    assert "".join(pieces) == nth(final.content, 0, TextBlock).text
    assert final.stop_reason == "end_turn"
    assert final.usage.output_tokens > 0


# ------------------------------------------------------------------------------------------------- Responses


async def test_responses_nonstreaming_with_reasoning(fake: FakeProvider) -> None:
    fake.script(
        "TOKEN-R", [structured({"city": "Rome", "temperature": 20}, usage=Usage(80, 30, 64, 0, 12), thinking="Sum.")]
    )
    response = await openai_client(fake).responses.create(
        model="gpt-5.6-terra",
        instructions="You answer in JSON. TOKEN-R",
        input=[{"role": "user", "content": "weather"}],
        reasoning={"effort": "low", "summary": "auto"},
        store=False,
        include=["reasoning.encrypted_content"],
    )
    assert response.status == "completed"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    reasoning = nth(response.output, 0, ResponseReasoningItem)
    assert reasoning.summary[0].text == "Sum."
    assert reasoning.encrypted_content
    assert json.loads(response.output_text) == {"city": "Rome", "temperature": 20}
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (80, 30, 110)
    assert response.usage.input_tokens_details.cached_tokens == 64
    assert response.usage.output_tokens_details.reasoning_tokens == 12
    assert fake.requests[0].reasoning == {"effort": "low", "summary": "auto"}


async def test_responses_streaming_event_sequence(fake: FakeProvider) -> None:
    reply = text("A streamed answer that is long enough to be split into several deltas.", thinking="Brief plan.")
    fake.default(reply)
    client = openai_client(fake)
    raw = await client.responses.create(model="gpt-5.6-sol", input="hi", stream=True, reasoning={"effort": "low"})
    events = [event async for event in raw]
    types = [e.type for e in events]
    assert types[:3] == ["response.created", "response.in_progress", "response.output_item.added"]
    for expected in (
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.output_item.done",
    ):
        assert expected in types
    assert types[-1] == "response.completed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    async with client.responses.stream(model="gpt-5.6-sol", input="hi", reasoning={"effort": "low"}) as stream:
        final = await stream.get_final_response()
    assert final.output_text == reply.content
    assert final.usage is not None
    assert final.usage.output_tokens > 0
    request = await asyncio.to_thread(fake.wait_for_requests, 2)
    assert request[0].stream


async def test_responses_sse_lines_have_event_and_data(fake: FakeProvider) -> None:
    async with httpx.AsyncClient() as client:
        body = {"model": "gpt-5.6-luna", "input": "hi", "stream": True}
        response = await client.post(f"{fake.openai_base_url}/responses", json=body)
    blocks = [b for b in response.text.split("\n\n") if b]
    assert all(b.startswith("event: response.") and "\ndata: {" in b for b in blocks)


# ------------------------------------------------------------------------------------------------- Chat


async def test_chat_completions_json_schema_and_stream_usage(fake: FakeProvider) -> None:
    fake.script("TOKEN-C", [structured({"city": "Lima", "temperature": 18}, usage=(40, 8, 32, 0))], then="plain")
    client = openai_client(fake)
    messages: Any = [{"role": "user", "content": "TOKEN-C weather"}]
    response_format: Any = {
        "type": "json_schema",
        "json_schema": {"name": "weather", "schema": Weather.model_json_schema()},
    }
    completion = await client.chat.completions.create(
        model="gpt-4.1", messages=messages, response_format=response_format
    )
    choice = completion.choices[0]
    assert (choice.finish_reason, json.loads(choice.message.content or "")) == (
        "stop",
        {"city": "Lima", "temperature": 18},
    )
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (
        40,
        8,
        48,
    )
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 32
    assert fake.requests[0].schema_name == "weather"

    stream = await client.chat.completions.create(
        model="gpt-4.1", messages=messages, stream=True, stream_options={"include_usage": True}
    )
    chunks = [chunk async for chunk in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "plain"
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens > 0
    async with httpx.AsyncClient() as http:
        raw = await http.post(
            f"{fake.openai_base_url}/chat/completions", json={"model": "m", "messages": messages, "stream": True}
        )
    assert raw.text.rstrip().endswith("data: [DONE]")


# ------------------------------------------------------------------------------------------------- both SDKs


async def test_models_endpoint_for_both_sdks(fake: FakeProvider) -> None:
    openai_models = [m.id async for m in openai_client(fake).models.list()]
    anthropic_models = [m.id async for m in anthropic_client(fake).models.list()]
    assert "gpt-5.6-terra" in openai_models
    assert "claude-sonnet-5" in anthropic_models


async def test_sdks_reach_the_fake_through_base_url_env_vars(
    fake: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in fake.env().items():
        monkeypatch.setenv(name, value)
    async with anthropic.AsyncAnthropic(max_retries=0) as claude, openai.AsyncOpenAI(max_retries=0) as gpt:
        message = await claude.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        completion = await gpt.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].type == "text"
    assert completion.choices[0].message.content == "This is a short reply from the fake LLM provider."
    assert [(r.api, r.path) for r in fake.requests] == [("anthropic", "/v1/messages"), ("chat", "/v1/chat/completions")]
    with pytest.raises(TimeoutError):
        fake.wait_for_requests(3, timeout=0.05)
