"""OpenAI models over the Responses API, as a browser-use ``BaseChatModel`` (spec §10.6).

browser-use's ``ChatOpenAI`` speaks Chat Completions with provider-side strict JSON schemas; we want the
Responses API with none of that. Each call sends::

    POST {base_url}/responses
    {"model": <id>, "instructions": <system prompt [+ schema block]>, "input": [<items>],
     "max_output_tokens": <budget>, "store": false,
     "reasoning": {"effort": <effort>, "summary": "auto"}}     # {"effort": "none"} at none; absent at default

No ``tools``, no ``text.format``: the output schema rides in the instructions and the reply is parsed
tolerantly (``parsing.parse_structured``). If the organisation may not receive reasoning summaries (a 400
naming ``summary``), the request is retried without ``summary`` and summaries stay off for the rest of this
model instance. ``status: incomplete`` with reason ``max_output_tokens`` raises browser-use's
``ModelOutputTruncatedError`` (for plain-text calls only when no text came back at all).

With a reply listener installed (agent steps, ``llm.streaming``) the same body is sent with ``stream: true``;
the final ``response`` object of the stream's last event is read exactly like a non-streamed reply.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import openai
from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError
from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.openai.client import OpenAIProtocolModel
from openbrowse.llm.openai.common import error_mentions, responses_usage
from openbrowse.llm.openai.messages import to_responses_input
from openbrowse.llm.openai.streams import streamed_response
from openbrowse.llm.replies.parsing import UnusableOutputError, parse_structured, schema_instruction
from openbrowse.llm.replies.streaming import current_listener

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ResponsesReply:
    """The parts of a Responses API reply we use."""

    text: str
    summary: str | None
    refusal: str | None
    status: str | None
    incomplete_reason: str | None
    error: str | None


def read_reply(response: Any) -> ResponsesReply:
    """Collect output text, reasoning summaries and refusals from ``response.output``."""
    texts: list[str] = []
    summaries: list[str] = []
    refusals: list[str] = []
    for item in getattr(response, "output", None) or []:
        kind = getattr(item, "type", None)
        if kind == "reasoning":
            summaries.extend(part.text for part in getattr(item, "summary", None) or [] if getattr(part, "text", None))
        elif kind == "message":
            for part in getattr(item, "content", None) or []:
                part_kind = getattr(part, "type", None)
                if part_kind == "output_text" and getattr(part, "text", None):
                    texts.append(part.text)
                elif part_kind == "refusal" and getattr(part, "refusal", None):
                    refusals.append(part.refusal)
    details = getattr(response, "incomplete_details", None)
    error = getattr(response, "error", None)
    return ResponsesReply(
        text="".join(texts),
        summary="\n\n".join(summaries) or None,
        refusal="\n".join(refusals) or None,
        status=getattr(response, "status", None),
        incomplete_reason=getattr(details, "reason", None),
        error=getattr(error, "message", None) or (str(error) if error else None),
    )


@dataclass
class ResponsesChatModel(OpenAIProtocolModel):
    """Responses API client. ``reasoning_effort=None`` sends no ``reasoning`` parameter."""

    reasoning_summaries: bool = True
    """Ask for reasoning summaries; switched off for good once the organisation rejects them."""

    @property
    def provider(self) -> str:
        return "openai"

    def _reasoning(self) -> dict[str, Any] | None:
        if self.reasoning_effort is None:
            return None
        if self.reasoning_effort == "none" or not self.reasoning_summaries:
            return {"effort": self.reasoning_effort}
        return {"effort": self.reasoning_effort, "summary": "auto"}

    def request_body(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> dict[str, Any]:
        """The JSON body of one ``POST /responses`` (without the summary fallback applied)."""
        extra = schema_instruction(output_format) if output_format is not None else ""
        instructions, items = to_responses_input(messages, extra)
        body: dict[str, Any] = {
            "model": self.model,
            "input": items,
            "max_output_tokens": self.max_output_tokens,
            "store": False,
        }
        if instructions:
            body["instructions"] = instructions
        reasoning = self._reasoning()
        if reasoning is not None:
            body["reasoning"] = reasoning
        return body

    async def _post(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> Any:
        listener = current_listener()
        if listener is None:
            return await client.responses.create(**body)
        return await streamed_response(await client.responses.create(**body, stream=True), listener, self.model)

    def _drop_refused(self, body: dict[str, Any], exc: openai.BadRequestError) -> bool:
        summary_sent = "summary" in body.get("reasoning", {})
        if not (summary_sent and error_mentions(exc, "summary", "summaries")):
            return False
        self.reasoning_summaries = False
        logger.warning("%s: the organisation rejected reasoning summaries; continuing without them", self.model)
        return True

    def _usage(self, response: Any) -> ChatInvokeUsage | None:
        return responses_usage(getattr(response, "usage", None))

    def _read(
        self, response: Any, output_format: type[T] | None, usage: ChatInvokeUsage | None
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        if not isinstance(getattr(response, "output", None), list):
            raise UnusableOutputError("The provider's response is not a Responses API object.", self.model)
        reply = read_reply(response)
        stop_reason = reply.incomplete_reason or reply.status
        if reply.status == "failed":
            raise ModelProviderError(reply.error or "The response failed.", status_code=500, model=self.model)
        truncated = reply.status == "incomplete" and reply.incomplete_reason == "max_output_tokens"
        if truncated and (output_format is not None or not reply.text.strip()):
            raise ModelOutputTruncatedError(
                f"Model output was truncated at max_output_tokens={self.max_output_tokens}; the reply is incomplete.",
                model=self.model,
            )
        if reply.status == "incomplete" and not truncated:
            raise UnusableOutputError(f"The response is incomplete ({reply.incomplete_reason}).", self.model)
        if output_format is None:
            text = reply.text or (f"[Refusal] {reply.refusal}" if reply.refusal else "")
            return ChatInvokeCompletion(completion=text, thinking=reply.summary, usage=usage, stop_reason=stop_reason)
        if not reply.text.strip() and reply.refusal:
            raise UnusableOutputError(f"The model refused: {reply.refusal}", self.model)
        parsed = parse_structured(reply.text, output_format, model=self.model)
        return ChatInvokeCompletion(completion=parsed, thinking=reply.summary, usage=usage, stop_reason=stop_reason)
