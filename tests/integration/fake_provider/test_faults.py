"""Faults of the fake LLM provider reach the SDKs and browser-use as the real providers' failures do; the
standalone server (``python -m tests.fakes.llm_server``) answers and stops."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import ToolUseBlock
from browser_use import ChatAnthropic, ChatOpenAI
from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError, ModelRateLimitError
from browser_use.llm.messages import UserMessage

from tests.fakes.llm_server import FOREVER, FakeProvider, Fault
from tests.integration.fake_provider.helpers import (
    USER,
    WEATHER_TOOL,
    Weather,
    anthropic_client,
    drain,
    nth,
    openai_client,
)
from tests.support import loopback

ROOT = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------------------------------------------- faults


async def test_persistent_fault_covers_sdk_retries(fake: FakeProvider) -> None:
    fake.script("BOOM", [Fault.status(429, retry_after=0.01, times=FOREVER)])
    client = openai_client(fake, max_retries=2)
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
        await anthropic_client(fake).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "A401"}]
        )
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
        await openai_client(fake).responses.create(model="m", input="x", stream=True)
    assert {r.reply_kind for r in fake.requests} == {"fault:drop"}


async def test_hang_times_out_and_close_releases_it() -> None:
    with FakeProvider() as fake:
        fake.default(Fault.hang().forever())
        client = openai_client(fake, timeout=0.4)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        assert time.monotonic() - started >= 0.4  # the client's timeout, not an early failure
        waiting = asyncio.ensure_future(
            anthropic_client(fake, timeout=30).messages.create(
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
    client = anthropic_client(fake)
    with pytest.raises(json.JSONDecodeError):  # what the real SDK raises for a 200 that is not JSON
        await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "M-JSON"}])
    with pytest.raises(json.JSONDecodeError):
        await openai_client(fake).responses.create(model="m", input="M-JSON")
    stream = await client.messages.create(
        model="m", max_tokens=5, messages=[{"role": "user", "content": "M-JSON"}], stream=True
    )
    with pytest.raises(json.JSONDecodeError):
        await drain(stream, [])
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
    message = await anthropic_client(fake).messages.create(
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
    async with anthropic_client(fake).messages.stream(
        model="m",
        max_tokens=64,
        messages=USER,
        tools=[WEATHER_TOOL],
        tool_choice={"type": "tool", "name": "Weather"},
    ) as stream:
        streamed = await stream.get_final_message()
    assert streamed.stop_reason == "max_tokens"
    assert nth(streamed.content, 0, ToolUseBlock).input != content
    client = openai_client(fake)
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
    client = openai_client(fake)
    received: list[Any] = []
    stream = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}], stream=True)
    with pytest.raises(openai.APIConnectionError):
        await drain(stream, received)
    assert any(chunk.choices and chunk.choices[0].delta.content for chunk in received)
    with pytest.raises(anthropic.APIConnectionError):
        await anthropic_client(fake).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )


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
        reply = loopback.post(
            f"http://127.0.0.1:{port}/v1/messages",
            json={"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.json()["content"][0]["text"] == "This is a short reply from the fake LLM provider."
    finally:
        process.terminate()
        assert process.wait(10) == 0
