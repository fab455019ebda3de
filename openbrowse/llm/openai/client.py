"""The call path our two OpenAI-protocol clients share (Responses API and Chat Completions).

Both take the same settings, open one SDK client per call, and retry a request without a parameter the server
refused with a 400 (reasoning summaries, ``reasoning_effort``, ``stream_options``), keeping it off for good.
Subclasses build the body (``request_body``), send it (``_post``), say which refusal they can drop
(``_drop_refused``) and read the reply (``_usage``, ``_read``); this base maps SDK errors to browser-use's, turns
a body that is not JSON into :class:`UnusableOutputError`, and attaches reported usage to a failed read so the
meter still bills it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import openai
from browser_use.llm.exceptions import ModelProviderError
from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.chat_model import ChatModel
from openbrowse.llm.openai.common import make_client, map_sdk_error
from openbrowse.llm.params import (
    OPENAI_DEFAULT_BASE_URL,
    OPENAI_DEFAULT_OUTPUT_TOKENS,
    OPENAI_TIMEOUT_S,
    SDK_MAX_RETRIES,
)
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.usage.metering import attach_usage

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage

T = TypeVar("T", bound=BaseModel)


_REFUSAL_RETRIES = 2
"""At most this many refused parameters are dropped per call (Chat Completions has two that can be)."""


@dataclass
class OpenAIProtocolModel(ChatModel):
    """An OpenAI SDK call; a subclass fills in the body, the send, the droppable refusals and the reading."""

    model: str
    api_key: str
    base_url: str = OPENAI_DEFAULT_BASE_URL
    reasoning_effort: str | None = None
    max_output_tokens: int = OPENAI_DEFAULT_OUTPUT_TOKENS
    timeout_s: float = OPENAI_TIMEOUT_S
    max_retries: int = SDK_MAX_RETRIES

    def request_body(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> dict[str, Any]:
        raise NotImplementedError

    async def _post(self, client: openai.AsyncOpenAI, body: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _drop_refused(self, body: dict[str, Any], exc: openai.BadRequestError) -> bool:
        """Switch off a parameter the server refused; False if the 400 is about something else."""
        raise NotImplementedError

    async def _send(self, body: dict[str, Any]) -> Any:
        client = make_client(
            api_key=self.api_key, base_url=self.base_url, timeout_s=self.timeout_s, max_retries=self.max_retries
        )
        async with client:
            return await self._post(client, body)

    async def _create(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> Any:
        for _ in range(_REFUSAL_RETRIES):
            body = self.request_body(messages, output_format)
            try:
                return await self._send(body)
            except openai.BadRequestError as exc:
                if not self._drop_refused(body, exc):
                    raise
            # retried outside the ``except`` block so a failure of the retry is not chained to the 400
        return await self._send(self.request_body(messages, output_format))

    def _usage(self, response: Any) -> ChatInvokeUsage | None:
        raise NotImplementedError

    def _read(
        self, response: Any, output_format: type[T] | None, usage: ChatInvokeUsage | None
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        raise NotImplementedError

    async def _complete(
        self,
        messages: list[BaseMessage],
        output_format: type[T] | None,
        **kwargs: Any,  # noqa: ARG002 - browser-use passes session_id etc.; nothing to forward
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        try:
            response = await self._create(messages, output_format)
        except openai.OpenAIError as exc:
            raise map_sdk_error(exc, self.model) from exc
        except json.JSONDecodeError as exc:
            raise UnusableOutputError("The provider's response body is not valid JSON.", self.model) from exc
        usage = self._usage(response)
        try:
            return self._read(response, output_format, usage)
        except ModelProviderError as exc:
            attach_usage(exc, usage)
            raise
