"""Reading OpenAI event streams back into the reply objects our two adapters already know how to read.

Responses API: the stream's last event (``response.completed`` / ``response.incomplete`` / ``response.failed``)
carries the whole response object, the same object a non-streamed call returns. Chat Completions: the chunks
are joined into a completion-shaped object (first choice's text, reasoning text, finish reason, the usage chunk
``stream_options.include_usage`` adds). Both hand the reply's text to the listener as it arrives.

A transport failure while reading (a connection cut mid-stream) is re-raised as the SDK's own
``APIConnectionError`` / ``APITimeoutError``, which is what a cut non-streamed request ends in, so error mapping
and classification stay the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import openai
from browser_use.llm.exceptions import ModelProviderError

from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.replies.streaming import ReplyListener, is_timeout, is_transport_error, stream_request

_FINAL_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed"})
STREAM_ERROR_STATUS = 500


def _sdk_error(exc: Exception) -> openai.APIConnectionError:
    request = stream_request(exc)
    if is_timeout(exc):
        return openai.APITimeoutError(request=request)
    return openai.APIConnectionError(message=str(exc) or type(exc).__name__, request=request)


async def streamed_response(stream: Any, listener: ReplyListener, model: str) -> Any:
    """Relay a Responses API event stream; return its final response object."""
    final: Any = None
    try:
        async for event in stream:
            kind = getattr(event, "type", None)
            if kind == "response.created":
                await listener.reply_started()
            elif kind == "response.output_text.delta" and event.delta:
                await listener.reply_text(event.delta)
            elif kind in _FINAL_EVENTS:
                final = event.response
            elif kind == "error":
                message = getattr(event, "message", None) or "The provider reported an error mid-stream."
                raise ModelProviderError(message=message, status_code=STREAM_ERROR_STATUS, model=model)
    except Exception as exc:
        if is_transport_error(exc):
            raise _sdk_error(exc) from exc
        raise
    if final is None:
        raise UnusableOutputError("The provider's event stream ended without a final response.", model)
    return final


@dataclass(slots=True)
class StreamedMessage:
    content: str | None
    reasoning_content: str | None
    model_extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class StreamedChoice:
    message: StreamedMessage
    finish_reason: str | None


@dataclass(slots=True)
class StreamedCompletion:
    """The parts of a chat completion ``ChatCompletionsModel`` reads, rebuilt from its chunks."""

    choices: list[StreamedChoice]
    usage: Any


def _reasoning_delta(delta: Any) -> str | None:
    extra = getattr(delta, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


async def streamed_completion(stream: Any, listener: ReplyListener) -> StreamedCompletion:
    """Relay a Chat Completions chunk stream; return the joined completion."""
    texts: list[str] = []
    reasoning: list[str] = []
    finish: str | None = None
    usage: Any = None
    saw_choice = False
    try:
        async for chunk in stream:
            if getattr(chunk, "usage", None) is not None:
                usage = chunk.usage
            for choice in getattr(chunk, "choices", None) or []:
                if choice.index != 0:
                    continue
                if not saw_choice:
                    saw_choice = True
                    await listener.reply_started()
                delta = choice.delta
                if delta is not None and delta.content:
                    texts.append(delta.content)
                    await listener.reply_text(delta.content)
                if delta is not None and (thought := _reasoning_delta(delta)):
                    reasoning.append(thought)
                finish = choice.finish_reason or finish
    except Exception as exc:
        if is_transport_error(exc):
            raise _sdk_error(exc) from exc
        raise
    if not saw_choice:
        return StreamedCompletion(choices=[], usage=usage)
    message = StreamedMessage(content="".join(texts), reasoning_content="".join(reasoning) or None)
    return StreamedCompletion(choices=[StreamedChoice(message=message, finish_reason=finish)], usage=usage)
