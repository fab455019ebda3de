"""The agent's model wrapper over the real adapters and the fake provider: coercion, corrections, call counts.

Every style (Anthropic Messages, OpenAI Responses, OpenAI-compatible chat) gets at most two corrections per
step; replies that stay unusable end with one short sentence, and usage of every call is still metered.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from browser_use.llm.base import BaseChatModel
from browser_use.llm.exceptions import ModelOutputTruncatedError

from openbrowse.agent.replies.chat import AgentCallLog, AgentChatModel
from openbrowse.domain.failures import FailureKind
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.failures import classify
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.usage.costs import CallUsage
from openbrowse.llm.usage.metering import MeteredChatModel
from tests.fakes.llm_script import (
    Fault,
    action_as_json_string,
    action_in_thinking_block,
    agent_step,
    blank_cards,
    missing_action,
    split_tool_calls,
    structured,
)
from tests.fakes.llm_server import FakeProvider
from tests.integration.llm.helpers import agent_output_type, fake_settings, messages

NAV = [{"navigate": {"url": "https://example.com/", "new_tab": False}}]
STYLES = {
    "anthropic": ("claude-sonnet-5", "responses"),
    "responses": ("gpt-5.6-terra", "responses"),
    "chat": ("gpt-5.6-terra", "chat"),
}


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors


def agent_model(fake: FakeProvider, style: str, reports: list[CallUsage] | None = None) -> AgentChatModel:
    name, api_style = STYLES[style]
    inner: BaseChatModel = build_chat_model(
        resolve_model(name), "high", fake_settings(fake, OPENAI_API_STYLE=api_style)
    )
    if reports is not None:
        inner = MeteredChatModel(inner, resolve_model(name).spec, reports.append)
    return AgentChatModel(inner, AgentCallLog())


def actions(result: Any) -> list[dict[str, Any]]:
    return [action.model_dump(exclude_unset=True) for action in result.completion.action]


@pytest.mark.parametrize("style", STYLES)
async def test_missing_action_gets_two_corrections_then_a_short_error(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R1", [structured(missing_action(agent_step(NAV))).forever()])
    reports: list[CallUsage] = []
    model = agent_model(fake, style, reports)

    with pytest.raises(UnusableOutputError) as caught:
        await model.ainvoke(messages("TOKEN-R1"), agent_output_type())

    requests = fake.requests_matching("TOKEN-R1")
    assert len(requests) == 3
    assert "single tool call" not in requests[0].text
    assert "single tool call" in requests[1].text
    assert "Still no `action` array" in requests[2].text and "single tool call" not in requests[2].text
    message = str(caught.value)
    assert message.endswith("The reply had no `action` list.") and len(message) < 200
    assert classify(caught.value).kind is FailureKind.INVALID_OUTPUT
    assert len(reports) == 3 and all(report.cost_usd > Decimal(0) for report in reports)
    assert model.log.consecutive_errors == 1 and model.log.last_error is caught.value


@pytest.mark.parametrize("style", STYLES)
async def test_a_correction_that_works_ends_the_repair(fake: FakeProvider, style: str) -> None:
    wrong = agent_step({"navigate": {"url": "https://example.com/", "new_tab": "sometimes"}})
    fake.script("TOKEN-R2", [wrong, agent_step(NAV)])
    result = await agent_model(fake, style).ainvoke(messages("TOKEN-R2"), agent_output_type())
    assert actions(result) == NAV
    requests = fake.requests_matching("TOKEN-R2")
    assert len(requests) == 2
    assert "Argument `new_tab` of `navigate` must be a boolean in JSON, not a string." in requests[1].text


@pytest.mark.parametrize("style", STYLES)
async def test_action_as_a_json_string_needs_no_retry(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R3", [action_as_json_string(agent_step(NAV))])
    result = await agent_model(fake, style).ainvoke(messages("TOKEN-R3"), agent_output_type())
    assert actions(result) == NAV
    assert len(fake.requests_matching("TOKEN-R3")) == 1


@pytest.mark.parametrize("style", STYLES)
async def test_split_reply_is_merged(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R4", [split_tool_calls(agent_step(NAV, memory="kept"))])
    result = await agent_model(fake, style).ainvoke(messages("TOKEN-R4"), agent_output_type())
    assert actions(result) == NAV and result.completion.memory == "kept"
    assert len(fake.requests_matching("TOKEN-R4")) == 1


async def test_anthropic_action_in_the_thinking_block_is_recovered(fake: FakeProvider) -> None:
    fake.script("TOKEN-R5", [action_in_thinking_block(agent_step(NAV))])
    result = await agent_model(fake, "anthropic").ainvoke(messages("TOKEN-R5"), agent_output_type())
    assert actions(result) == NAV
    assert len(fake.requests_matching("TOKEN-R5")) == 1


@pytest.mark.parametrize("style", STYLES)
async def test_blank_cards_are_asked_for_twice_then_accepted(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R6", [structured(blank_cards(agent_step(NAV))).forever()])
    result = await agent_model(fake, style).ainvoke(messages("TOKEN-R6"), agent_output_type())
    assert actions(result) == NAV
    requests = fake.requests_matching("TOKEN-R6")
    assert len(requests) == 3
    assert all("left every narrative field blank" in request.text for request in requests[1:])


@pytest.mark.parametrize("style", STYLES)
async def test_truncation_is_not_corrected(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R7", [Fault.truncated().forever()])
    with pytest.raises(ModelOutputTruncatedError):
        await agent_model(fake, style).ainvoke(messages("TOKEN-R7"), agent_output_type())
    requests = fake.requests_matching("TOKEN-R7")
    if style == "anthropic":
        assert [r.stream for r in requests] == [False, True]
        assert (requests[1].body or {})["max_tokens"] == 64_000
    else:
        assert len(requests) == 1


@pytest.mark.parametrize("style", STYLES)
async def test_a_body_that_is_not_json_is_retried_with_a_correction(fake: FakeProvider, style: str) -> None:
    fake.script("TOKEN-R8", [Fault.malformed("json"), agent_step(NAV)])
    result = await agent_model(fake, style).ainvoke(messages("TOKEN-R8"), agent_output_type())
    assert actions(result) == NAV
    requests = fake.requests_matching("TOKEN-R8")
    assert len(requests) == 2 and "not a JSON object" in requests[1].text
