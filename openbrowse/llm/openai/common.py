"""Plumbing shared by our two OpenAI adapters: client construction, SDK error mapping, usage conversion.

Error mapping mirrors browser-use's ``ChatOpenAI`` so the agent treats our adapters exactly like its own
clients: ``RateLimitError`` → ``ModelRateLimitError`` (429); other status errors → ``ModelProviderError``
with the HTTP status; transport failures (connection refused/dropped, SDK timeouts) → ``ModelProviderError``
with browser-use's synthetic 502; a response the SDK could not validate → ``UnusableOutputError``. The SDK
exception is always kept as ``__cause__`` (callers ``raise mapped from exc``), which is what
``failures.classify`` reads.
"""

from __future__ import annotations

from typing import Any

import openai
from browser_use.llm.exceptions import ModelProviderError, ModelRateLimitError
from browser_use.llm.views import ChatInvokeUsage

from openbrowse.llm.params import TRANSPORT_ERROR_STATUS
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.tls import shared_ssl_context


def make_client(*, api_key: str, base_url: str, timeout_s: float, max_retries: int) -> openai.AsyncOpenAI:
    """A fresh client; used as ``async with`` per call so its connection pool is always closed."""
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        timeout=timeout_s,
        max_retries=max_retries,
        http_client=openai.DefaultAsyncHttpxClient(verify=shared_ssl_context()),
    )


def map_sdk_error(exc: Exception, model: str) -> ModelProviderError:
    """The browser-use exception to raise (``from exc``) for an OpenAI SDK exception."""
    if isinstance(exc, openai.RateLimitError):
        return ModelRateLimitError(message=exc.message, model=model)
    if isinstance(exc, openai.APIResponseValidationError):
        return UnusableOutputError(f"The provider's response could not be read: {exc.message}", model)
    if isinstance(exc, openai.APIStatusError):
        return ModelProviderError(message=exc.message, status_code=exc.status_code, model=model)
    if isinstance(exc, openai.APIConnectionError):
        return ModelProviderError(message=exc.message, status_code=TRANSPORT_ERROR_STATUS, model=model)
    return ModelProviderError(message=str(exc) or type(exc).__name__, status_code=TRANSPORT_ERROR_STATUS, model=model)


def error_mentions(exc: openai.APIStatusError, *needles: str) -> bool:
    """True when the error's param, message or body mentions any of ``needles`` (case-insensitive)."""
    haystack = " ".join(str(part) for part in (exc.param, exc.message, exc.body) if part).lower()
    return any(needle.lower() in haystack for needle in needles)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def responses_usage(usage: Any) -> ChatInvokeUsage | None:
    """Responses API ``usage`` → ``ChatInvokeUsage`` (``prompt_tokens`` includes cached tokens and writes)."""
    if usage is None:
        return None
    details = getattr(usage, "input_tokens_details", None)
    prompt = _int(getattr(usage, "input_tokens", None)) or 0
    completion = _int(getattr(usage, "output_tokens", None)) or 0
    return ChatInvokeUsage(
        prompt_tokens=prompt,
        prompt_cached_tokens=_int(getattr(details, "cached_tokens", None)),
        prompt_cache_creation_tokens=_int(getattr(details, "cache_write_tokens", None)),
        prompt_image_tokens=None,
        completion_tokens=completion,
        total_tokens=_int(getattr(usage, "total_tokens", None)) or prompt + completion,
    )


def chat_usage(usage: Any) -> ChatInvokeUsage | None:
    """Chat Completions ``usage`` → ``ChatInvokeUsage`` (``prompt_tokens`` includes cached tokens)."""
    if usage is None:
        return None
    details = getattr(usage, "prompt_tokens_details", None)
    prompt = _int(getattr(usage, "prompt_tokens", None)) or 0
    completion = _int(getattr(usage, "completion_tokens", None)) or 0
    return ChatInvokeUsage(
        prompt_tokens=prompt,
        prompt_cached_tokens=_int(getattr(details, "cached_tokens", None)),
        prompt_cache_creation_tokens=None,
        prompt_image_tokens=None,
        completion_tokens=completion,
        total_tokens=_int(getattr(usage, "total_tokens", None)) or prompt + completion,
    )
