"""Build the chat model for a resolved model and effort (spec §10.1 step 1, §10.7, §10.8).

=====================  ==================================================================================
model                  client
=====================  ==================================================================================
``claude-*``           :class:`~openbrowse.llm.anthropic.model.AnthropicChatModel` (the Messages API over httpx,
                       no SDK) on ``ANTHROPIC_BASE_URL``; ``[1m]`` adds the 1M-context beta header
``gpt-*``              :class:`~openbrowse.llm.openai.responses.ResponsesChatModel` on ``OPENAI_BASE_URL``,
                       or :class:`~openbrowse.llm.openai.chat.ChatCompletionsModel` when the API style is
                       ``chat``
``openai/<id>``        the same two, by ``Settings.openai_api_style`` (``chat`` by default when
                       ``OPENAI_BASE_URL`` is set); no key needed against a custom base URL
=====================  ==================================================================================

Each provider's adapter is imported with the first model of that provider: the OpenAI one brings the OpenAI SDK
(about 12 MiB of the server's memory); the Claude one imports no SDK at all (the Anthropic SDK alone was about
65 MiB).

Keys and base URLs are always passed explicitly (the provider default when unset), so no client ever falls back
to reading ``ANTHROPIC_*``/``OPENAI_*`` from the process environment behind ``Settings``' back. Timeouts:
Anthropic 180 s; OpenAI 90 s, 240 s at high/xhigh/max; 3 retries everywhere (the SDKs' policy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openbrowse.errors import InvalidRequest
from openbrowse.llm.catalog import Provider, ResolvedModel
from openbrowse.llm.keys import COMPAT_PLACEHOLDER_KEY, missing_provider_key
from openbrowse.llm.params import (
    ANTHROPIC_DEFAULT_BASE_URL,
    OPENAI_DEFAULT_BASE_URL,
    SDK_MAX_RETRIES,
    anthropic_params,
    openai_params,
)

if TYPE_CHECKING:
    from browser_use.llm.base import BaseChatModel

    from openbrowse.config import Settings
    from openbrowse.llm.anthropic.model import AnthropicChatModel
    from openbrowse.llm.openai.chat import ChatCompletionsModel
    from openbrowse.llm.openai.responses import ResponsesChatModel


def provider_modules(settings: Settings) -> tuple[str, ...]:
    """Our adapters (and so the SDKs) of the providers this server can use: those with a key or a base URL."""
    modules: list[str] = []
    if settings.ANTHROPIC_API_KEY:
        modules.append("openbrowse.llm.anthropic.model")
    if settings.OPENAI_API_KEY or settings.OPENAI_BASE_URL:
        modules += ["openbrowse.llm.openai.chat", "openbrowse.llm.openai.responses"]
    return tuple(modules)


def _require_key(resolved: ResolvedModel, settings: Settings) -> None:
    missing = missing_provider_key(resolved, settings)
    if missing is not None:
        raise InvalidRequest(f"{missing} is not set; it is required for model {resolved.llm_id}.")


def build_chat_model(
    resolved: ResolvedModel, effort: str, settings: Settings, *, max_tokens: int | None = None
) -> BaseChatModel:
    """A browser-use chat model for ``resolved`` at ``effort`` (``default`` = the model's default).

    ``max_tokens`` overrides the answer budget (the goal pre-flight uses 300; see ``params`` for how a thinking
    allowance is added on top). Raises :class:`InvalidRequest` when the provider key is missing or the effort
    is not one the model accepts.
    """
    _require_key(resolved, settings)
    if resolved.provider is Provider.ANTHROPIC:
        return _build_anthropic(resolved, effort, settings, max_tokens)
    return _build_openai(resolved, effort, settings, max_tokens)


def _build_anthropic(
    resolved: ResolvedModel, effort: str, settings: Settings, max_tokens: int | None
) -> AnthropicChatModel:
    from openbrowse.llm.anthropic.model import AnthropicChatModel

    params = anthropic_params(
        resolved.spec, effort, max_tokens=max_tokens, one_million_context=resolved.one_million_context
    )
    return AnthropicChatModel(
        model=resolved.wire_name,
        max_tokens=params.max_tokens,
        thinking=dict(params.thinking),
        output_config=dict(params.output_config) if params.output_config is not None else None,
        betas=list(params.betas) or None,
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL or ANTHROPIC_DEFAULT_BASE_URL,
        timeout=settings.PROVIDER_TIMEOUT or params.timeout_s,
        max_retries=SDK_MAX_RETRIES,
    )


def _build_openai(
    resolved: ResolvedModel, effort: str, settings: Settings, max_tokens: int | None
) -> ResponsesChatModel | ChatCompletionsModel:
    from openbrowse.llm.openai.chat import ChatCompletionsModel
    from openbrowse.llm.openai.responses import ResponsesChatModel

    params = openai_params(resolved.spec, effort, max_tokens=max_tokens)
    api_key = settings.OPENAI_API_KEY or COMPAT_PLACEHOLDER_KEY
    base_url = settings.OPENAI_BASE_URL or OPENAI_DEFAULT_BASE_URL
    if settings.openai_api_style == "chat":
        return ChatCompletionsModel(
            model=resolved.wire_name,
            api_key=api_key,
            base_url=base_url,
            reasoning_effort=params.reasoning_effort,
            max_output_tokens=params.max_output_tokens,
            timeout_s=settings.PROVIDER_TIMEOUT or params.timeout_s,
            max_retries=SDK_MAX_RETRIES,
            use_max_completion_tokens=resolved.provider is Provider.OPENAI,
        )
    return ResponsesChatModel(
        model=resolved.wire_name,
        api_key=api_key,
        base_url=base_url,
        reasoning_effort=params.reasoning_effort,
        max_output_tokens=params.max_output_tokens,
        timeout_s=settings.PROVIDER_TIMEOUT or params.timeout_s,
        max_retries=SDK_MAX_RETRIES,
    )
