"""AnthropicChatModel against the fake provider: wire shape, usage/cost, truncation retry, reply repair."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import pytest
from browser_use.llm.exceptions import ModelOutputTruncatedError

from openbrowse.domain.failures import FailureKind
from openbrowse.llm.anthropic.model import AnthropicChatModel
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.failures import classify
from openbrowse.llm.usage.costs import CallUsage, CostLedger
from openbrowse.llm.usage.metering import MeteredChatModel
from tests.fakes.llm_server import FakeProvider, Fault, agent_step, done, structured, text
from tests.integration.llm.helpers import agent_output_type, fake_settings, messages, without_retries

CLICK: list[Mapping[str, Any]] = [{"click": {"index": 5}}]


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors


def claude(fake: FakeProvider, name: str = "claude-sonnet-5", effort: str = "high") -> AnthropicChatModel:
    model = build_chat_model(resolve_model(name), effort, fake_settings(fake))
    assert isinstance(model, AnthropicChatModel)
    return model


async def test_structured_agent_output_with_adaptive_thinking_and_cost(fake: FakeProvider) -> None:
    step = agent_step(CLICK, cards=False, thinking="The link is there.")
    fake.script("TOKEN-A1", [structured(step, usage=(1000, 100, 500, 200), thinking="hidden reasoning")])
    reports: list[CallUsage] = []
    model = MeteredChatModel(claude(fake), resolve_model("claude-sonnet-5").spec, reports.append)

    result = await model.ainvoke(messages("TOKEN-A1"), agent_output_type())

    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]
    request = fake.requests_matching("TOKEN-A1")[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-fake"
    assert request.headers["user-agent"].startswith("openbrowse/")
    assert "anthropic-beta" not in request.headers
    body = request.body or {}
    assert body["model"] == "claude-sonnet-5"
    assert body["max_tokens"] == 16_384
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert [tool["name"] for tool in body["tools"]] == ["AgentOutput"]
    # input 1000 + cache read 500 + 5-minute writes 200, output 100 at 2 / 0.2 / 2.5 / 10 per million
    assert reports == [CallUsage("claude-sonnet-5", 1700, 500, 200, 100, Decimal("0.0036"))]


async def test_reasoning_none_forces_the_tool(fake: FakeProvider) -> None:
    fake.script("TOKEN-A2", [structured(done("ok", cards=False))])
    result = await claude(fake, "claude-opus-4-8", "none").ainvoke(messages("TOKEN-A2"), agent_output_type())
    assert result.completion.action[0].model_dump(exclude_none=True)["done"]["text"] == "ok"
    body = fake.requests_matching("TOKEN-A2")[0].body or {}
    assert body["thinking"] == {"type": "disabled"}
    assert "output_config" not in body
    assert body["tool_choice"] == {"type": "tool", "name": "AgentOutput", "disable_parallel_tool_use": True}


async def test_budget_thinking_and_one_million_context(fake: FakeProvider) -> None:
    fake.script("TOKEN-A3", [structured(done("ok", cards=False))])
    model = claude(fake, "claude-sonnet-4-6[1m]", "high")
    await model.ainvoke(messages("TOKEN-A3"), agent_output_type())
    request = fake.requests_matching("TOKEN-A3")[0]
    assert "context-1m-2025-08-07" in request.headers["anthropic-beta"]
    assert (request.body or {})["model"] == "claude-sonnet-4-6"
    assert (request.body or {})["thinking"] == {"type": "enabled", "budget_tokens": 16_384}
    assert request.max_tokens == 24_576


async def test_plain_text_call(fake: FakeProvider) -> None:
    fake.script("TOKEN-A4", [text("Find the cheapest flight to Oslo.", usage=(50, 10))])
    result = await claude(fake, effort="none").ainvoke(messages("TOKEN-A4"))
    assert result.completion == "Find the cheapest flight to Oslo."
    assert "tools" not in (fake.requests_matching("TOKEN-A4")[0].body or {})


async def test_truncated_reply_is_retried_once_streaming_with_64k(fake: FakeProvider) -> None:
    step = agent_step(CLICK, cards=False)
    fake.script("TOKEN-A5", [Fault.truncated(step, usage=(100, 16_384)), structured(step, usage=(120, 50))])
    ledger = CostLedger()
    model = MeteredChatModel(claude(fake), resolve_model("claude-sonnet-5").spec, ledger.record)

    result = await model.ainvoke(messages("TOKEN-A5"), agent_output_type())

    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]
    first, retry = fake.requests_matching("TOKEN-A5")
    assert (first.stream, first.max_tokens) == (False, 16_384)
    assert (retry.stream, retry.max_tokens) == (True, 64_000)
    assert (retry.body or {})["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    # both requests were billed: the call's usage is their sum
    assert (ledger.input_tokens, ledger.output_tokens, ledger.calls) == (220, 16_434, 1)


async def test_truncated_twice_raises_and_still_bills(fake: FakeProvider) -> None:
    fake.script("TOKEN-A6", [Fault.truncated(usage=(100, 16_384)), Fault.truncated(usage=(100, 64_000))])
    reports: list[CallUsage] = []
    model = MeteredChatModel(claude(fake), resolve_model("claude-sonnet-5").spec, reports.append)
    with pytest.raises(ModelOutputTruncatedError) as caught:
        await model.ainvoke(messages("TOKEN-A6"), agent_output_type())
    assert len(fake.requests_matching("TOKEN-A6")) == 2
    assert classify(caught.value).kind is FailureKind.INVALID_OUTPUT
    assert [(r.input_tokens, r.output_tokens, r.failed) for r in reports] == [(200, 80_384, True)]


async def test_action_leaked_into_thinking_is_recovered(fake: FakeProvider) -> None:
    whole = agent_step(CLICK, cards=False, thinking="real thoughts")
    fake.script("TOKEN-A7", [structured({"thinking": json.dumps(whole)})])
    result = await claude(fake).ainvoke(messages("TOKEN-A7"), agent_output_type())
    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]
    assert result.completion.thinking == "real thoughts"


@pytest.mark.parametrize("effort", ["none", "high"])  # forced tool_choice / auto (thinking on)
async def test_tool_call_written_as_text_is_recovered(fake: FakeProvider, effort: str) -> None:
    step = agent_step(CLICK, cards=False)
    token = f"TOKEN-A8-{effort}"
    fake.script(token, [text(f"Here is my reply:\n```json\n{json.dumps(step)}\n```", thinking="Let me answer.")])
    result = await claude(fake, effort=effort).ainvoke(messages(token), agent_output_type())
    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]


async def test_sdk_retries_are_three(fake: FakeProvider) -> None:
    fake.script("TOKEN-A9", [Fault.status(429, retry_after=0.01, times=3), structured(done("ok", cards=False))])
    result = await claude(fake).ainvoke(messages("TOKEN-A9"), agent_output_type())
    assert result.completion.action
    assert [r.reply_kind for r in fake.requests_matching("TOKEN-A9")] == ["fault:status:429"] * 3 + ["structured"]


async def test_usage_without_retry_is_reported_once(fake: FakeProvider) -> None:
    fake.script("TOKEN-A10", [structured(done("ok", cards=False), usage=(10, 5))])
    reports: list[CallUsage] = []
    model = MeteredChatModel(without_retries(claude(fake)), resolve_model("claude-sonnet-5").spec, reports.append)
    await model.ainvoke(messages("TOKEN-A10"), agent_output_type())
    assert [(r.input_tokens, r.output_tokens, r.failed) for r in reports] == [(10, 5, False)]
