"""Effort → request parameters, and what build_chat_model constructs from Settings."""

from __future__ import annotations

from typing import Any

import pytest
from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage
from pydantic import BaseModel

from openbrowse.config import Settings
from openbrowse.errors import InvalidRequest
from openbrowse.llm.anthropic.model import AnthropicChatModel
from openbrowse.llm.catalog import MODELS, preflight_effort, resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.keys import COMPAT_PLACEHOLDER_KEY, missing_provider_key
from openbrowse.llm.openai.chat import ChatCompletionsModel
from openbrowse.llm.openai.responses import ResponsesChatModel
from openbrowse.llm.params import anthropic_params, openai_params


def settings(**values: Any) -> Settings:
    base: dict[str, Any] = {
        "ANTHROPIC_API_KEY": None,
        "OPENAI_API_KEY": None,
        "ANTHROPIC_BASE_URL": None,
        "OPENAI_BASE_URL": None,
        "OPENAI_API_STYLE": None,
    }
    base.update(values)
    return Settings(**base)


ADAPTIVE = ["claude-sonnet-5", "claude-opus-5", "claude-opus-4-8", "claude-fable-5", "claude-mythos-5"]
BUDGET = ["claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"]


@pytest.mark.parametrize("model", ADAPTIVE)
@pytest.mark.parametrize("effort", ["low", "medium", "high", "xhigh", "max"])
def test_adaptive_thinking_with_effort(model: str, effort: str) -> None:
    params = anthropic_params(MODELS[model], effort)
    assert params.thinking == {"type": "adaptive"}
    assert params.output_config == {"effort": effort}
    assert params.max_tokens == 16_384
    assert params.timeout_s == 180


@pytest.mark.parametrize("model", ["claude-sonnet-5", "claude-opus-5", "claude-opus-4-8", *BUDGET])
def test_none_is_an_explicit_disabled_config(model: str) -> None:
    params = anthropic_params(MODELS[model], "none")
    assert (params.thinking, params.output_config, params.max_tokens) == ({"type": "disabled"}, None, 16_384)


@pytest.mark.parametrize(
    ("effort", "budget", "max_tokens"), [("low", 2048, 16_384), ("medium", 8192, 16_384), ("high", 16_384, 24_576)]
)
@pytest.mark.parametrize("model", BUDGET)
def test_budget_thinking(model: str, effort: str, budget: int, max_tokens: int) -> None:
    params = anthropic_params(MODELS[model], effort)
    assert params.thinking == {"type": "enabled", "budget_tokens": budget}
    assert params.output_config is None
    assert params.max_tokens == max_tokens == max(budget + 8192, 16_384)


@pytest.mark.parametrize(
    ("model", "default_thinking"),
    [
        ("claude-sonnet-5", {"type": "adaptive"}),  # runs at high
        ("claude-opus-5", {"type": "adaptive"}),  # medium
        ("claude-opus-4-8", {"type": "disabled"}),  # none
        ("claude-opus-4-6", {"type": "disabled"}),  # none
    ],
)
def test_default_effort_is_the_models_default(model: str, default_thinking: dict[str, str]) -> None:
    assert anthropic_params(MODELS[model], "default").thinking == default_thinking
    assert anthropic_params(MODELS[model], None).thinking == default_thinking


def test_fable_cannot_disable_thinking() -> None:
    with pytest.raises(InvalidRequest, match="not supported on claude-fable-5"):
        anthropic_params(MODELS["claude-fable-5"], "none")
    with pytest.raises(InvalidRequest):
        anthropic_params(MODELS["claude-opus-4-6"], "xhigh")


def test_max_tokens_override_is_the_answer_budget() -> None:
    assert anthropic_params(MODELS["claude-sonnet-5"], "none", max_tokens=300).max_tokens == 300
    assert anthropic_params(MODELS["claude-fable-5"], "high", max_tokens=300).max_tokens == 300 + 8192
    assert anthropic_params(MODELS["claude-opus-4-6"], "high", max_tokens=300).max_tokens == 300 + 16_384


def test_one_million_context_beta() -> None:
    assert anthropic_params(MODELS["claude-sonnet-5"], "low", one_million_context=True).betas == (
        "context-1m-2025-08-07",
    )
    assert anthropic_params(MODELS["claude-sonnet-5"], "low").betas == ()


@pytest.mark.parametrize(
    ("effort", "budget", "timeout"),
    [
        ("none", 8192, 90),
        ("low", 4096, 90),
        ("medium", 8192, 90),
        ("high", 12_288, 240),
        ("xhigh", 20_480, 240),
        ("max", 28_672, 240),
    ],
)
@pytest.mark.parametrize("model", ["gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna"])
def test_openai_output_budget_and_timeout(model: str, effort: str, budget: int, timeout: int) -> None:
    params = openai_params(MODELS[model], effort)
    assert (params.max_output_tokens, params.reasoning_effort, params.timeout_s) == (budget, effort, timeout)


def test_openai_defaults_and_override() -> None:
    assert openai_params(MODELS["gpt-5.6-terra"], "default").reasoning_effort == "none"
    assert openai_params(MODELS["gpt-5.6-luna"], "default").max_output_tokens == 28_672
    assert openai_params(MODELS["gpt-5.6-terra"], "none", max_tokens=300).max_output_tokens == 300
    assert openai_params(MODELS["gpt-5.6-terra"], "high", max_tokens=300).max_output_tokens == 300 + 8192
    compat = openai_params(resolve_model("openai/llama-test").spec, "default")
    assert (compat.reasoning_effort, compat.max_output_tokens, compat.timeout_s) == (None, 8192, 90)


# ------------------------------------------------------------------------------------------------- factory


def test_missing_provider_key() -> None:
    claude, gpt, compat = (resolve_model(n) for n in ("claude-sonnet-5", "gpt-5.6-terra", "openai/qwen-test"))
    empty = settings()
    assert missing_provider_key(claude, empty) == "ANTHROPIC_API_KEY"
    assert missing_provider_key(gpt, empty) == "OPENAI_API_KEY"
    assert missing_provider_key(compat, empty) == "OPENAI_API_KEY"  # would go to api.openai.com
    local = settings(OPENAI_BASE_URL="http://127.0.0.1:8000/v1")
    assert missing_provider_key(compat, local) is None  # a local vLLM/Ollama needs no key
    assert missing_provider_key(gpt, local) == "OPENAI_API_KEY"
    assert missing_provider_key(claude, settings(ANTHROPIC_API_KEY="k")) is None
    with pytest.raises(InvalidRequest, match="ANTHROPIC_API_KEY is not set"):
        build_chat_model(claude, "default", empty)


def test_anthropic_client_configuration() -> None:
    model = build_chat_model(resolve_model("claude-opus-4.6"), "medium", settings(ANTHROPIC_API_KEY="sk-ant"))
    assert isinstance(model, AnthropicChatModel)
    assert isinstance(model, BaseChatModel)
    assert (model.model, model.api_key, model.base_url) == ("claude-opus-4-6", "sk-ant", "https://api.anthropic.com")
    assert (model.timeout, model.max_retries, model.max_tokens) == (180, 3, 16_384)
    assert model.thinking == {"type": "enabled", "budget_tokens": 8192}
    assert model.output_config is None
    assert model.betas is None
    one_m = build_chat_model(
        resolve_model("claude-sonnet-5[1m]"), "max", settings(ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL="http://x")
    )
    assert isinstance(one_m, AnthropicChatModel)
    assert (one_m.model, one_m.base_url, one_m.betas) == ("claude-sonnet-5", "http://x", ["context-1m-2025-08-07"])
    assert (one_m.thinking, one_m.output_config) == ({"type": "adaptive"}, {"effort": "max"})


def test_openai_responses_client_configuration() -> None:
    model = build_chat_model(resolve_model("gpt-5.6-sol"), "high", settings(OPENAI_API_KEY="sk"))
    assert isinstance(model, ResponsesChatModel)
    assert (model.model, model.api_key, model.base_url) == ("gpt-5.6-sol", "sk", "https://api.openai.com/v1")
    assert (model.reasoning_effort, model.max_output_tokens, model.timeout_s, model.max_retries) == (
        "high",
        12_288,
        240,
        3,
    )


def test_chat_style_and_compat_models() -> None:
    local = settings(OPENAI_BASE_URL="http://127.0.0.1:8000/v1")  # style defaults to chat
    compat = build_chat_model(resolve_model("openai/Qwen/Qwen3-8B"), "default", local)
    assert isinstance(compat, ChatCompletionsModel)
    assert (compat.model, compat.api_key, compat.base_url) == (
        "Qwen/Qwen3-8B",
        COMPAT_PLACEHOLDER_KEY,
        "http://127.0.0.1:8000/v1",
    )
    assert (compat.reasoning_effort, compat.use_max_completion_tokens) == (None, False)
    gpt = build_chat_model(
        resolve_model("gpt-5.6-terra"), "low", settings(OPENAI_API_KEY="k", OPENAI_BASE_URL="http://proxy/v1")
    )
    assert isinstance(gpt, ChatCompletionsModel)
    assert (gpt.reasoning_effort, gpt.use_max_completion_tokens) == ("low", True)
    forced = settings(OPENAI_API_KEY="k", OPENAI_BASE_URL="http://proxy/v1", OPENAI_API_STYLE="responses")
    assert isinstance(build_chat_model(resolve_model("openai/m"), "default", forced), ResponsesChatModel)


def test_preflight_builds_with_reasoning_off_where_possible() -> None:
    keys = settings(ANTHROPIC_API_KEY="k", OPENAI_API_KEY="k")
    for name in MODELS:
        resolved = resolve_model(name)
        model = build_chat_model(resolved, preflight_effort(resolved.spec), keys, max_tokens=300)
        if isinstance(model, AnthropicChatModel):
            expected = {"type": "disabled"} if resolved.spec.can_disable else {"type": "adaptive"}
            assert model.thinking == expected, name
        else:
            assert isinstance(model, ResponsesChatModel)
            assert (model.reasoning_effort, model.max_output_tokens) == ("none", 300)


# ------------------------------------------------------------------------------------------------- request bodies


class Answer(BaseModel):
    city: str
    temperature: int


MESSAGES: list[BaseMessage] = [SystemMessage(content="You are terse."), UserMessage(content="Weather in Oslo?")]


def test_responses_request_body() -> None:
    model = ResponsesChatModel(model="gpt-5.6-terra", api_key="k", reasoning_effort="medium", max_output_tokens=8192)
    body = model.request_body(MESSAGES, Answer)
    assert set(body) == {"model", "input", "instructions", "max_output_tokens", "store", "reasoning"}
    assert body["store"] is False
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["instructions"].startswith("You are terse.")
    assert '"temperature"' in body["instructions"]
    assert "exactly one JSON object" in body["instructions"]
    assert body["input"] == [{"role": "user", "content": "Weather in Oslo?"}]
    assert "tools" not in body
    assert "text" not in body
    assert ResponsesChatModel(model="m", api_key="k", reasoning_effort="none").request_body(MESSAGES, None)[
        "reasoning"
    ] == {"effort": "none"}
    plain = ResponsesChatModel(model="m", api_key="k").request_body(MESSAGES, None)
    assert "reasoning" not in plain
    assert plain["instructions"] == "You are terse."


def test_chat_request_body() -> None:
    model = ChatCompletionsModel(model="llama", api_key="k", reasoning_effort="low")
    body = model.request_body(MESSAGES, Answer)
    assert body["max_tokens"] == 8192
    assert body["reasoning_effort"] == "low"
    assert body["messages"][0]["role"] == "system"
    assert "<json_schema>" in body["messages"][0]["content"]
    assert body["messages"][1] == {"role": "user", "content": "Weather in Oslo?"}
    assert "response_format" not in body
    assert "tools" not in body
    model.send_reasoning_effort = False
    assert "reasoning_effort" not in model.request_body(MESSAGES, None)
    gpt = ChatCompletionsModel(model="gpt", api_key="k", use_max_completion_tokens=True)
    assert "max_completion_tokens" in gpt.request_body(MESSAGES, None)
