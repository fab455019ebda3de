"""Exception → ``Failure`` (spec §15.2): which provider fault, if any, ended a run.

Exceptions reach the run loop wrapped: the SDK error (or, for Claude, our own ``provider_errors``, since the
Anthropic client speaks HTTP itself) inside browser-use's ``ModelProviderError`` inside
whatever the agent raised, sometimes inside an ``ExceptionGroup``. :func:`classify` walks ``__cause__``
(else an unsuppressed ``__context__`` of a bare wrapper) and group members, picks the **original** exception
(the deepest one it can read) and maps it most-specific-first, in the manner of httpx's
``map_httpcore_exceptions``:

1. rate limit — ``RateLimitError`` / ``ProviderRateLimitError`` / ``ModelRateLimitError`` / status 429 →
   ``provider_rate_limit``
   (code 429 unless the error carries another);
2. timeout — ``openai.APITimeoutError``, our ``ProviderTimeoutError``, ``httpx``/``httpx2``
   ``TimeoutException``, tested *before* connection errors because they subclass them; or a provider error
   whose text says it timed out (status ``None``/408/5xx only), or the agent's "LLM call timed out" →
   ``provider_timeout`` with the status if there is one;
3. no connection — ``APIConnectionError``, ``ProviderConnectionError``, ``httpx``/``httpx2`` transport errors,
   browser-use's
   ``ModelProviderError('Connection error.')`` with its synthetic 502 → ``provider_connection_error``,
   no status;
4. provider 5xx (Anthropic's 529 overloaded included) → ``provider_server_error`` with the status;
5. any other provider status (400/401/403/404/413/422…) → ``provider_error`` with the status;
6. unusable output — ``ModelOutputTruncatedError``, our ``UnusableOutputError``, SDK response-validation
   errors, browser-use's synthetic "unexpected response" errors, or a ``ModelProviderError`` that merely
   wraps a local parse/validation error (``ValidationError``/``ValueError``) → ``invalid_output``;
7. anything else → ``agent_failure``.

The OpenAI SDK sends requests through ``httpx2`` (a fork of httpx with its own exception classes), our Anthropic
client through ``httpx``, so transport errors are recognised by class name within both modules.
"""

from __future__ import annotations

import re
import sys

from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError, ModelRateLimitError
from pydantic import ValidationError

from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.llm.params import TRANSPORT_ERROR_STATUS
from openbrowse.llm.provider_errors import (
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderStatusError,
    ProviderTimeoutError,
)
from openbrowse.llm.replies.parsing import UnusableOutputError

_PROVIDER_KINDS = frozenset(
    {
        FailureKind.PROVIDER_RATE_LIMIT,
        FailureKind.PROVIDER_TIMEOUT,
        FailureKind.PROVIDER_CONNECTION_ERROR,
        FailureKind.PROVIDER_SERVER_ERROR,
        FailureKind.PROVIDER_ERROR,
    }
)
_TIMEOUT_TEXT = re.compile(r"time[ds]?[ -]?out|timed out|deadline exceeded", re.IGNORECASE)
_CONNECTION_TEXT = re.compile(r"^connection error\.?$|could not connect|connection refused", re.IGNORECASE)
_LLM_CALL_TIMEOUT = "LLM call timed out"
_UNUSABLE_RESPONSE_PREFIXES = (
    "Unexpected response type from Anthropic API",
    "Invalid OpenAI chat completion response",
    "Failed to parse structured output from model response",
    "Expected tool use in response but none found",
)
_MAX_MESSAGE = 300
_SDKS = ("openai",)


def _sdk_errors(name: str) -> tuple[type[BaseException], ...]:
    """The SDK exception classes called ``name``, of the provider SDKs loaded so far.

    The OpenAI SDK is imported only when an OpenAI model is first built: if it never was, it raised nothing.
    """
    return tuple(getattr(sys.modules[sdk], name) for sdk in _SDKS if sdk in sys.modules)


def _httpx_family(exc: BaseException, *names: str) -> bool:
    """True if ``exc`` is an httpx or httpx2 exception whose class (or a base class) is one of ``names``."""
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] in ("httpx", "httpx2") and cls.__name__ in names:
            return True
    return False


def _status_of(exc: BaseException) -> int | None:
    if isinstance(exc, (ProviderStatusError, *_sdk_errors("APIStatusError"))):
        code = getattr(exc, "status_code", None)
        return code if isinstance(code, int) else None
    if _httpx_family(exc, "HTTPStatusError"):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        return status if isinstance(status, int) else None
    return None


def _text(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc)


def _failure(kind: FailureKind, status: int | None, exc: BaseException) -> Failure:
    text = " ".join(_text(exc).split())
    message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return Failure(kind, status, message[:_MAX_MESSAGE])


def _by_status(status: int, exc: BaseException) -> Failure:
    if status == 429:
        return _failure(FailureKind.PROVIDER_RATE_LIMIT, status, exc)
    if (status == 408 or status >= 500) and _TIMEOUT_TEXT.search(_text(exc)):
        return _failure(FailureKind.PROVIDER_TIMEOUT, status, exc)
    if status >= 500:
        return _failure(FailureKind.PROVIDER_SERVER_ERROR, status, exc)
    return _failure(FailureKind.PROVIDER_ERROR, status, exc)


def _classify_model_provider_error(exc: ModelProviderError) -> Failure | None:
    if isinstance(exc, ModelRateLimitError):
        return _failure(FailureKind.PROVIDER_RATE_LIMIT, exc.status_code or 429, exc)
    if isinstance(exc, ModelOutputTruncatedError | UnusableOutputError) or exc.message.startswith(
        _UNUSABLE_RESPONSE_PREFIXES
    ):
        return _failure(FailureKind.INVALID_OUTPUT, None, exc)
    cause = exc.__cause__
    if cause is not None and _classify_one(cause) is None:
        # browser-use's catch-all ``raise ModelProviderError(str(e)) from e`` around a local error: a reply that
        # failed to parse/validate is unusable output; anything else is our own failure, not the provider's.
        if isinstance(cause, ValidationError | ValueError):
            return _failure(FailureKind.INVALID_OUTPUT, None, exc)
        return None
    if exc.status_code == TRANSPORT_ERROR_STATUS or exc.status_code is None:
        if _TIMEOUT_TEXT.search(exc.message):
            return _failure(FailureKind.PROVIDER_TIMEOUT, None, exc)
        if _CONNECTION_TEXT.search(exc.message.strip()):
            return _failure(FailureKind.PROVIDER_CONNECTION_ERROR, None, exc)
    return _by_status(exc.status_code, exc)


def _classify_one(exc: BaseException) -> Failure | None:
    """The failure ``exc`` itself stands for, or ``None`` if it says nothing about the provider."""
    if isinstance(exc, (ProviderRateLimitError, *_sdk_errors("RateLimitError"))):
        return _failure(FailureKind.PROVIDER_RATE_LIMIT, 429, exc)
    if isinstance(exc, (ProviderTimeoutError, *_sdk_errors("APITimeoutError"))) or _httpx_family(
        exc, "TimeoutException"
    ):
        return _failure(FailureKind.PROVIDER_TIMEOUT, None, exc)
    if isinstance(exc, (ProviderConnectionError, *_sdk_errors("APIConnectionError"))) or _httpx_family(
        exc, "TransportError"
    ):
        return _failure(FailureKind.PROVIDER_CONNECTION_ERROR, None, exc)
    if isinstance(exc, _sdk_errors("APIResponseValidationError")):
        return _failure(FailureKind.INVALID_OUTPUT, None, exc)
    if isinstance(exc, ModelProviderError):
        return _classify_model_provider_error(exc)
    status = _status_of(exc)
    if status is not None:
        return _by_status(status, exc)
    if isinstance(exc, TimeoutError) and str(exc).startswith(_LLM_CALL_TIMEOUT):
        return _failure(FailureKind.PROVIDER_TIMEOUT, None, exc)
    return None


def classify(exc: BaseException) -> Failure:
    """The ``Failure`` a run ending in ``exc`` is recorded with (never raises).

    Walks depth-first from ``exc`` through group members, ``__cause__`` (explicit ``raise … from``) and, where
    there is none, an unsuppressed ``__context__``. The deepest exception that says something about the provider
    wins. An implicit ``__context__`` is only followed out of an exception that says nothing by itself (a bare
    wrapper raised inside ``except``): a recognised error raised while another was being handled is a *new*
    failure, not a wrapper of the old one.
    """
    best: tuple[int, Failure] | None = None
    seen: set[int] = set()
    stack: list[tuple[int, BaseException]] = [(0, exc)]
    while stack:
        depth, current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        failure = _classify_one(current)
        if failure is not None and (best is None or depth > best[0]):
            best = (depth, failure)
        children: list[BaseException] = []
        if isinstance(current, BaseExceptionGroup):
            children.extend(current.exceptions)
        if current.__cause__ is not None:
            children.append(current.__cause__)
        elif current.__context__ is not None and not current.__suppress_context__ and failure is None:
            children.append(current.__context__)
        stack.extend((depth + 1, child) for child in reversed(children))
    if best is not None:
        return best[1]
    return _failure(FailureKind.AGENT_FAILURE, None, exc)


def is_provider_failure(exc: BaseException) -> bool:
    """True when ``exc`` (anywhere in its chain) is a provider fault rather than an agent or output problem."""
    return classify(exc).kind in _PROVIDER_KINDS
