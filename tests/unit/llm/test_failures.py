"""classify() against real exception instances (OpenAI SDK; our Anthropic client's), wrapped the way they reach
the run loop."""

from __future__ import annotations

import json
from typing import Any

import httpx
import httpx2
import openai
import pytest
from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError, ModelRateLimitError
from pydantic import BaseModel, ValidationError

from openbrowse.domain.failures import FailureKind
from openbrowse.llm.anthropic.http import status_error
from openbrowse.llm.failures import classify, is_provider_failure
from openbrowse.llm.provider_errors import (
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderStatusError,
    ProviderTimeoutError,
)
from openbrowse.llm.replies.parsing import UnusableOutputError

OPENAI_URL = "https://api.openai.com/v1/responses"


def _response(status: int, body: dict[str, Any], url: str) -> httpx2.Response:
    # The SDKs talk through httpx2 (a fork of httpx); their exceptions carry httpx2 objects.
    return httpx2.Response(status, json=body, request=httpx2.Request("POST", url))


def openai_status(cls: type[openai.APIStatusError], status: int, message: str = "boom") -> openai.APIStatusError:
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
    return cls(f"Error code: {status} - {body}", response=_response(status, body, OPENAI_URL), body=body["error"])


def anthropic_status(status: int, kind: str = "api_error", message: str = "boom") -> ProviderStatusError:
    """What our Anthropic client raises for an error answer (``ProviderRateLimitError`` for a 429)."""
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return status_error(status, json.dumps(body), {"request-id": "req_1"})


def raised(outer: BaseException, inner: BaseException) -> BaseException:
    """``outer`` as raised by ``raise outer from inner`` (real chaining, traceback and all)."""
    try:
        try:
            raise inner
        except BaseException as caught:
            raise outer from caught
    except BaseException as result:
        return result


def wrapped(inner: BaseException, *outers: BaseException) -> BaseException:
    """``inner`` wrapped by each of ``outers`` in turn (innermost first)."""
    current = inner
    for outer in outers:
        current = raised(outer, current)
    return current


def as_browser_use(sdk_exc: Exception) -> ModelProviderError:
    """The ModelProviderError browser-use's ChatOpenAI/ChatAnthropic raise for an SDK exception."""
    if isinstance(sdk_exc, openai.RateLimitError | ProviderRateLimitError):
        return ModelRateLimitError(message=sdk_exc.message, model="m")
    if isinstance(sdk_exc, openai.APIStatusError | ProviderStatusError):
        return ModelProviderError(message=sdk_exc.message, status_code=sdk_exc.status_code, model="m")
    return ModelProviderError(message=str(sdk_exc), model="m")  # connection errors: synthetic 502


def through_the_stack(sdk_exc: Exception) -> BaseException:
    """SDK error → browser-use wrapper → a RuntimeError from our run code."""
    return wrapped(sdk_exc, as_browser_use(sdk_exc), RuntimeError("the agent run failed"))


OPENAI_REQUEST = httpx2.Request("POST", OPENAI_URL)


@pytest.mark.parametrize(
    ("sdk_exc", "kind", "status"),
    [
        (openai_status(openai.RateLimitError, 429), FailureKind.PROVIDER_RATE_LIMIT, 429),
        (anthropic_status(429, "rate_limit_error"), FailureKind.PROVIDER_RATE_LIMIT, 429),
        (openai_status(openai.InternalServerError, 500), FailureKind.PROVIDER_SERVER_ERROR, 500),
        (openai_status(openai.InternalServerError, 503), FailureKind.PROVIDER_SERVER_ERROR, 503),
        (anthropic_status(500), FailureKind.PROVIDER_SERVER_ERROR, 500),
        (anthropic_status(529, "overloaded_error"), FailureKind.PROVIDER_SERVER_ERROR, 529),
        (
            anthropic_status(504, "timeout_error", "Request timed out"),
            FailureKind.PROVIDER_TIMEOUT,
            504,
        ),
        (openai_status(openai.BadRequestError, 400), FailureKind.PROVIDER_ERROR, 400),
        (openai_status(openai.AuthenticationError, 401), FailureKind.PROVIDER_ERROR, 401),
        (anthropic_status(403, "permission_error"), FailureKind.PROVIDER_ERROR, 403),
        (openai_status(openai.NotFoundError, 404), FailureKind.PROVIDER_ERROR, 404),
        (anthropic_status(413, "request_too_large"), FailureKind.PROVIDER_ERROR, 413),
        (openai.APITimeoutError(request=OPENAI_REQUEST), FailureKind.PROVIDER_TIMEOUT, None),
        (ProviderTimeoutError(), FailureKind.PROVIDER_TIMEOUT, None),
        (openai.APIConnectionError(request=OPENAI_REQUEST), FailureKind.PROVIDER_CONNECTION_ERROR, None),
        (ProviderConnectionError(), FailureKind.PROVIDER_CONNECTION_ERROR, None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
def test_sdk_errors_through_browser_use_and_a_runtime_error(
    sdk_exc: Exception, kind: FailureKind, status: int | None
) -> None:
    for exc in (sdk_exc, as_browser_use(sdk_exc), through_the_stack(sdk_exc)):
        failure = classify(exc)
        assert (failure.kind, failure.status_code) == (kind, status), exc
    assert is_provider_failure(through_the_stack(sdk_exc))


def test_sdk_timeout_with_its_httpx2_cause_is_a_timeout_not_a_connection_error() -> None:
    # What the SDK really raises: APITimeoutError (a subclass of APIConnectionError) from httpx2.ReadTimeout.
    timeout = wrapped(httpx2.ReadTimeout("read timed out"), openai.APITimeoutError(request=OPENAI_REQUEST))
    failure = classify(wrapped(timeout, ModelProviderError("Request timed out.", model="m"), RuntimeError("x")))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_TIMEOUT, None)


def test_connection_refused_chain_is_a_connection_error() -> None:
    refused = wrapped(httpx.ConnectError("[Errno 111] Connection refused"), ProviderConnectionError())
    failure = classify(wrapped(refused, ModelProviderError("Connection error.", model="m")))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_CONNECTION_ERROR, None)


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (httpx.ReadTimeout("timed out"), FailureKind.PROVIDER_TIMEOUT),
        (httpx.ConnectTimeout("timed out"), FailureKind.PROVIDER_TIMEOUT),
        (httpx2.PoolTimeout("timed out"), FailureKind.PROVIDER_TIMEOUT),
        (httpx.ConnectError("refused"), FailureKind.PROVIDER_CONNECTION_ERROR),
        (
            httpx2.RemoteProtocolError("Server disconnected without sending a response."),
            FailureKind.PROVIDER_CONNECTION_ERROR,
        ),
    ],
)
def test_raw_httpx_and_httpx2_transport_errors(exc: Exception, kind: FailureKind) -> None:
    assert classify(wrapped(exc, RuntimeError("x"))).kind is kind


def test_browser_use_synthetic_connection_error_without_cause() -> None:
    failure = classify(ModelProviderError("Connection error.", model="m"))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_CONNECTION_ERROR, None)


def test_provider_error_text_saying_timeout() -> None:
    failure = classify(ModelProviderError("Request timed out.", model="m"))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_TIMEOUT, None)
    # a 400 that merely mentions a timeout parameter stays a provider error
    assert classify(ModelProviderError("invalid value for timeout", status_code=400)).kind is FailureKind.PROVIDER_ERROR


def test_rate_limit_keeps_a_non_429_status() -> None:
    failure = classify(ModelRateLimitError("slow down", status_code=503))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_RATE_LIMIT, 503)


def test_httpx2_status_error() -> None:
    response = _response(502, {"error": "bad gateway"}, OPENAI_URL)
    exc = httpx2.HTTPStatusError("bad gateway", request=response.request, response=response)
    failure = classify(wrapped(exc, RuntimeError("x")))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_SERVER_ERROR, 502)


class Shape(BaseModel):
    action: list[int]


def _validation_error() -> ValidationError:
    try:
        Shape.model_validate({"action": "nope"})
    except ValidationError as exc:
        return exc
    raise AssertionError("unreachable")


@pytest.mark.parametrize(
    "exc",
    [
        ModelOutputTruncatedError("truncated at max_tokens", model="m"),
        UnusableOutputError("no JSON object", "m"),
        wrapped(_validation_error(), ModelProviderError("1 validation error for AgentOutput", model="m")),
        wrapped(
            ValueError("Expected tool use in response but none found"),
            ModelProviderError("Expected tool use in response but none found", model="m"),
        ),
        ModelProviderError("Unexpected response type from Anthropic API: str. Response: <html>", model="m"),
        ModelProviderError("Failed to parse structured output from model response", status_code=500, model="m"),
        wrapped(ModelOutputTruncatedError("truncated", model="m"), RuntimeError("step failed")),
    ],
    ids=["truncated", "unusable", "validation", "no-tool-use", "unexpected-type", "parse-500", "wrapped-truncated"],
)
def test_unusable_output_is_invalid_output(exc: BaseException) -> None:
    failure = classify(exc)
    assert (failure.kind, failure.status_code) == (FailureKind.INVALID_OUTPUT, None)
    assert not is_provider_failure(exc)


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("boom"),
        ValueError("bad value"),
        KeyError("k"),
        TimeoutError("Step 3 timed out after 520 seconds"),
        wrapped(TypeError("bug"), ModelProviderError("bug", model="m")),  # browser-use wrapping a local bug
    ],
)
def test_everything_else_is_agent_failure(exc: BaseException) -> None:
    failure = classify(exc)
    assert (failure.kind, failure.status_code) == (FailureKind.AGENT_FAILURE, None)
    assert failure.message
    assert not is_provider_failure(exc)


def test_agent_llm_call_timeout_is_a_provider_timeout() -> None:
    exc = TimeoutError("LLM call timed out after 180 seconds. Keep your thinking and output short.")
    assert classify(exc).kind is FailureKind.PROVIDER_TIMEOUT


def test_exception_groups_are_searched() -> None:
    rate = through_the_stack(openai_status(openai.RateLimitError, 429))
    group = BaseExceptionGroup("run", [ValueError("unrelated"), rate])
    failure = classify(wrapped(group, RuntimeError("outer")))
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_RATE_LIMIT, 429)


def test_implicit_context_of_a_bare_wrapper_is_followed() -> None:
    sdk = anthropic_status(529, "overloaded_error")
    try:
        try:
            raise sdk
        except ProviderStatusError:
            raise RuntimeError("wrapper without from")  # noqa: B904 - the sloppy wrapper under test
    except RuntimeError as exc:
        failure = classify(exc)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_SERVER_ERROR, 529)


def test_a_new_provider_error_raised_while_handling_an_old_one_wins() -> None:
    old = openai_status(openai.BadRequestError, 400)
    new = openai_status(openai.RateLimitError, 429)
    try:
        try:
            raise old
        except openai.BadRequestError:
            raise new  # noqa: B904 - e.g. a retry inside an except block failing differently
    except openai.RateLimitError as exc:
        failure = classify(exc)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_RATE_LIMIT, 429)


def _hide_rate_limit() -> None:
    try:
        raise openai_status(openai.RateLimitError, 429)
    except openai.RateLimitError:
        raise RuntimeError("hidden") from None


def test_from_none_hides_the_context() -> None:
    with pytest.raises(RuntimeError) as caught:
        _hide_rate_limit()
    assert classify(caught.value).kind is FailureKind.AGENT_FAILURE


def test_message_names_the_original_exception_and_is_bounded() -> None:
    failure = classify(through_the_stack(openai_status(openai.InternalServerError, 500, "x" * 1000)))
    assert failure.message.startswith("InternalServerError: ")
    assert len(failure.message) <= 300


def test_cycles_do_not_hang() -> None:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert classify(a).kind is FailureKind.AGENT_FAILURE
