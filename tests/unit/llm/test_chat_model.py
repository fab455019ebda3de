"""The shared chat-model base: every call reaches ``_complete``; a wrapper presents itself as the model it wraps."""

from __future__ import annotations

from typing import Any, TypeVar

import pytest
from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, UserMessage
from browser_use.llm.views import ChatInvokeCompletion
from pydantic import BaseModel

from openbrowse.llm.anthropic.model import AnthropicChatModel
from openbrowse.llm.catalog import MODELS
from openbrowse.llm.chat_model import ChatModel, ChatModelWrapper
from openbrowse.llm.openai.chat import ChatCompletionsModel
from openbrowse.llm.openai.responses import ResponsesChatModel
from openbrowse.llm.usage.metering import MeteredChatModel

T = TypeVar("T", bound=BaseModel)

MESSAGES: list[BaseMessage] = [UserMessage(content="hi")]


class Answer(BaseModel):
    value: int


class Echo(ChatModel):
    """Answers ``Answer(value=7)`` or the text ``"echo"``, and records what each call asked for."""

    def __init__(self, model: str = "echo-1") -> None:
        self.model = model
        self.calls: list[tuple[type[BaseModel] | None, dict[str, Any]]] = []

    @property
    def provider(self) -> str:
        return "echo"

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        self.calls.append((output_format, kwargs))
        if output_format is None:
            return ChatInvokeCompletion(completion="echo", usage=None)
        return ChatInvokeCompletion(completion=output_format.model_validate({"value": 7}), usage=None)


class Shouting(ChatModelWrapper):
    """A wrapper that changes only the text of plain replies."""

    async def _complete(
        self, messages: list[BaseMessage], output_format: type[T] | None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        result = await self._call_inner(messages, output_format, **kwargs)
        if isinstance(result.completion, str):
            return ChatInvokeCompletion(completion=result.completion.upper(), usage=result.usage)
        return result


async def test_text_and_structured_calls_both_reach_complete_with_their_kwargs() -> None:
    model = Echo()
    text = await model.ainvoke(MESSAGES, session_id="s1")
    structured = await model.ainvoke(MESSAGES, Answer)
    assert text.completion == "echo"
    assert structured.completion == Answer(value=7)
    assert model.calls == [(None, {"session_id": "s1"}), (Answer, {})]
    assert model.name == "echo-1"


async def test_a_wrapper_presents_the_inner_model_and_forwards_every_call() -> None:
    inner = Echo("echo-2")
    wrapper = Shouting(inner)
    assert (wrapper.provider, wrapper.name, wrapper.model) == ("echo", "echo-2", "echo-2")
    assert (await wrapper.ainvoke(MESSAGES, session_id="s2")).completion == "ECHO"
    assert (await wrapper.ainvoke(MESSAGES, Answer)).completion == Answer(value=7)
    assert inner.calls == [(None, {"session_id": "s2"}), (Answer, {})]


async def test_an_unwrapped_subclass_without_complete_says_so() -> None:
    class Unfinished(ChatModel):
        model = "unfinished"

        @property
        def provider(self) -> str:
            return "none"

    with pytest.raises(NotImplementedError):
        await Unfinished().ainvoke(MESSAGES)


def test_every_model_and_wrapper_we_build_is_a_browser_use_chat_model() -> None:
    claude = AnthropicChatModel(model="claude-sonnet-5")
    models: list[ChatModel] = [
        claude,
        ResponsesChatModel(model="gpt-5", api_key="sk-test"),
        ChatCompletionsModel(model="local", api_key="sk-test", provider_name="vllm"),
        MeteredChatModel(claude, MODELS["claude-sonnet-5"], lambda usage: None),
    ]
    for model in models:
        assert isinstance(model, BaseChatModel)
    assert [(model.provider, model.name) for model in models] == [
        ("anthropic", "claude-sonnet-5"),
        ("openai", "gpt-5"),
        ("vllm", "local"),
        ("anthropic", "claude-sonnet-5"),
    ]
