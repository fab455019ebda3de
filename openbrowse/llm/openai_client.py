"""The call path our two OpenAI-protocol clients share (Responses API and Chat Completions).

Subclasses build and send the request (``_create``, which may retry once without a parameter the server
refuses) and read the reply (``_usage``, ``_read``); this base maps SDK errors to browser-use's, turns a body
that is not JSON into :class:`UnusableOutputError`, and attaches reported usage to a failed read so the meter
still bills it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TypeVar, overload

import openai
from browser_use.llm.base import BaseChatModel
from browser_use.llm.exceptions import ModelProviderError
from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.metering import attach_usage
from openbrowse.llm.openai_common import map_sdk_error
from openbrowse.llm.parsing import UnusableOutputError

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage

T = TypeVar("T", bound=BaseModel)


class OpenAIProtocolModel(BaseChatModel):
    model: str

    async def _create(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> Any:
        raise NotImplementedError

    def _usage(self, response: Any) -> ChatInvokeUsage | None:
        raise NotImplementedError

    def _read(
        self, response: Any, output_format: type[T] | None, usage: ChatInvokeUsage | None
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        raise NotImplementedError

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: None = None, **kwargs: Any
    ) -> ChatInvokeCompletion[str]: ...

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: type[T], **kwargs: Any
    ) -> ChatInvokeCompletion[T]: ...

    async def ainvoke(
        self,
        messages: list[BaseMessage],
        output_format: type[T] | None = None,
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
