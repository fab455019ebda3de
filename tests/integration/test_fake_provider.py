"""The fake LLM provider speaks each API well enough for the real SDKs and browser-use's chat models."""

# ruff: noqa: E402  (browser-use reads its telemetry/logging switches at import: they are set first)

from __future__ import annotations

import asyncio
import gc
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

for _name, _value in {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",
}.items():
    os.environ.setdefault(_name, _value)

import anthropic
import httpx
import openai
from anthropic.types import MessageParam, TextBlock, ThinkingBlock, ToolParam, ToolUseBlock
from browser_use import ChatAnthropic, ChatOpenAI, Tools
from browser_use.agent.views import AgentOutput
from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError, ModelRateLimitError
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage
from openai.types.responses import ResponseReasoningItem
from pydantic import BaseModel

from tests.fakes.llm_server import (
    FOREVER,
    FakeProvider,
    Fault,
    LLMRequest,
    Usage,
    agent_step,
    click_on,
    done,
    find_elements,
    find_index,
    is_agent_step,
    structured,
    text,
)

ROOT = Path(__file__).resolve().parents[2]

STATE = """<agent_history>step 1</agent_history>
<browser_state>
Current tab: 2B21
Interactive elements:
[Start of page]
[5]<a id=old />
\tOld page link
</browser_state>
<browser_state>
<page_stats>2 links, 4 interactive</page_stats>
Interactive elements:
[Start of page]
Spike Shop
[91]<a id=about />
\tAbout us
*[94]<div role=button />
\tShow product details
\t[95]<a href=/more />
\t\tRead more
\tPrice 42.00 EUR
|SHADOW(open)|[71]<input name=q placeholder=Search products />
|scroll element[97]<button type=submit />
\tSearch
[End of page]
</browser_state>"""


class Weather(BaseModel):
    city: str
    temperature: int


@pytest.fixture(autouse=True)
async def _collect_sdk_clients_between_requests() -> AsyncIterator[None]:
    """browser-use builds a new SDK client per call and never closes it. When the cyclic GC collects one while
    the next call is connecting, the client's ``__del__`` close can break that connect (a 5 s ConnectTimeout
    under CPU load). Collect only here, between tests, and let those close tasks finish on the test's loop."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()
        pending = asyncio.all_tasks() - {asyncio.current_task()}
        if pending:
            await asyncio.wait(pending, timeout=2)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors


def _anthropic(fake: FakeProvider, **kw: Any) -> anthropic.AsyncAnthropic:
    kw.setdefault("max_retries", 0)
    return anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key="sk-ant-test", **kw)


def _openai(fake: FakeProvider, **kw: Any) -> openai.AsyncOpenAI:
    kw.setdefault("max_retries", 0)
    return openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key="sk-test", **kw)


async def _drain(stream: AsyncIterable[Any], into: list[Any]) -> None:
    async for item in stream:
        into.append(item)


def _agent_output_type() -> type[AgentOutput]:
    return AgentOutput.type_with_custom_actions(Tools().registry.create_action_model())


WEATHER_TOOL: ToolParam = {
    "name": "Weather",
    "description": "weather",
    "input_schema": Weather.model_json_schema(),
}
USER: list[MessageParam] = [{"role": "user", "content": "weather please TOKEN-A"}]
Item = TypeVar("Item")


def nth(items: Sequence[object], index: int, kind: type[Item]) -> Item:
    """``items[index]``, which must be a ``kind`` (a content block or output item of a reply)."""
    item = items[index]
    assert isinstance(item, kind), items
    return item


# ------------------------------------------------------------------------------------------------- Anthropic


async def test_anthropic_forced_tool_with_thinking_and_usage(fake: FakeProvider) -> None:
    fake.script("TOKEN-A", [structured({"city": "Oslo", "temperature": 3}, usage=(100, 20, 50, 10), thinking="Hmm.")])
    message = await _anthropic(fake).messages.create(
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
    client = _anthropic(fake)
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
    async with _anthropic(fake).messages.stream(model="m", max_tokens=50, messages=USER) as stream:
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
    response = await _openai(fake).responses.create(
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
    client = _openai(fake)
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
    client = _openai(fake)
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


async def test_models_endpoint_for_both_sdks(fake: FakeProvider) -> None:
    openai_models = [m.id async for m in _openai(fake).models.list()]
    anthropic_models = [m.id async for m in _anthropic(fake).models.list()]
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


# ------------------------------------------------------------------------------------------------- browser-use


async def test_browser_use_chat_models_parse_structured_output(fake: FakeProvider) -> None:
    fake.script(
        "TOKEN-BU", [structured({"city": "Bern", "temperature": 5}, usage=(100, 10, 60, 20))], then=Fault.drop()
    )
    messages: list[BaseMessage] = [SystemMessage(content="sys"), UserMessage(content="TOKEN-BU weather")]
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    result = await claude.ainvoke(messages, output_format=Weather)
    assert result.completion == Weather(city="Bern", temperature=5)
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (160, 10)
    assert (result.usage.prompt_cached_tokens, result.usage.prompt_cache_creation_tokens) == (60, 20)
    assert result.usage.prompt_cache_creation_5m_tokens == 20

    fake.script("TOKEN-OA", [structured({"city": "Kyiv", "temperature": -2}, usage=(50, 5, 10, 0))])
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    parsed = await gpt.ainvoke([UserMessage(content="TOKEN-OA")], output_format=Weather)
    assert parsed.completion == Weather(city="Kyiv", temperature=-2)
    assert parsed.usage is not None
    assert (parsed.usage.prompt_tokens, parsed.usage.prompt_cached_tokens, parsed.usage.total_tokens) == (50, 10, 55)
    plain = await gpt.ainvoke([UserMessage(content="say hi")])
    assert plain.completion == "This is a short reply from the fake LLM provider."


async def test_browser_use_agent_output_default_and_click_helper(fake: FakeProvider) -> None:
    output_type = _agent_output_type()
    fake.script("TOKEN-AG", [click_on("Read more", cards=False)], when=is_agent_step)
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    preflight = await claude.ainvoke([UserMessage(content="TOKEN-AG: state the goal")])
    assert preflight.completion == "This is a short reply from the fake LLM provider."
    step = await claude.ainvoke([UserMessage(content="TOKEN-AG\n" + STATE)], output_format=output_type)
    action = step.completion.action[0].model_dump(exclude_none=True)
    assert action == {"click": {"index": 95}}
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    finished = await gpt.ainvoke([UserMessage(content="TOKEN-AG\n" + STATE)], output_format=output_type)
    assert "done" in finished.completion.action[0].model_dump(exclude_none=True)
    assert [r.reply_kind for r in fake.requests] == ["text", "structured", "structured"]
    assert fake.requests[1].schema_name == "AgentOutput"
    assert fake.requests[1].script == "TOKEN-AG"


def test_find_index_reads_the_last_browser_state() -> None:
    assert find_index(STATE, "About us") == 91
    assert find_index(STATE, "Show product details") == 94
    assert find_index(STATE, "Read more") == 95
    assert find_index(STATE, "Price 42") == 94
    assert find_index(STATE, "placeholder=Search products") == 71
    assert find_index(STATE, "search") == 71  # case-insensitive fallback, first in document order
    assert find_index(STATE, "Search") == 71
    assert [e.index for e in find_elements(STATE)] == [91, 94, 95, 71, 97]
    with pytest.raises(LookupError, match="Old page link"):
        find_index(STATE, "Old page link")
    step = agent_step([{"click": {"index": 1}}], see="A shop", plan="Buy", next="Click")
    assert (step["what_i_see"], step["plan_to_goal"], step["next_move"], step["next_goal"]) == (
        "A shop",
        "Buy",
        "Click",
        "Click",
    )
    assert done("ok")["action"] == [{"done": {"success": True, "text": "ok"}}]


# ------------------------------------------------------------------------------------------------- scripting


async def test_script_order_times_then_and_default(fake: FakeProvider) -> None:
    async def later(request: LLMRequest) -> str:
        return f"async saw {request.model}"

    script = fake.script("S1", ["one", text("two", times=2), later], then="after")
    fake.default("unmatched")
    client = _openai(fake)

    async def ask(content: str) -> str:
        completion = await client.chat.completions.create(model="m1", messages=[{"role": "user", "content": content}])
        return completion.choices[0].message.content or ""

    answers = [await ask("S1") for _ in range(6)]
    assert answers == ["one", "two", "two", "async saw m1", "after", "after"]
    assert await ask("other") == "unmatched"
    assert script.exhausted
    assert script.consumed == 6
    assert len(fake.requests_matching("S1")) == 6
    fake.reset()
    assert fake.requests == []
    assert await ask("S1") == "This is a short reply from the fake LLM provider."


async def test_persistent_fault_covers_sdk_retries(fake: FakeProvider) -> None:
    fake.script("BOOM", [Fault.status(429, retry_after=0.01, times=FOREVER)])
    client = _openai(fake, max_retries=2)
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "BOOM"}])
    assert caught.value.body == {
        "message": "Rate limit reached for requests (fake provider). Please try again.",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert caught.value.response.headers["retry-after"] == "0.01"
    assert [r.reply_kind for r in fake.requests] == ["fault:status:429"] * 3


async def test_delay_and_gate(fake: FakeProvider) -> None:
    gate = fake.gate()
    fake.script("SLOW", [text("slow", delay=0.3)])
    fake.script("GATED", [text("released", gate=gate)])
    client = _openai(fake)
    started = time.monotonic()
    slow = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "SLOW"}])
    assert slow.choices[0].message.content == "slow"
    assert time.monotonic() - started >= 0.3
    pending = asyncio.ensure_future(
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "GATED"}])
    )
    assert await asyncio.to_thread(gate.wait_entered, 5)
    assert not pending.done()
    gate.open()
    released = await pending
    assert released.choices[0].message.content == "released"


async def test_failing_callable_is_reported(fake: FakeProvider) -> None:
    def broken(request: LLMRequest) -> str:
        raise ValueError("test bug")

    fake.script("BUG", [broken])
    with pytest.raises(openai.InternalServerError, match="test bug"):
        await _openai(fake).chat.completions.create(model="m", messages=[{"role": "user", "content": "BUG"}])
    assert isinstance(fake.errors[0], ValueError)
    fake.errors.clear()


# ------------------------------------------------------------------------------------------------- faults


async def test_status_faults_map_to_browser_use_errors(fake: FakeProvider) -> None:
    fake.script("F429", [Fault.status(429)])
    fake.script("F500", [Fault.status(500)])
    fake.script("A529", [Fault.status(529)])
    fake.script("A429", [Fault.status(429, retry_after=2)])
    fake.script("A401", [Fault.status(401)])
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    with pytest.raises(ModelRateLimitError) as rate:
        await gpt.ainvoke([UserMessage(content="F429")], output_format=Weather)
    assert rate.value.status_code == 429
    with pytest.raises(ModelProviderError) as server:
        await gpt.ainvoke([UserMessage(content="F500")])
    assert server.value.status_code == 500
    with pytest.raises(ModelProviderError) as overloaded:
        await claude.ainvoke([UserMessage(content="A529")], output_format=Weather)
    assert overloaded.value.status_code == 529
    assert not isinstance(overloaded.value, ModelRateLimitError)
    with pytest.raises(ModelRateLimitError):
        await claude.ainvoke([UserMessage(content="A429")])
    with pytest.raises(anthropic.AuthenticationError) as auth:
        await _anthropic(fake).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "A401"}])
    body = auth.value.body
    assert isinstance(body, dict), body
    assert body == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
        "request_id": body["request_id"],
    }
    anthropic_429 = fake.requests_matching("A429")[0]
    assert anthropic_429.reply_kind == "fault:status:429"


async def test_drop_is_a_connection_error(fake: FakeProvider) -> None:
    fake.default(Fault.drop(times=FOREVER))
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    for model in (gpt, claude):
        with pytest.raises(ModelProviderError) as caught:
            await model.ainvoke([UserMessage(content="x")], output_format=Weather)
        assert (caught.value.status_code, caught.value.message) == (502, "Connection error.")
    with pytest.raises(openai.APIConnectionError):
        await _openai(fake).responses.create(model="m", input="x", stream=True)
    assert {r.reply_kind for r in fake.requests} == {"fault:drop"}


async def test_hang_times_out_and_close_releases_it() -> None:
    with FakeProvider() as fake:
        fake.default(Fault.hang().forever())
        client = _openai(fake, timeout=0.4)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert 0.4 <= time.monotonic() - started < 3
        waiting = asyncio.ensure_future(
            _anthropic(fake, timeout=30).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "y"}]
            )
        )
        await asyncio.to_thread(fake.wait_for_requests, 2)
        await asyncio.to_thread(fake.close)
        with pytest.raises(anthropic.APIConnectionError):
            await asyncio.wait_for(waiting, 5)
        assert [r.reply_kind for r in fake.requests] == ["fault:hang", "fault:hang"]


async def test_malformed_replies(fake: FakeProvider) -> None:
    fake.script("M-JSON", [Fault.malformed("json").forever()])
    fake.script("M-ENV", [Fault.malformed("envelope")])
    fake.script("M-SCHEMA", [Fault.malformed("schema")])
    client = _anthropic(fake)
    with pytest.raises(json.JSONDecodeError):  # what the real SDK raises for a 200 that is not JSON
        await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "M-JSON"}])
    with pytest.raises(json.JSONDecodeError):
        await _openai(fake).responses.create(model="m", input="M-JSON")
    stream = await client.messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "M-JSON"}], stream=True
    )
    with pytest.raises(json.JSONDecodeError):
        await _drain(stream, [])
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    with pytest.raises(ModelProviderError):
        await gpt.ainvoke([UserMessage(content="M-ENV")], output_format=Weather)
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    with pytest.raises(ModelProviderError, match="validation error"):
        await claude.ainvoke([UserMessage(content="M-SCHEMA")], output_format=Weather)


async def test_truncated_replies_in_every_format(fake: FakeProvider) -> None:
    content = {"city": "Paris", "temperature": 11}
    fake.default(Fault.truncated(content).forever())
    gpt = ChatOpenAI(model="gpt-4.1-mini", base_url=fake.openai_base_url, api_key="k", max_retries=0)
    claude = ChatAnthropic(model="claude-sonnet-4-6", base_url=fake.anthropic_base_url, api_key="k", max_retries=0)
    for model in (gpt, claude):
        with pytest.raises(ModelOutputTruncatedError):
            await model.ainvoke([UserMessage(content="x")], output_format=Weather)
    message = await _anthropic(fake).messages.create(
        model="m",
        max_tokens=64,
        messages=USER,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "Weather"},
    )
    assert (message.stop_reason, nth(message.content, 0, ToolUseBlock).input, message.usage.output_tokens) == (
        "max_tokens",
        {"city": "Paris"},
        64,
    )
    async with _anthropic(fake).messages.stream(
        model="m",
        max_tokens=64,
        messages=USER,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "Weather"},
    ) as stream:
        streamed = await stream.get_final_message()
    assert streamed.stop_reason == "max_tokens"
    assert nth(streamed.content, 0, ToolUseBlock).input != content
    client = _openai(fake)
    response = await client.responses.create(model="m", input="x", max_output_tokens=32)
    assert (response.status, response.incomplete_details and response.incomplete_details.reason) == (
        "incomplete",
        "max_output_tokens",
    )
    assert response.usage is not None
    assert response.usage.output_tokens == 32
    events = [e async for e in await client.responses.create(model="m", input="x", stream=True)]
    assert events[-1].type == "response.incomplete"
    chunks = [
        c
        async for c in await client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}], stream=True
        )
    ]
    assert chunks[-1].choices[0].finish_reason == "length"


async def test_stream_cut_aborts_mid_body(fake: FakeProvider) -> None:
    fake.default(Fault.stream_cut("a reply long enough to be cut into several chunks by the fake provider").forever())
    client = _openai(fake)
    received: list[Any] = []
    stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(openai.APIConnectionError):
        await _drain(stream, received)
    assert any(chunk.choices and chunk.choices[0].delta.content for chunk in received)
    with pytest.raises(anthropic.APIConnectionError):
        await _anthropic(fake).messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}])


# ------------------------------------------------------------------------------------------------- standalone


def test_standalone_server_answers_and_stops() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.llm_server", "--port", str(port)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "listening on" in line:
                break
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/messages",
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.json()["content"][0]["text"] == "This is a short reply from the fake LLM provider."
    finally:
        process.terminate()
        assert process.wait(10) == 0
