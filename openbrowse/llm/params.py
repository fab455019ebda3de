"""Reasoning effort → provider request parameters (spec §10.7 wire mapping, §10.8 client timeouts).

Pure functions over the catalog; no SDK objects. ``build_chat_model`` turns these into clients, and the unit
tests pin the table below.

Anthropic (``thinking`` style per catalog):

========== ===================================================== ==========================================
effort     adaptive (Claude 5 family, opus-4-8)                  budget (opus-4-7, opus-4-6, sonnet-4-6)
========== ===================================================== ==========================================
none       ``thinking: {"type": "disabled"}``, max_tokens 16384   ``thinking: {"type": "disabled"}``, 16384
low…max    ``thinking: {"type": "adaptive"}`` +                   ``thinking: {"type": "enabled",
           ``output_config: {"effort": <effort>}``, 16384         "budget_tokens": 2048/8192/16384}``,
                                                                  max_tokens ``max(budget + 8192, 16384)``
========== ===================================================== ==========================================

OpenAI: ``max_output_tokens`` 8192 by default, low 4096, medium 8192, high 12288, xhigh 20480, max 28672; the
reasoning effort is sent as is (``none`` included). ``openai/<id>`` models at ``default`` send no reasoning
parameter at all and get the default budget.

A ``max_tokens`` override (the goal pre-flight's 300) is the budget for the visible answer: when thinking is on
the thinking allowance is added on top (the budget for budget-style models, 8192 for adaptive ones, the effort's
headroom above 4096 for OpenAI), so a tiny override never leaves the model with no room to answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openbrowse.errors import InvalidRequest
from openbrowse.llm.catalog import ModelSpec, Provider

ANTHROPIC_DEFAULT_MAX_TOKENS = 16_384
ANTHROPIC_THINKING_BUDGETS: dict[str, int] = {"low": 2048, "medium": 8192, "high": 16_384}
ANTHROPIC_BUDGET_ANSWER_ROOM = 8192
ANTHROPIC_ADAPTIVE_ANSWER_ROOM = 8192
ANTHROPIC_TIMEOUT_S = 180.0
ANTHROPIC_TRUNCATION_RETRY_MAX_TOKENS = 64_000
ANTHROPIC_TRUNCATION_RETRY_TIMEOUT_S = 600.0
ONE_MILLION_CONTEXT_BETA = "context-1m-2025-08-07"

OPENAI_BASE_OUTPUT_TOKENS = 4096
OPENAI_DEFAULT_OUTPUT_TOKENS = 8192
OPENAI_OUTPUT_TOKENS: dict[str, int] = {
    "low": 4096,
    "medium": 8192,
    "high": 12_288,
    "xhigh": 20_480,
    "max": 28_672,
}
OPENAI_TIMEOUT_S = 90.0
OPENAI_SLOW_TIMEOUT_S = 240.0
OPENAI_SLOW_EFFORTS = frozenset({"high", "xhigh", "max"})

SDK_MAX_RETRIES = 3
TRANSPORT_ERROR_STATUS = 502
"""browser-use's synthetic status for 'no HTTP status': connection errors and SDK timeouts."""

ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class AnthropicParams:
    """What an Anthropic Messages request carries for one model/effort."""

    max_tokens: int
    thinking: dict[str, Any]
    output_config: dict[str, Any] | None
    betas: tuple[str, ...]
    timeout_s: float = ANTHROPIC_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class OpenAIParams:
    """What an OpenAI Responses / Chat Completions request carries for one model/effort."""

    max_output_tokens: int
    reasoning_effort: str | None
    """``None``: send no reasoning parameter at all."""
    timeout_s: float


def concrete_effort(spec: ModelSpec, effort: str | None) -> str:
    """``default``/empty → the model's default effort; anything else must be one the model accepts."""
    value = (effort or "default").strip().lower()
    if value == "default":
        return spec.default_effort
    if value not in spec.accepted_efforts:
        raise InvalidRequest(
            f"reasoningEffort '{value}' is not supported on {spec.id}. "
            f"Valid values: {', '.join(spec.accepted_efforts)}."
        )
    return value


def anthropic_params(
    spec: ModelSpec, effort: str | None, *, max_tokens: int | None = None, one_million_context: bool = False
) -> AnthropicParams:
    if spec.provider is not Provider.ANTHROPIC:
        raise ValueError(f"{spec.id} is not an Anthropic model")
    level = concrete_effort(spec, effort)
    betas = (ONE_MILLION_CONTEXT_BETA,) if one_million_context else ()
    if level == "none":
        return AnthropicParams(
            max_tokens=max_tokens or ANTHROPIC_DEFAULT_MAX_TOKENS,
            thinking={"type": "disabled"},
            output_config=None,
            betas=betas,
        )
    if spec.thinking == "adaptive":
        ceiling = max_tokens + ANTHROPIC_ADAPTIVE_ANSWER_ROOM if max_tokens else ANTHROPIC_DEFAULT_MAX_TOKENS
        return AnthropicParams(
            max_tokens=ceiling, thinking={"type": "adaptive"}, output_config={"effort": level}, betas=betas
        )
    budget = ANTHROPIC_THINKING_BUDGETS[level]
    ceiling = (
        budget + max_tokens if max_tokens else max(budget + ANTHROPIC_BUDGET_ANSWER_ROOM, ANTHROPIC_DEFAULT_MAX_TOKENS)
    )
    return AnthropicParams(
        max_tokens=ceiling, thinking={"type": "enabled", "budget_tokens": budget}, output_config=None, betas=betas
    )


def openai_params(spec: ModelSpec, effort: str | None, *, max_tokens: int | None = None) -> OpenAIParams:
    if spec.provider is Provider.ANTHROPIC:
        raise ValueError(f"{spec.id} is not an OpenAI model")
    level = concrete_effort(spec, effort)
    if spec.provider is Provider.OPENAI_COMPAT and level == "default":
        return OpenAIParams(max_tokens or OPENAI_DEFAULT_OUTPUT_TOKENS, None, OPENAI_TIMEOUT_S)
    budget = OPENAI_OUTPUT_TOKENS.get(level, OPENAI_DEFAULT_OUTPUT_TOKENS)
    if max_tokens:
        headroom = budget - OPENAI_BASE_OUTPUT_TOKENS if level in OPENAI_OUTPUT_TOKENS else 0
        budget = max_tokens + headroom
    timeout = OPENAI_SLOW_TIMEOUT_S if level in OPENAI_SLOW_EFFORTS else OPENAI_TIMEOUT_S
    return OpenAIParams(budget, level, timeout)
