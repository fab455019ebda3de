"""Reading Anthropic event streams without the SDK, and the retry/error rules of the HTTP layer."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from openbrowse.llm.anthropic.http import retry_delay, should_retry, status_error
from openbrowse.llm.anthropic.stream import read_message
from openbrowse.llm.provider_errors import ProviderRateLimitError, ProviderStatusError
from openbrowse.llm.replies.parsing import UnusableOutputError


def sse(*events: tuple[str, Any]) -> httpx.Response:
    body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())


FIRST_USAGE = {"input_tokens": 9, "output_tokens": 1}
START = ("message_start", {"type": "message_start", "message": {"id": "m", "content": [], "usage": FIRST_USAGE}})


class Recorder:
    def __init__(self) -> None:
        self.seen: list[str] = []

    async def reply_started(self) -> None:
        self.seen.append("<start>")

    async def reply_text(self, fragment: str) -> None:
        self.seen.append(fragment)


async def test_events_fold_into_one_message_and_the_listener_sees_the_text() -> None:
    tool = {"type": "tool_use", "id": "t", "name": "AgentOutput", "input": {}}
    response = sse(
        START,
        ("ping", {"type": "ping"}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1, "content_block": tool}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"a": '},
            },
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "1}"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}},
        ),
        ("message_stop", {"type": "message_stop"}),
    )
    listener = Recorder()
    message = await read_message(response, listener, "m")
    assert message["content"] == [{"type": "thinking", "thinking": "hm"}, {**tool, "input": {"a": 1}}]
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {"input_tokens": 9, "output_tokens": 42}
    assert listener.seen == ["<start>", '{"a": ', "1}"]


@pytest.mark.parametrize(
    ("kind", "cls", "status"),
    [
        ("overloaded_error", ProviderStatusError, 529),
        ("rate_limit_error", ProviderRateLimitError, 429),
        ("api_error", ProviderStatusError, 500),
        ("something_new", ProviderStatusError, 500),
    ],
)
async def test_an_error_event_raises_the_status_of_its_type(kind: str, cls: type[Exception], status: int) -> None:
    error = {"type": "error", "error": {"type": kind, "message": "busy"}}
    with pytest.raises(cls) as caught:
        await read_message(sse(START, ("error", error)), None, "m")
    assert isinstance(caught.value, ProviderStatusError)
    assert caught.value.status_code == status


@pytest.mark.parametrize(
    "events",
    [
        [("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})],
        [
            START,
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}},
            ),
        ],
        [START, START],
        [],
    ],
    ids=["no-start", "unknown-block", "two-starts", "empty"],
)
async def test_a_stream_that_is_not_a_messages_stream_is_unusable(events: list[tuple[str, Any]]) -> None:
    with pytest.raises(UnusableOutputError):
        await read_message(sse(*events), None, "m")


async def test_a_reply_that_is_not_an_event_stream_is_unusable() -> None:
    response = httpx.Response(200, headers={"content-type": "application/json"}, content=b"{}")
    with pytest.raises(UnusableOutputError):
        await read_message(response, None, "m")


def test_status_errors_carry_the_sdk_message() -> None:
    error = status_error(429, '{"type": "error"}', {})
    assert isinstance(error, ProviderRateLimitError)
    assert (error.status_code, error.message) == (429, "Error code: 429 - {'type': 'error'}")
    assert status_error(502, "<html>bad gateway</html>", {}).message == "<html>bad gateway</html>"
    assert status_error(503, "", {}).message == "Error code: 503"


def test_retry_policy() -> None:
    def answer(status: int, **headers: str) -> httpx.Response:
        return httpx.Response(status, headers=headers)

    assert [should_retry(answer(code)) for code in (400, 401, 408, 409, 429, 500, 529)] == [
        False,
        False,
        True,
        True,
        True,
        True,
        True,
    ]
    assert should_retry(answer(400, **{"x-should-retry": "true"}))
    assert not should_retry(answer(529, **{"x-should-retry": "false"}))
    assert retry_delay(0, {"retry-after-ms": "250"}) == 0.25
    assert retry_delay(0, {"retry-after": "2"}) == 2.0
    assert 0.375 <= retry_delay(0, {"retry-after": "0"}) <= 0.5
    assert 6.0 <= retry_delay(10) <= 8.0
