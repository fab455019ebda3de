"""ResponsesChatModel and ChatCompletionsModel against the fake provider."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import pytest
from browser_use.llm.exceptions import ModelOutputTruncatedError

from openbrowse.domain.failures import FailureKind
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.failures import classify
from openbrowse.llm.keys import COMPAT_PLACEHOLDER_KEY
from openbrowse.llm.openai.chat import ChatCompletionsModel
from openbrowse.llm.openai.responses import ResponsesChatModel
from openbrowse.llm.usage.costs import CallUsage
from openbrowse.llm.usage.metering import MeteredChatModel
from tests.fakes.llm_server import FakeProvider, Fault, agent_step, done, structured, text
from tests.integration.llm.helpers import agent_output_type, fake_settings, messages

CLICK: list[Mapping[str, Any]] = [{"click": {"index": 5}}]
SUMMARY_REJECTION = (
    "Your organization must be verified to generate reasoning summaries. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify Organization."
)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors


def gpt(fake: FakeProvider, name: str = "gpt-5.6-terra", effort: str = "medium") -> ResponsesChatModel:
    model = build_chat_model(resolve_model(name), effort, fake_settings(fake))
    assert isinstance(model, ResponsesChatModel)
    return model


# ------------------------------------------------------------------------------------------------- Responses


async def test_responses_structured_agent_output_summary_and_cost(fake: FakeProvider) -> None:
    step = agent_step(CLICK, cards=False, thinking="I see the link.")
    fake.script("TOKEN-R1", [structured(step, usage=(2000, 300, 500, 100), thinking="Looked at the page.")])
    reports: list[CallUsage] = []
    model = MeteredChatModel(gpt(fake), resolve_model("gpt-5.6-terra").spec, reports.append)

    result = await model.ainvoke(messages("TOKEN-R1"), agent_output_type())

    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]
    assert result.completion.thinking == "I see the link."
    assert result.thinking == "Looked at the page."
    request = fake.requests_matching("TOKEN-R1")[0]
    assert request.path == "/v1/responses"
    assert request.headers["authorization"] == "Bearer sk-fake"
    body = request.body or {}
    assert set(body) == {"model", "input", "instructions", "max_output_tokens", "store", "reasoning"}
    assert (body["model"], body["store"], body["max_output_tokens"]) == ("gpt-5.6-terra", False, 8192)
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["instructions"].startswith("You are a browser agent.")
    assert "<json_schema>" in body["instructions"]
    assert [item["role"] for item in body["input"]] == ["user"]
    # 2000 prompt tokens = 1400 uncached + 500 cached + 100 written; 300 out at 2 / 0.2 / 2.5 / 12
    assert reports == [CallUsage("gpt-5.6-terra", 2000, 500, 100, 300, Decimal("0.00675"))]


async def test_responses_tolerates_fences_and_prose(fake: FakeProvider) -> None:
    step = done("finished", cards=False)
    fake.script("TOKEN-R2", [text(f"Sure, here you go:\n```json\n{json.dumps(step)}\n```\nLet me know!")])
    result = await gpt(fake).ainvoke(messages("TOKEN-R2"), agent_output_type())
    assert result.completion.action[0].model_dump(exclude_none=True)["done"]["text"] == "finished"


async def test_responses_none_and_plain_text(fake: FakeProvider) -> None:
    fake.script("TOKEN-R3", [text("Book the earliest train.")])
    result = await gpt(fake, effort="none").ainvoke(messages("TOKEN-R3"))
    assert result.completion == "Book the earliest train."
    body = fake.requests_matching("TOKEN-R3")[0].body or {}
    assert body["reasoning"] == {"effort": "none"}
    assert "<json_schema>" not in body["instructions"]


async def test_responses_summary_rejection_drops_summary_for_good(fake: FakeProvider) -> None:
    fake.script("TOKEN-R4", [Fault.status(400, SUMMARY_REJECTION)], then=structured(done("ok", cards=False)))
    model = gpt(fake, effort="high")
    await model.ainvoke(messages("TOKEN-R4"), agent_output_type())
    await model.ainvoke(messages("TOKEN-R4"), agent_output_type())
    reasoning = [(r.body or {})["reasoning"] for r in fake.requests_matching("TOKEN-R4")]
    assert reasoning == [{"effort": "high", "summary": "auto"}, {"effort": "high"}, {"effort": "high"}]
    assert model.reasoning_summaries is False
    assert gpt(fake, effort="high").reasoning_summaries is True  # a fresh model instance asks again


async def test_responses_other_400s_are_not_swallowed(fake: FakeProvider) -> None:
    fake.script("TOKEN-R5", [Fault.status(400, "Invalid value for 'input'.")])
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the type is checked through classify
        await gpt(fake).ainvoke(messages("TOKEN-R5"), agent_output_type())
    assert (classify(caught.value).kind, classify(caught.value).status_code) == (FailureKind.PROVIDER_ERROR, 400)
    assert len(fake.requests_matching("TOKEN-R5")) == 1


async def test_responses_truncation_raises_with_usage(fake: FakeProvider) -> None:
    fake.script("TOKEN-R6", [Fault.truncated(agent_step(CLICK, cards=False), usage=(900, 8192))])
    reports: list[CallUsage] = []
    model = MeteredChatModel(gpt(fake), resolve_model("gpt-5.6-terra").spec, reports.append)
    with pytest.raises(ModelOutputTruncatedError) as caught:
        await model.ainvoke(messages("TOKEN-R6"), agent_output_type())
    assert classify(caught.value).kind is FailureKind.INVALID_OUTPUT
    assert [(r.input_tokens, r.output_tokens, r.failed) for r in reports] == [(900, 8192, True)]
    assert len(fake.requests_matching("TOKEN-R6")) == 1


# ------------------------------------------------------------------------------------------------- chat style


async def test_chat_style_compat_model_without_key(fake: FakeProvider) -> None:
    settings = fake_settings(fake, OPENAI_API_KEY=None, OPENAI_API_STYLE=None)  # base URL set → chat style
    resolved = resolve_model("openai/qwen3-8b")
    model = build_chat_model(resolved, "default", settings)
    assert isinstance(model, ChatCompletionsModel)
    fake.script("TOKEN-C1", [structured(agent_step(CLICK, cards=False), usage=(700, 40), thinking="ignored")])
    reports: list[CallUsage] = []

    result = await MeteredChatModel(model, resolved.spec, reports.append).ainvoke(
        messages("TOKEN-C1"), agent_output_type()
    )

    assert result.completion.action[0].model_dump(exclude_none=True) == CLICK[0]
    request = fake.requests_matching("TOKEN-C1")[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {COMPAT_PLACEHOLDER_KEY}"
    body = request.body or {}
    assert set(body) == {"model", "messages", "max_tokens"}
    assert (body["model"], body["max_tokens"]) == ("qwen3-8b", 8192)
    assert "<json_schema>" in body["messages"][0]["content"]
    assert reports == [CallUsage("openai/qwen3-8b", 700, 0, 0, 40, Decimal(0))]


async def test_chat_reasoning_effort_dropped_when_rejected(fake: FakeProvider) -> None:
    fake.script(
        "TOKEN-C2",
        [Fault.status(400, "Unrecognized request argument supplied: reasoning_effort")],
        then=structured(done("ok", cards=False)),
    )
    model = ChatCompletionsModel(
        model="local", api_key="k", base_url=fake.openai_base_url, reasoning_effort="low", max_retries=0
    )
    await model.ainvoke(messages("TOKEN-C2"), agent_output_type())
    await model.ainvoke(messages("TOKEN-C2"), agent_output_type())
    efforts = [(r.body or {}).get("reasoning_effort") for r in fake.requests_matching("TOKEN-C2")]
    assert efforts == ["low", None, None]


async def test_chat_style_gpt_model_uses_max_completion_tokens(fake: FakeProvider) -> None:
    settings = fake_settings(fake, OPENAI_API_STYLE="chat")
    model = build_chat_model(resolve_model("gpt-5.6-luna"), "xhigh", settings)
    fake.script("TOKEN-C3", [text("A plain answer.")])
    result = await model.ainvoke(messages("TOKEN-C3"))
    assert result.completion == "A plain answer."
    body = fake.requests_matching("TOKEN-C3")[0].body or {}
    assert (body["max_completion_tokens"], body["reasoning_effort"]) == (20_480, "xhigh")
    assert "max_tokens" not in body
