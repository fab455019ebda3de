"""Scripting the fake LLM provider: browser-use's chat models parse its replies, and scripts, defaults, delays,
gates and reply callables behave as documented."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest
from browser_use import ChatAnthropic, ChatOpenAI
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage

from tests.fakes.llm_server import (
    FakeProvider,
    Fault,
    LLMRequest,
    agent_step,
    click_on,
    done,
    find_elements,
    find_index,
    is_agent_step,
    structured,
    text,
)
from tests.integration.fake_provider.helpers import STATE, Weather, agent_output_type, openai_client

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
    output_type = agent_output_type()
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
    client = openai_client(fake)

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


async def test_delay_and_gate(fake: FakeProvider) -> None:
    gate = fake.gate()
    fake.script("SLOW", [text("slow", delay=0.3)])
    fake.script("GATED", [text("released", gate=gate)])
    client = openai_client(fake)
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
        await openai_client(fake).chat.completions.create(model="m", messages=[{"role": "user", "content": "BUG"}])
    assert isinstance(fake.errors[0], ValueError)
    fake.errors.clear()
