"""MeteredChatModel reports every call's usage (failed ones too) and stays a browser-use chat model."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, TypeVar

import pytest
from browser_use.llm.base import BaseChatModel
from browser_use.llm.exceptions import ModelOutputTruncatedError
from browser_use.llm.messages import BaseMessage, UserMessage
from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.catalog import MODELS
from openbrowse.llm.chat_model import ChatModel
from openbrowse.llm.usage.costs import CallUsage, CostLedger
from openbrowse.llm.usage.metering import MeteredChatModel, attach_usage, attached_usage, sum_usage

T = TypeVar("T", bound=BaseModel)


def usage(prompt: int, completion: int) -> ChatInvokeUsage:
    return ChatInvokeUsage(
        prompt_tokens=prompt,
        prompt_cached_tokens=None,
        prompt_cache_creation_tokens=None,
        prompt_image_tokens=None,
        completion_tokens=completion,
        total_tokens=prompt + completion,
    )


class Answer(BaseModel):
    value: int


class Scripted(ChatModel):
    """An in-process chat model: returns or raises what it is told, records the kwargs it got."""

    model = "claude-sonnet-5"

    def __init__(self, outcome: ChatInvokeCompletion[Any] | Exception) -> None:
        self.outcome = outcome
        self.kwargs: list[dict[str, Any]] = []

    @property
    def provider(self) -> str:
        return "scripted"

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        self.kwargs.append({"output_format": output_format, **kwargs})
        if isinstance(self.outcome, Exception):
            raise self.outcome
        return self.outcome


SPEC = MODELS["claude-sonnet-5"]  # 2 in / 10 out per million
MESSAGES: list[BaseMessage] = [UserMessage(content="hi")]


async def test_successful_calls_are_reported_with_cost() -> None:
    reports: list[CallUsage] = []
    inner = Scripted(ChatInvokeCompletion(completion=Answer(value=1), usage=usage(1000, 100)))
    metered = MeteredChatModel(inner, SPEC, reports.append, label="agent")
    result = await metered.ainvoke(MESSAGES, Answer, session_id="s1")
    assert result.completion == Answer(value=1)
    assert inner.kwargs == [{"output_format": Answer, "session_id": "s1"}]
    assert reports == [CallUsage("claude-sonnet-5", 1000, 0, 0, 100, Decimal("0.003"), False, "agent")]


async def test_calls_without_usage_are_not_reported() -> None:
    reports: list[CallUsage] = []
    metered = MeteredChatModel(Scripted(ChatInvokeCompletion(completion="x", usage=None)), SPEC, reports.append)
    assert (await metered.ainvoke(MESSAGES)).completion == "x"
    assert reports == []


async def test_failed_call_with_attached_usage_is_reported_and_reraised() -> None:
    error = ModelOutputTruncatedError("truncated", model="m")
    attach_usage(error, usage(2000, 16_384))
    wrapper = RuntimeError("outer")
    wrapper.__cause__ = error
    ledger = CostLedger()
    metered = MeteredChatModel(Scripted(wrapper), SPEC, ledger.record).labelled("judge")
    with pytest.raises(RuntimeError):
        await metered.ainvoke(MESSAGES, Answer)
    assert (ledger.input_tokens, ledger.output_tokens, ledger.calls) == (2000, 16_384, 1)
    assert ledger.total_usd == Decimal("0.16784")


async def test_failed_call_without_usage_reports_nothing() -> None:
    reports: list[CallUsage] = []
    metered = MeteredChatModel(Scripted(ValueError("x")), SPEC, reports.append)
    with pytest.raises(ValueError, match="x"):
        await metered.ainvoke(MESSAGES)
    assert reports == []


async def test_a_failing_callback_never_breaks_the_call(caplog: pytest.LogCaptureFixture) -> None:
    def broken(_: CallUsage) -> None:
        raise RuntimeError("db down")

    metered = MeteredChatModel(Scripted(ChatInvokeCompletion(completion="ok", usage=usage(1, 1))), SPEC, broken)
    assert (await metered.ainvoke(MESSAGES)).completion == "ok"
    assert "Usage callback failed" in caplog.text


def test_it_is_a_browser_use_chat_model() -> None:
    inner = Scripted(ChatInvokeCompletion(completion="x", usage=None))
    metered = MeteredChatModel(inner, SPEC, lambda _: None)
    assert isinstance(metered, BaseChatModel)
    assert (metered.model, metered.provider, metered.name, metered.model_name) == (
        "claude-sonnet-5",
        "scripted",
        "claude-sonnet-5",
        "claude-sonnet-5",
    )


def test_usage_helpers() -> None:
    assert attached_usage(ValueError()) is None
    earlier = ValueError("earlier")
    attach_usage(earlier, usage(1, 1))
    later = RuntimeError("later")
    later.__context__ = earlier  # implicit context is an earlier, already-reported call: not ours
    assert attached_usage(later) is None
    total = sum_usage(usage(10, 1), usage(20, 2))
    assert total is not None
    assert (total.prompt_tokens, total.completion_tokens, total.total_tokens) == (30, 3, 33)
    assert sum_usage(None, usage(1, 1)) == usage(1, 1)
