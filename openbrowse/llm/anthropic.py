"""Claude models: browser-use's ``ChatAnthropic`` plus our extras (spec §10.6).

What browser-use already does and we rely on: structured output as one tool named after the output model
(``tools=[{name, input_schema, cache_control}]``); ``tool_choice`` forced to that tool when thinking is
disabled, and ``{"type": "auto"}`` whenever thinking is on (Anthropic rejects forced tool use with extended
thinking), in which case a JSON reply written as text is parsed too; ``thinking`` passed as given and
``output_config`` sent in the body (``extra_body``); ``betas`` switch to ``client.beta.messages``.

What this subclass adds, all inside ``_create_message`` (the single place browser-use sends a request):

* ``disable_parallel_tool_use: true`` on every ``tool_choice``;
* one client per call, closed afterwards (browser-use leaves a connection pool behind per call);
* a structured reply that stopped at ``max_tokens`` is retried **once**, streaming, with ``max_tokens`` 64 000
  and a 600 s timeout; if that one is truncated too, browser-use raises ``ModelOutputTruncatedError``;
* the reply content is repaired before browser-use parses it (``anthropic_repair``: split tool calls merged,
  leaked ``action`` recovered, tool call rendered as text turned back into a ``tool_use`` block);
* usage of every HTTP response of the call is summed (a truncated first attempt is billed too), reported on
  the completion, and attached to the exception when the call fails after the provider answered.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anthropic
from browser_use.llm.anthropic.chat import ChatAnthropic
from browser_use.llm.exceptions import ModelProviderError
from pydantic import BaseModel

from openbrowse.llm.anthropic_repair import repair_content
from openbrowse.llm.metering import attach_usage, sum_usage
from openbrowse.llm.params import ANTHROPIC_TRUNCATION_RETRY_MAX_TOKENS, ANTHROPIC_TRUNCATION_RETRY_TIMEOUT_S
from openbrowse.llm.parsing import UnusableOutputError
from openbrowse.llm.streaming import ReplyListener, current_listener, is_timeout, is_transport_error, stream_request
from openbrowse.llm.tls import shared_ssl_context

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage
    from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_call_usage: ContextVar[list[ChatInvokeUsage] | None] = ContextVar("openbrowse_anthropic_call_usage", default=None)


def _total(usages: list[ChatInvokeUsage]) -> ChatInvokeUsage | None:
    total: ChatInvokeUsage | None = None
    for usage in usages:
        total = sum_usage(total, usage)
    return total


async def _relay(stream: Any, listener: ReplyListener) -> None:
    """Hand the listener each block's text: tool-call arguments (``input_json_delta``) and plain text."""
    async for event in stream:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            await listener.reply_started()
        elif kind == "content_block_delta":
            delta = event.delta
            fragment = getattr(delta, "partial_json", None) if delta.type == "input_json_delta" else None
            if delta.type == "text_delta":
                fragment = delta.text
            if fragment:
                await listener.reply_text(fragment)


def _connection_error(exc: Exception) -> anthropic.APIConnectionError:
    """A stream cut mid-way, as the SDK reports a failed request (so classification and mapping are the same)."""
    request = stream_request(exc)
    if is_timeout(exc):
        return anthropic.APITimeoutError(request=request)
    return anthropic.APIConnectionError(message=str(exc) or type(exc).__name__, request=request)


@dataclass
class AnthropicChatModel(ChatAnthropic):
    """``ChatAnthropic`` with parallel tool use off, truncation retry and reply repair."""

    truncation_retry_max_tokens: int = ANTHROPIC_TRUNCATION_RETRY_MAX_TOKENS
    truncation_retry_timeout_s: float = ANTHROPIC_TRUNCATION_RETRY_TIMEOUT_S

    _verified_api_keys = True

    def get_client(self) -> anthropic.AsyncAnthropic:
        """A fresh client per call (closed after it) that reuses the process's TLS context."""
        params = self._get_client_params()
        params.setdefault("http_client", anthropic.DefaultAsyncHttpxClient(verify=shared_ssl_context()))
        return anthropic.AsyncAnthropic(**params)

    async def _send(self, client: Any, params: dict[str, Any], betas: list[str] | None) -> Any:
        api = client.beta.messages if betas is not None else client.messages
        extra = {"betas": betas} if betas is not None else {}
        try:
            return await api.create(**params, **extra)
        except json.JSONDecodeError as exc:
            raise UnusableOutputError("The provider's response body is not valid JSON.", self.name) from exc

    async def _stream(self, client: Any, params: dict[str, Any], betas: list[str] | None) -> Any:
        """Stream the request; a listener (``llm.streaming``) sees the reply's text as it arrives."""
        api = client.beta.messages if betas is not None else client.messages
        extra = {"betas": betas} if betas is not None else {}
        listener = current_listener()
        try:
            async with api.stream(**params, **extra) as stream:
                if listener is not None:
                    await _relay(stream, listener)
                return await stream.get_final_message()
        except json.JSONDecodeError as exc:
            raise UnusableOutputError("The provider's event stream is not valid JSON.", self.name) from exc
        except (RuntimeError, AssertionError) as exc:  # the SDK's accumulator: events out of order, no message
            raise UnusableOutputError(
                f"The provider's event stream is not an Anthropic Messages stream: {str(exc)[:200]}", self.name
            ) from exc
        except Exception as exc:
            if not is_transport_error(exc):
                raise
            raise _connection_error(exc) from exc

    def _checked(self, response: Any) -> Any:
        """Record the usage of a Messages reply; refuse a body that is not one (browser-use would crash on it)."""
        if not isinstance(getattr(response, "content", None), list) or getattr(response, "usage", None) is None:
            raise UnusableOutputError(
                f"The provider's response is not an Anthropic Messages object: {str(response)[:200]}", self.name
            )
        self._record(response)
        return response

    def _record(self, response: Any) -> None:
        holder = _call_usage.get()
        if holder is None:
            return
        try:
            usage = self._get_usage(response)
        except (AttributeError, TypeError, ValueError):
            return
        if usage is not None:
            holder.append(usage)

    async def _create_message(self, **params: Any) -> Any:
        betas: list[str] | None = params.pop("betas", None)
        tools = params.get("tools")
        structured = bool(tools)
        if structured and isinstance(params.get("tool_choice"), dict):
            params["tool_choice"] = {**params["tool_choice"], "disable_parallel_tool_use": True}
        async with self.get_client() as client:
            first = self._stream if current_listener() is not None else self._send
            response = self._checked(await first(client, params, betas))
            if structured and getattr(response, "stop_reason", None) == "max_tokens":
                logger.warning(
                    "%s: reply truncated at max_tokens=%s; retrying once, streaming, with max_tokens=%s",
                    self.name,
                    params.get("max_tokens"),
                    self.truncation_retry_max_tokens,
                )
                retry = {
                    **params,
                    "max_tokens": self.truncation_retry_max_tokens,
                    "timeout": self.truncation_retry_timeout_s,
                }
                response = self._checked(await self._stream(client, retry, betas))
        tool = tools[0] if isinstance(tools, list) and tools and isinstance(tools[0], dict) else None
        if tool is not None:
            schema = tool.get("input_schema") or {}
            expects_action = "action" in (schema.get("properties") or {})
            content = repair_content(response.content, str(tool.get("name", "")), expects_action=expects_action)
            if content != response.content:
                logger.info("%s: repaired the shape of a structured reply", self.name)
                response = response.model_copy(update={"content": content})
        return response

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: None = None, **kwargs: Any
    ) -> ChatInvokeCompletion[str]: ...

    @overload
    async def ainvoke(
        self, messages: list[BaseMessage], output_format: type[T], **kwargs: Any
    ) -> ChatInvokeCompletion[T]: ...

    async def ainvoke(
        self, messages: list[BaseMessage], output_format: type[T] | None = None, **kwargs: Any
    ) -> ChatInvokeCompletion[T] | ChatInvokeCompletion[str]:
        usages: list[ChatInvokeUsage] = []
        token = _call_usage.set(usages)
        try:
            if output_format is None:
                result: ChatInvokeCompletion[T] | ChatInvokeCompletion[str] = await super().ainvoke(
                    messages, None, **kwargs
                )
            else:
                result = await super().ainvoke(messages, output_format, **kwargs)
        except ModelProviderError as exc:
            attach_usage(exc, _total(usages))
            raise
        finally:
            _call_usage.reset(token)
        if len(usages) > 1:
            result = result.model_copy(update={"usage": _total(usages)})
        return result
