"""Every provider fault, over real HTTP, surfaces as an exception classify() maps to the right kind and code."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
from browser_use.llm.base import BaseChatModel

from openbrowse.domain.failures import Failure, FailureKind
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.failures import classify, is_provider_failure
from tests.fakes.llm_script import MalformedMode
from tests.fakes.llm_server import FakeProvider, Fault
from tests.integration.llm.helpers import agent_output_type, fake_settings, messages, without_retries

CLIENTS = {
    "anthropic": ("claude-sonnet-5", "responses"),
    "responses": ("gpt-5.6-terra", "responses"),
    "chat": ("openai/local-model", "chat"),
}
TIMEOUT_FIELD = {"anthropic": "timeout", "responses": "timeout_s", "chat": "timeout_s"}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider


def client(fake: FakeProvider, api: str, **changes: Any) -> BaseChatModel:
    name, style = CLIENTS[api]
    model = build_chat_model(resolve_model(name), "default", fake_settings(fake, OPENAI_API_STYLE=style))
    return without_retries(model, **changes)


async def raised_by(model: BaseChatModel, token: str) -> BaseException:
    with pytest.raises(Exception) as caught:  # noqa: PT011 - what matters is how it classifies
        await model.ainvoke(messages(token), agent_output_type())
    return caught.value


async def failure_of(model: BaseChatModel, token: str) -> Failure:
    return classify(await raised_by(model, token))


STATUS_CASES = [
    (429, FailureKind.PROVIDER_RATE_LIMIT, 429),
    (500, FailureKind.PROVIDER_SERVER_ERROR, 500),
    (503, FailureKind.PROVIDER_SERVER_ERROR, 503),
    (529, FailureKind.PROVIDER_SERVER_ERROR, 529),
    (400, FailureKind.PROVIDER_ERROR, 400),
    (401, FailureKind.PROVIDER_ERROR, 401),
    (403, FailureKind.PROVIDER_ERROR, 403),
    (404, FailureKind.PROVIDER_ERROR, 404),
]


@pytest.mark.parametrize("api", list(CLIENTS))
@pytest.mark.parametrize(("status", "kind", "code"), STATUS_CASES)
async def test_http_status_faults(fake: FakeProvider, api: str, status: int, kind: FailureKind, code: int) -> None:
    token = f"TOKEN-S{status}-{api}"
    fake.script(token, [Fault.status(status)])
    exc = await raised_by(client(fake, api), token)
    failure = classify(exc)
    assert (failure.kind, failure.status_code) == (kind, code)
    assert is_provider_failure(exc)


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_gateway_timeout_text_is_a_timeout(fake: FakeProvider, api: str) -> None:
    token = f"TOKEN-504-{api}"
    fake.script(token, [Fault.status(504, "Request timed out")])
    failure = await failure_of(client(fake, api), token)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_TIMEOUT, 504)


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_hang_is_a_timeout(fake: FakeProvider, api: str) -> None:
    token = f"TOKEN-HANG-{api}"
    fake.script(token, [Fault.hang()])
    failure = await failure_of(client(fake, api, **{TIMEOUT_FIELD[api]: 0.5}), token)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_TIMEOUT, None)


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_dropped_connection_is_a_connection_error(fake: FakeProvider, api: str) -> None:
    token = f"TOKEN-DROP-{api}"
    fake.script(token, [Fault.drop()])
    failure = await failure_of(client(fake, api), token)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_CONNECTION_ERROR, None)


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_refused_connection_is_a_connection_error(api: str) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nowhere = FakeProvider(start=False)
    nowhere.port = port
    failure = await failure_of(client(nowhere, api), "TOKEN-REFUSED")
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_CONNECTION_ERROR, None)


@pytest.mark.parametrize("api", list(CLIENTS))
@pytest.mark.parametrize("mode", ["json", "envelope", "schema"])
async def test_malformed_replies_are_invalid_output(fake: FakeProvider, api: str, mode: MalformedMode) -> None:
    token = f"TOKEN-MAL-{mode}-{api}"
    fake.script(token, [Fault.malformed(mode)])
    failure = await failure_of(client(fake, api), token)
    assert (failure.kind, failure.status_code) == (FailureKind.INVALID_OUTPUT, None)


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_truncation_is_invalid_output(fake: FakeProvider, api: str) -> None:
    token = f"TOKEN-TRUNC-{api}"
    fake.script(token, [Fault.truncated().forever()])
    failure = await failure_of(client(fake, api), token)
    assert (failure.kind, failure.status_code) == (FailureKind.INVALID_OUTPUT, None)
    expected_requests = 2 if api == "anthropic" else 1  # Anthropic retries once with 64k, streaming
    assert len(fake.requests_matching(token)) == expected_requests


@pytest.mark.parametrize("api", list(CLIENTS))
async def test_cut_body_is_a_connection_error(fake: FakeProvider, api: str) -> None:
    token = f"TOKEN-CUT-{api}"
    fake.script(token, [Fault.stream_cut()])
    failure = await failure_of(client(fake, api), token)
    assert (failure.kind, failure.status_code) == (FailureKind.PROVIDER_CONNECTION_ERROR, None)
