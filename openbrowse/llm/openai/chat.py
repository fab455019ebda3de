"""OpenAI-compatible servers over ``/chat/completions`` (``OPENAI_API_STYLE=chat``; spec §10.6, our choice).

For local vLLM / Ollama / LiteLLM endpoints that lack the Responses API. Each call sends::

    POST {base_url}/chat/completions
    {"model": <id>, "messages": [{"role": "system", "content": <system prompt [+ schema block]>}, ...],
     "max_tokens": <budget>,                 # "max_completion_tokens" for OpenAI's own gpt-* models
     "reasoning_effort": <effort>}           # only when an effort is configured, and only while accepted

No ``response_format`` and no tools (many compatible servers support neither); the schema rides in the system
prompt and the reply is parsed tolerantly. A 400 that names ``reasoning_effort`` means the model does not take
it: the request is retried without it, and it stays off for this model instance. Reasoning text that some
servers return beside the answer (``reasoning_content`` / ``reasoning``) becomes ``thinking``.

With a reply listener installed (agent steps, ``llm.streaming``) the request streams (``stream: true`` with
``stream_options.include_usage``); the chunks are put back together into one completion that is read exactly
like a non-streamed one.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import openai
from browser_use.llm.exceptions import ModelOutputTruncatedError
from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.openai.client import OpenAIProtocolModel
from openbrowse.llm.openai.common import chat_usage, error_mentions
from openbrowse.llm.openai.messages import to_chat_messages
from openbrowse.llm.openai.streams import streamed_completion
from openbrowse.llm.replies.parsing import UnusableOutputError, parse_structured, schema_instruction
from openbrowse.llm.replies.streaming import current_listener

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


def _reasoning_text(message: Any) -> str | None:
    for attr in ("reasoning_content", "reasoning"):
        value = getattr(message, attr, None)
        if value is None:
            extra = getattr(message, "model_extra", None) or {}
            value = extra.get(attr)
        if isinstance(value, str) and value.strip():
            return value
    return None


@dataclass
class ChatCompletionsModel(OpenAIProtocolModel):
    """Chat Completions client with schema-in-prompt structured output."""

    use_max_completion_tokens: bool = False
    """OpenAI's own reasoning models refuse ``max_tokens``; most compatible servers only know ``max_tokens``."""
    send_reasoning_effort: bool = True
    """Switched off for good once the server rejects ``reasoning_effort``."""
    stream_usage: bool = True
    """Streamed calls ask for a usage chunk (``stream_options``); off for good once the server rejects that."""
    provider_name: str = "openai"

    @property
    def provider(self) -> str:
        return self.provider_name

    def request_body(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> dict[str, Any]:
        extra = schema_instruction(output_format) if output_format is not None else ""
        body: dict[str, Any] = {"model": self.model, "messages": to_chat_messages(messages, extra)}
        body["max_completion_tokens" if self.use_max_completion_tokens else "max_tokens"] = self.max_output_tokens
        if self.reasoning_effort is not None and self.send_reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        return body

    async def _post(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> Any:
        listener = current_listener()
        if listener is None:
            return await client.chat.completions.create(**body)
        streaming = {**body, "stream": True}
        if self.stream_usage:
            streaming["stream_options"] = {"include_usage": True}
        stream = await client.chat.completions.create(**streaming)
        return await streamed_completion(stream, listener)

    def _drop_refused(self, body: dict[str, Any], exc: openai.BadRequestError) -> bool:
        if "reasoning_effort" in body and error_mentions(exc, "reasoning_effort", "reasoning effort"):
            self.send_reasoning_effort = False
            logger.warning("%s: the server does not accept reasoning_effort; continuing without it", self.model)
            return True
        if current_listener() is not None and self.stream_usage and error_mentions(exc, "stream_options"):
            self.stream_usage = False
            logger.warning("%s: the server does not accept stream_options; streaming without usage", self.model)
            return True
        return False

    def _usage(self, response: Any) -> ChatInvokeUsage | None:
        return chat_usage(getattr(response, "usage", None))

    def _read(
        self, response: Any, output_format: type[T] | None, usage: ChatInvokeUsage | None
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        choices = getattr(response, "choices", None)
        if not choices:
            raise UnusableOutputError("The chat completion has no choices.", self.model)
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = getattr(message, "content", None) or ""
        finish_reason = getattr(choice, "finish_reason", None)
        thinking = _reasoning_text(message)
        if finish_reason == "length" and (output_format is not None or not text.strip()):
            raise ModelOutputTruncatedError(
                f"Model output was truncated at {self.max_output_tokens} tokens; the reply is incomplete.",
                model=self.model,
            )
        if output_format is None:
            return ChatInvokeCompletion(completion=text, thinking=thinking, usage=usage, stop_reason=finish_reason)
        parsed = parse_structured(text, output_format, model=self.model)
        return ChatInvokeCompletion(completion=parsed, thinking=thinking, usage=usage, stop_reason=finish_reason)
