"""Our Claude request bodies, built against browser-use's own: its serializer and the body its ``ChatAnthropic`` sends.

We build Anthropic requests ourselves (``openbrowse/llm/anthropic/wire.py``, ``anthropic.py``) so the server never
imports the SDK, and promise the provider (and its prompt cache) the same JSON browser-use would have sent. This
file holds that promise against the installed browser-use and SDK: the same browser-use message lists go through
``AnthropicMessageSerializer`` and through ``serialize_messages``; and whole calls go through ``ChatAnthropic`` (with
the SDK on a mock transport) and through ``AnthropicChatModel`` (with ``anthropic_http`` on a mock transport), the
bodies compared as they left for the wire. Nothing touches the network.

When this fails after a bump, the side that moved is the one whose output differs from the pinned expectations
in ``tests/unit/llm/test_anthropic_wire.py``: follow browser-use if the change is deliberate upstream, or record it
below as a deliberate difference with its reason.

Deliberate differences (everything else must be equal):

* ``tool_choice`` carries ``disable_parallel_tool_use: true`` on our side. A structured call answers with exactly
  one tool call; a second parallel ``tool_use`` block is what our reply repair would otherwise have to merge.
* Headers other than the API version, key and betas are the client's own (user agent, the SDK's telemetry).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, cast

import httpx
import httpx2  # the Anthropic SDK's HTTP library (a fork of httpx); only its mock transport is used
import pytest
from browser_use.llm.anthropic.chat import ChatAnthropic
from browser_use.llm.anthropic.serializer import AnthropicMessageSerializer
from browser_use.llm.messages import (
    AssistantMessage,
    BaseMessage,
    ContentPartImageParam,
    ContentPartRefusalParam,
    ContentPartTextParam,
    Function,
    ImageURL,
    SystemMessage,
    ToolCall,
    UserMessage,
)
from pydantic import BaseModel

from openbrowse.llm.anthropic import http as anthropic_http
from openbrowse.llm.anthropic.model import AnthropicChatModel
from openbrowse.llm.anthropic.wire import serialize_messages

PNG = "data:image/png;base64,iVBORw0KGgo="


def _calls(*arguments: str) -> list[ToolCall]:
    return [
        ToolCall(id=f"toolu_{index}", function=Function(name="AgentOutput", arguments=args))
        for index, args in enumerate(arguments)
    ]


CONVERSATIONS: dict[str, list[BaseMessage]] = {
    "system and user text": [SystemMessage(content="You are a browser agent."), UserMessage(content="Open the page.")],
    "no system message": [UserMessage(content="Just a question.")],
    "cache-marked system string": [SystemMessage(content="rules", cache=True), UserMessage(content="go")],
    "system as text parts, cache-marked": [
        SystemMessage(
            content=[ContentPartTextParam(text="part one"), ContentPartTextParam(text="part two")], cache=True
        ),
        UserMessage(content="go"),
    ],
    "only the last cache mark survives": [
        SystemMessage(content="rules", cache=True),
        UserMessage(content="first", cache=True),
        AssistantMessage(content="ok", cache=True),
        UserMessage(content="second", cache=True),
        AssistantMessage(content="done"),
    ],
    "user with images of every kind": [
        UserMessage(
            content=[
                ContentPartTextParam(text="The current screenshot:"),
                ContentPartImageParam(image_url=ImageURL(url=PNG)),
                ContentPartImageParam(image_url=ImageURL(url="DATA:Image/JPEG;base64,/9j/4AAQ")),
                ContentPartImageParam(image_url=ImageURL(url="data:image/bmp;base64,Qk0=")),
                ContentPartImageParam(image_url=ImageURL(url="https://example.test/shot.png")),
                ContentPartTextParam(text="What next?"),
            ],
            cache=True,
        )
    ],
    "user image as the last, cache-marked part": [
        UserMessage(
            content=[ContentPartTextParam(text="see"), ContentPartImageParam(image_url=ImageURL(url=PNG))], cache=True
        )
    ],
    "assistant tool calls after text, cache-marked": [
        UserMessage(content="task"),
        AssistantMessage(
            content="I will click.", tool_calls=_calls('{"action": [{"click": {"index": 3}}]}'), cache=True
        ),
        UserMessage(content="clicked"),
    ],
    "assistant tool calls without text, one not JSON": [
        UserMessage(content="task"),
        AssistantMessage(content=None, tool_calls=_calls('{"a": 1}', "not json")),
    ],
    "assistant text parts with a refusal": [
        UserMessage(content="task"),
        AssistantMessage(
            content=[
                ContentPartTextParam(text="one"),
                ContentPartRefusalParam(refusal="no"),
                ContentPartTextParam(text="two"),
            ],
            cache=True,
        ),
    ],
    "empty assistant messages, plain and cache-marked": [
        UserMessage(content="task"),
        AssistantMessage(content=None),
        UserMessage(content="again"),
        AssistantMessage(content="", cache=True),
    ],
    "an agent history": [
        SystemMessage(content="You are a browser agent. Reply with AgentOutput.", cache=True),
        UserMessage(content=[ContentPartTextParam(text="<browser_state>…</browser_state>")], cache=True),
        AssistantMessage(content=None, tool_calls=_calls('{"memory": "opened", "action": [{"navigate": {}}]}')),
        UserMessage(
            content=[ContentPartTextParam(text="<step_2/>"), ContentPartImageParam(image_url=ImageURL(url=PNG))],
            cache=True,
        ),
    ],
}


def _json(value: Any) -> Any:
    """The value as it goes over the wire (the SDK's TypedDicts are plain dicts; this also drops tuples etc.)."""
    return json.loads(json.dumps(value))


@pytest.mark.parametrize("messages", list(CONVERSATIONS.values()), ids=list(CONVERSATIONS))
def test_messages_and_system_serialise_as_browser_use_serialises_them(messages: list[BaseMessage]) -> None:
    theirs_messages, theirs_system = AnthropicMessageSerializer.serialize_messages(messages)
    ours_messages, ours_system = serialize_messages(messages)
    assert ours_messages, "every conversation has at least one non-system message"
    assert _json(ours_messages) == _json(theirs_messages)
    assert _json(ours_system) == _json(theirs_system)


def test_serialising_leaves_the_callers_messages_as_they_were() -> None:
    messages = CONVERSATIONS["only the last cache mark survives"]
    before = [message.model_copy(deep=True) for message in messages]
    serialize_messages(messages)
    AnthropicMessageSerializer.serialize_messages(messages)
    assert messages == before


# -- whole request bodies ---------------------------------------------------------------------------------------------


class Verdict(BaseModel):
    passed: bool
    reason: str


REPLY: dict[str, Any] = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "Verdict", "input": {"passed": True, "reason": "ok"}}],
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "output_tokens": 5},
}
TEXT_REPLY: dict[str, Any] = {
    **REPLY,
    "content": [{"type": "text", "text": "fine"}],
    "stop_reason": "end_turn",
}


class Captured:
    """Requests a mock transport received, answered with a canned Messages reply."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []

    def record(self, url: object, headers: Any, content: bytes) -> None:
        self.requests.append((str(url), {key.lower(): value for key, value in headers.items()}, json.loads(content)))

    def only(self) -> tuple[str, dict[str, str], dict[str, Any]]:
        assert len(self.requests) == 1
        return self.requests[0]


async def _through_browser_use(settings: dict[str, Any], messages: list[BaseMessage], structured: bool) -> Captured:
    captured = Captured(REPLY if structured else TEXT_REPLY)

    def handle(request: httpx2.Request) -> httpx2.Response:
        captured.record(request.url, request.headers, request.content)
        return httpx2.Response(200, json=captured.reply)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handle)) as client:
        # ChatAnthropic annotates ``http_client`` as an httpx client, but the SDK it hands it to takes only httpx2's.
        sdk_client = cast("Any", client)
        model = ChatAnthropic(api_key="sk-ant-test", max_retries=0, http_client=sdk_client, **settings)
        if structured:
            await model.ainvoke(messages, Verdict)
        else:
            await model.ainvoke(messages)
    return captured


async def _through_ours(
    settings: dict[str, Any], messages: list[BaseMessage], structured: bool, monkeypatch: pytest.MonkeyPatch
) -> Captured:
    captured = Captured(REPLY if structured else TEXT_REPLY)

    def handle(request: httpx.Request) -> httpx.Response:
        captured.record(request.url, request.headers, request.content)
        return httpx.Response(200, json=captured.reply)

    @contextlib.asynccontextmanager
    async def mock_client(timeout_s: float) -> AsyncIterator[httpx.AsyncClient]:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handle), timeout=timeout_s) as client:
            yield client

    monkeypatch.setattr(anthropic_http, "http_client", mock_client)
    model = AnthropicChatModel(api_key="sk-ant-test", max_retries=0, **settings)
    if structured:
        await model.ainvoke(messages, Verdict)
    else:
        await model.ainvoke(messages)
    return captured


def _without_deliberate_differences(body: dict[str, Any]) -> dict[str, Any]:
    if "tool_choice" not in body:
        return body
    choice = dict(body["tool_choice"])
    assert choice.pop("disable_parallel_tool_use") is True
    return {**body, "tool_choice": choice}


CALLS: dict[str, tuple[dict[str, Any], bool]] = {
    "text call": ({"model": "claude-sonnet-5"}, False),
    "structured call forces the tool": ({"model": "claude-sonnet-5", "max_tokens": 4096}, True),
    "structured call with thinking lets the model choose": (
        {"model": "claude-sonnet-5", "thinking": {"type": "enabled", "budget_tokens": 2048}, "max_tokens": 16000},
        True,
    ),
    "thinking switched off still forces the tool": (
        {"model": "claude-sonnet-5", "thinking": {"type": "disabled"}},
        True,
    ),
    "adaptive-only model never forces the tool": ({"model": "claude-fable-5", "thinking": {"type": "adaptive"}}, True),
    "betas and output_config": (
        {"model": "claude-sonnet-5", "betas": ["context-1m-2025-08-07"], "output_config": {"effort": "high"}},
        True,
    ),
}


@pytest.mark.parametrize(("settings", "structured"), list(CALLS.values()), ids=list(CALLS))
async def test_whole_request_bodies_match_what_chat_anthropic_sends(
    settings: dict[str, Any], structured: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    messages = CONVERSATIONS["an agent history"]
    their_url, their_headers, theirs = (await _through_browser_use(settings, messages, structured)).only()
    our_url, our_headers, ours = (await _through_ours(settings, messages, structured, monkeypatch)).only()

    assert our_url == their_url
    for header in ("anthropic-version", "anthropic-beta", "x-api-key", "content-type"):
        assert our_headers.get(header) == their_headers.get(header), header
    assert ("tools" in theirs) is structured, "the structured cases must exercise the tool"
    assert _without_deliberate_differences(ours) == theirs
