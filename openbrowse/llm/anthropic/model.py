"""Claude models over the Anthropic Messages API, spoken directly over ``httpx`` (spec §10.6).

A browser-use chat model (a ``chat_model.ChatModel``) that sends what browser-use's ``ChatAnthropic`` sent through
the SDK, without importing the SDK (its import alone was about 66 MiB of the server's memory and over a second of
start-up); ``tests/contract/test_claude_request_bodies.py`` holds the two bodies together. Messages are
serialised by ``anthropic_wire``, sent by ``anthropic_http`` (the SDK's retry policy), streamed by
``anthropic_stream``, read by ``anthropic_reply``. As before:

* structured output is one tool named after the output model (``tools=[{name, input_schema,
  cache_control}]``); ``tool_choice`` forces that tool when thinking is disabled and is ``{"type": "auto"}``
  whenever thinking is on (Anthropic rejects forced tool use with extended thinking), in which case a JSON
  reply written as text is parsed too; ``disable_parallel_tool_use: true`` on every ``tool_choice``;
* ``thinking`` is passed as given and ``output_config`` sent in the body; ``betas`` go in the
  ``anthropic-beta`` header of the same endpoint (``?beta=true``);
* one HTTP client per call, closed afterwards, on the process's shared TLS context;
* a structured reply that stopped at ``max_tokens`` is retried **once**, streaming, with ``max_tokens`` 64 000
  and a 600 s timeout; if that one is truncated too, browser-use's ``ModelOutputTruncatedError`` is raised;
* the reply content is repaired before it is read (``anthropic_repair``: split tool calls merged, leaked
  ``action`` recovered, tool call rendered as text turned back into a ``tool_use`` block);
* usage of every HTTP response of the call is summed (a truncated first attempt is billed too), reported on
  the completion, and attached to the exception when the call fails after the provider answered;
* with a reply listener installed (agent steps, ``llm.streaming``) the request streams and the listener sees
  the reply's text as it arrives;
* errors reach the caller as browser-use's ``ChatAnthropic`` raised them: a 429 as ``ModelRateLimitError``,
  another status as ``ModelProviderError`` with that status, no answer (refused, dropped, timed out) as
  ``ModelProviderError`` with the synthetic 502, anything else as ``ModelProviderError`` from the cause.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from browser_use.llm.exceptions import ModelOutputTruncatedError, ModelProviderError, ModelRateLimitError
from pydantic import BaseModel

from openbrowse.llm.anthropic import http as anthropic_http
from openbrowse.llm.anthropic.repair import repair_content
from openbrowse.llm.anthropic.reply import structured_completion, text_completion
from openbrowse.llm.anthropic.stream import read_message
from openbrowse.llm.anthropic.wire import reply_usage, serialize_messages, structured_tool
from openbrowse.llm.chat_model import ChatModel
from openbrowse.llm.params import (
    ANTHROPIC_DEFAULT_BASE_URL,
    ANTHROPIC_TIMEOUT_S,
    ANTHROPIC_TRUNCATION_RETRY_MAX_TOKENS,
    ANTHROPIC_TRUNCATION_RETRY_TIMEOUT_S,
    SDK_MAX_RETRIES,
)
from openbrowse.llm.provider_errors import (
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderStatusError,
)
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.replies.streaming import current_listener
from openbrowse.llm.usage.metering import attach_usage, sum_usage

if TYPE_CHECKING:
    import httpx
    from browser_use.llm.messages import BaseMessage
    from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_ADAPTIVE_ONLY = ("claude-fable-5", "claude-mythos-5")

Reply = dict[str, Any]
"""A Messages reply as the API sends it (``content`` blocks, ``stop_reason``, ``usage``…)."""


def _total(usages: list[ChatInvokeUsage]) -> ChatInvokeUsage | None:
    total: ChatInvokeUsage | None = None
    for usage in usages:
        total = sum_usage(total, usage)
    return total


@dataclass
class AnthropicChatModel(ChatModel):
    """A Claude model: structured output as one forced tool, truncation retry, reply repair, summed usage."""

    model: str
    max_tokens: int = 8192
    thinking: dict[str, Any] | None = None
    output_config: dict[str, Any] | None = None
    betas: list[str] | None = None
    api_key: str | None = None
    base_url: str = ANTHROPIC_DEFAULT_BASE_URL
    timeout: float = ANTHROPIC_TIMEOUT_S
    max_retries: int = SDK_MAX_RETRIES
    truncation_retry_max_tokens: int = ANTHROPIC_TRUNCATION_RETRY_MAX_TOKENS
    truncation_retry_timeout_s: float = ANTHROPIC_TRUNCATION_RETRY_TIMEOUT_S

    @property
    def provider(self) -> str:
        return "anthropic"

    # -- request ---------------------------------------------------------------------------------------------

    def _adaptive_only(self) -> bool:
        return any(name in self.name.lower() for name in _ADAPTIVE_ONLY)

    def _auto_tool_choice(self) -> bool:
        if self._adaptive_only():
            return True
        return self.thinking is not None and self.thinking.get("type") != "disabled"

    def _body(self, messages: list[BaseMessage], output_format: type[BaseModel] | None) -> dict[str, Any]:
        thinking = self.thinking or {}
        if self._adaptive_only() and (thinking.get("type") in ("enabled", "disabled") or "budget_tokens" in thinking):
            raise ValueError(f"{self.model} only supports adaptive thinking.")
        serialized, system = serialize_messages(messages)
        body: dict[str, Any] = {"model": self.model, "messages": serialized, "max_tokens": self.max_tokens}
        if system:
            body["system"] = system
        if self.thinking is not None:
            body["thinking"] = self.thinking
        if output_format is not None:
            tool = structured_tool(output_format)
            body["tools"] = [tool]
            choice = {"type": "auto"} if self._auto_tool_choice() else {"type": "tool", "name": tool["name"]}
            body["tool_choice"] = {**choice, "disable_parallel_tool_use": True}
        if self.output_config is not None:
            body["output_config"] = self.output_config
        return body

    def _endpoint(self) -> anthropic_http.Endpoint:
        return anthropic_http.Endpoint(
            base_url=self.base_url, api_key=self.api_key, max_retries=self.max_retries, betas=tuple(self.betas or ())
        )

    # -- one HTTP response -----------------------------------------------------------------------------------

    async def _send(self, client: httpx.AsyncClient, body: dict[str, Any], usages: list[ChatInvokeUsage]) -> Reply:
        response = await anthropic_http.send(client, self._endpoint(), body)
        return self._checked(await anthropic_http.read_json(response, self.name), usages)

    async def _stream(
        self,
        client: httpx.AsyncClient,
        body: dict[str, Any],
        usages: list[ChatInvokeUsage],
        timeout_s: float | None = None,
    ) -> Reply:
        streamed = {**body, "stream": True}
        response = await anthropic_http.send(client, self._endpoint(), streamed, stream=True, timeout_s=timeout_s)
        return self._checked(await read_message(response, current_listener(), self.name), usages)

    def _checked(self, message: Any, usages: list[ChatInvokeUsage]) -> Reply:
        """Refuse a body that is not a Messages reply; record the usage of one that is."""
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("content"), list)
            or message.get("usage") is None
        ):
            raise UnusableOutputError(
                f"The provider's response is not an Anthropic Messages object: {str(message)[:200]}", self.name
            )
        usage = reply_usage(message["usage"])
        if usage is not None:
            usages.append(usage)
        return message

    async def _create_message(self, body: dict[str, Any], structured: bool, usages: list[ChatInvokeUsage]) -> Reply:
        async with anthropic_http.http_client(self.timeout) as client:
            first = self._stream if current_listener() is not None else self._send
            message = await first(client, body, usages)
            if structured and message.get("stop_reason") == "max_tokens":
                logger.warning(
                    "%s: reply truncated at max_tokens=%s; retrying once, streaming, with max_tokens=%s",
                    self.name,
                    body.get("max_tokens"),
                    self.truncation_retry_max_tokens,
                )
                retry = {**body, "max_tokens": self.truncation_retry_max_tokens}
                message = await self._stream(client, retry, usages, self.truncation_retry_timeout_s)
        tools = body.get("tools")
        if tools:
            tool = tools[0]
            expects_action = "action" in (tool["input_schema"].get("properties") or {})
            content = repair_content(message["content"], str(tool["name"]), expects_action=expects_action)
            if content != message["content"]:
                logger.info("%s: repaired the shape of a structured reply", self.name)
                message = {**message, "content": content}
        return message

    # -- the call --------------------------------------------------------------------------------------------

    async def _invoke(
        self, messages: list[BaseMessage], output_format: type[T] | None, usages: list[ChatInvokeUsage]
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        try:
            body = self._body(messages, output_format)
            message = await self._create_message(body, output_format is not None, usages)
            usage = reply_usage(message["usage"])
            if output_format is None:
                return text_completion(message, usage)
            if message.get("stop_reason") == "max_tokens":
                raise ModelOutputTruncatedError(
                    message=(
                        f"Model output was truncated at max_tokens={self.max_tokens}; the structured"
                        " output is incomplete. Increase max_tokens or request shorter output."
                    ),
                    model=self.name,
                )
            return structured_completion(message, output_format, usage, auto_tool_choice=self._auto_tool_choice())
        except ProviderConnectionError as exc:
            raise ModelProviderError(message=exc.message, model=self.name) from exc
        except ProviderRateLimitError as exc:
            raise ModelRateLimitError(message=exc.message, model=self.name) from exc
        except ProviderStatusError as exc:
            raise ModelProviderError(message=exc.message, status_code=exc.status_code, model=self.name) from exc
        except ModelProviderError:
            raise
        except Exception as exc:
            raise ModelProviderError(message=str(exc), model=self.name) from exc

    async def _complete(
        self,
        messages: list[BaseMessage],
        output_format: type[T] | None,
        **kwargs: Any,  # noqa: ARG002 - browser-use passes session_id etc.; nothing to forward
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        usages: list[ChatInvokeUsage] = []
        try:
            result = await self._invoke(messages, output_format, usages)
        except ModelProviderError as exc:
            attach_usage(exc, _total(usages))
            raise
        if len(usages) > 1:
            result = result.model_copy(update={"usage": _total(usages)})
        return result
