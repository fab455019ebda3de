"""Agent-step calls stream when a reply listener is installed, for all three wire formats (spec §11.3).

The parsed reply, the usage and the fault mapping must be what the same call gives without streaming; the
listener sees the reply's JSON text as it arrives, and the code decoder reads the script out of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from browser_use import Tools
from browser_use.agent.views import ActionResult, AgentOutput
from browser_use.llm.base import BaseChatModel
from browser_use.llm.exceptions import ModelProviderError

from openbrowse.agent.code.decoder import CodeDecoder
from openbrowse.agent.tools.run_code import RunCodeParams
from openbrowse.domain.failures import FailureKind
from openbrowse.llm.catalog import resolve_model
from openbrowse.llm.factory import build_chat_model
from openbrowse.llm.failures import classify
from openbrowse.llm.replies.streaming import listening
from openbrowse.llm.usage.costs import CallUsage
from openbrowse.llm.usage.metering import MeteredChatModel
from tests.fakes.llm_script import MalformedMode, run_code, streamed
from tests.fakes.llm_server import FakeProvider, Fault, structured
from tests.integration.llm.helpers import fake_settings, messages, without_retries

SCRIPT = 'rows = await browser.evaluate("document.title")\nprint("caf\u00e9 \\u2713", rows)\n'
WIRES = {
    "anthropic": ("claude-sonnet-5", "none", {}),
    "responses": ("gpt-5.6-terra", "none", {}),
    "chat": ("gpt-5.6-terra", "none", {"OPENAI_API_STYLE": "chat"}),
}


@cache
def agent_output_type() -> type[AgentOutput]:
    """browser-use's AgentOutput with the default actions plus ``run_code_file``."""
    tools: Tools[Any] = Tools()

    @tools.action("Run a script.", param_model=RunCodeParams)
    async def run_code_file(params: RunCodeParams) -> ActionResult:
        return ActionResult(extracted_content=params.name)

    return AgentOutput.type_with_custom_actions(tools.registry.create_action_model())


class Recorder:
    def __init__(self) -> None:
        self.fragments: list[str] = []
        self.starts = 0
        self.decoder = CodeDecoder()
        self.code_seen: list[str] = []

    async def reply_started(self) -> None:
        self.starts += 1
        self.decoder = CodeDecoder()

    async def reply_text(self, fragment: str) -> None:
        self.fragments.append(fragment)
        self.decoder.feed(fragment)
        self.code_seen.append(self.decoder.code)


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as provider:
        yield provider
        assert not provider.errors


def model_for(fake: FakeProvider, wire: str) -> tuple[BaseChatModel, Any]:
    name, effort, overrides = WIRES[wire]
    resolved = resolve_model(name)
    return build_chat_model(resolved, effort, fake_settings(fake, **overrides)), resolved.spec


@pytest.mark.parametrize("wire", list(WIRES))
async def test_streamed_and_plain_calls_give_the_same_reply_and_usage(fake: FakeProvider, wire: str) -> None:
    step = run_code("count", SCRIPT, cards=False)
    fake.script("TOKEN-S", [streamed(step, chunk_delay=0.0, chunk_chars=7, usage=(900, 120))] * 2)
    model, spec = model_for(fake, wire)
    reports: list[CallUsage] = []
    metered = MeteredChatModel(model, spec, reports.append)
    recorder = Recorder()

    with listening(recorder):
        streamed_result = await metered.ainvoke(messages("TOKEN-S"), agent_output_type())
    plain_result = await metered.ainvoke(messages("TOKEN-S"), agent_output_type())

    requests = fake.requests_matching("TOKEN-S")
    assert [r.stream for r in requests] == [True, False]
    assert streamed_result.completion.model_dump() == plain_result.completion.model_dump()
    assert streamed_result.usage == plain_result.usage
    assert [(r.input_tokens, r.output_tokens) for r in reports] == [(900, 120), (900, 120)]
    assert recorder.starts >= 1 and len(recorder.fragments) > 10
    assert recorder.decoder.found and recorder.decoder.name == "count" and recorder.decoder.code == SCRIPT
    partial = [code for code in recorder.code_seen if code and code != SCRIPT]
    assert partial, "the code was only seen complete"
    assert all(SCRIPT.startswith(code) for code in recorder.code_seen)


@pytest.mark.parametrize("wire", list(WIRES))
async def test_a_stream_cut_mid_way_is_classified_like_a_cut_plain_reply(fake: FakeProvider, wire: str) -> None:
    fake.script("TOKEN-CUT", [Fault.stream_cut(times=10)])
    model = without_retries(model_for(fake, wire)[0])
    with listening(Recorder()), pytest.raises(ModelProviderError) as streamed_error:
        await model.ainvoke(messages("TOKEN-CUT"), agent_output_type())
    with pytest.raises(ModelProviderError) as plain_error:
        await model.ainvoke(messages("TOKEN-CUT"), agent_output_type())
    assert classify(streamed_error.value).kind == classify(plain_error.value).kind
    assert classify(streamed_error.value).kind is FailureKind.PROVIDER_CONNECTION_ERROR


@pytest.mark.parametrize("wire", list(WIRES))
async def test_a_status_error_is_the_same_with_a_listener(fake: FakeProvider, wire: str) -> None:
    fake.script("TOKEN-429", [Fault.status(429).forever()])
    model = without_retries(model_for(fake, wire)[0])
    with listening(Recorder()), pytest.raises(ModelProviderError) as error:
        await model.ainvoke(messages("TOKEN-429"), agent_output_type())
    assert classify(error.value).status_code == 429


async def test_text_calls_without_a_listener_do_not_stream(fake: FakeProvider) -> None:
    fake.script("TOKEN-T", [structured(run_code("x", "1", cards=False))])
    model, _ = model_for(fake, "anthropic")
    await model.ainvoke(messages("TOKEN-T"), agent_output_type())
    assert [r.stream for r in fake.requests_matching("TOKEN-T")] == [False]


async def test_a_chat_server_that_refuses_stream_options_streams_without_usage(fake: FakeProvider) -> None:
    step = run_code("x", "print(1)", cards=False)
    fake.script("TOKEN-SO", [Fault.status(400, "Unrecognized request argument supplied: stream_options"), step])
    model = without_retries(model_for(fake, "chat")[0])
    with listening(Recorder()):
        result = await model.ainvoke(messages("TOKEN-SO"), agent_output_type())
    assert result.completion.action[0].model_dump(exclude_unset=True)["run_code_file"]["code"] == "print(1)"
    first, second = fake.requests_matching("TOKEN-SO")
    assert "stream_options" in (first.body or {}) and "stream_options" not in (second.body or {})
    assert second.stream


@pytest.mark.parametrize("wire", list(WIRES))
@pytest.mark.parametrize("mode", ["envelope", "json", "schema"])
async def test_malformed_streams_are_unusable_output_like_malformed_bodies(
    fake: FakeProvider, wire: str, mode: MalformedMode
) -> None:
    fake.script("TOKEN-BAD", [Fault.malformed(mode).forever()])
    model = without_retries(model_for(fake, wire)[0])
    with listening(Recorder()), pytest.raises(ModelProviderError) as streamed_error:
        await model.ainvoke(messages("TOKEN-BAD"), agent_output_type())
    with pytest.raises(ModelProviderError) as plain_error:
        await model.ainvoke(messages("TOKEN-BAD"), agent_output_type())
    assert classify(streamed_error.value).kind is classify(plain_error.value).kind is FailureKind.INVALID_OUTPUT


async def test_a_truncated_reply_and_its_retry_are_decoded_separately(fake: FakeProvider) -> None:
    """Anthropic's truncation retry streams a second reply: the decoder must not append it to the first."""
    step = run_code("long", SCRIPT, cards=False)
    fake.script("TOKEN-TR", [Fault.truncated(content=step), structured(step)])
    model = without_retries(model_for(fake, "anthropic")[0])
    recorder = Recorder()
    with listening(recorder):
        await model.ainvoke(messages("TOKEN-TR"), agent_output_type())
    assert recorder.starts == 2
    assert recorder.decoder.code == SCRIPT
