"""Reading an Anthropic Messages event stream back into the message a non-streamed call returns.

Events are framed by ``httpx-sse`` and folded into one message dict the way the SDK's accumulator did:
``message_start`` opens it, ``content_block_start`` appends a block, ``content_block_delta`` extends it (text,
thinking, signature, citations, tool-call arguments as raw JSON text that is decoded when the block stops),
``message_delta`` sets the stop reason and the final usage. ``ping`` and events without a name are skipped.
A listener (``llm.streaming``) gets ``reply_started`` at ``message_start`` and every text or argument fragment.

What goes wrong maps the way it did with the SDK: an ``error`` event raises a status error (the status of its
error type, 500 if unknown; ``rate_limit_error`` is a rate limit); a transport failure mid-stream is a
connection (or timeout) error; data that is not JSON, events out of order, or a stream that ends without a
message are unusable output.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import httpx
from httpx_sse import EventSource, SSEError

from openbrowse.llm.anthropic.http import transport_error
from openbrowse.llm.provider_errors import ProviderRateLimitError, ProviderStatusError
from openbrowse.llm.replies.parsing import UnusableOutputError
from openbrowse.llm.replies.streaming import is_transport_error

if TYPE_CHECKING:
    from openbrowse.llm.replies.streaming import ReplyListener

ERROR_TYPE_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
UNKNOWN_ERROR_STATUS = 500
_USAGE_UPDATES = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "server_tool_use")


class _OutOfOrder(Exception):
    pass


def stream_error(data: str) -> ProviderStatusError:
    """The exception for an ``error`` event (message as the SDK wrote it: the decoded body)."""
    try:
        body: Any = json.loads(data)
        message = f"{body}"
    except ValueError:
        body, message = data, data or "The provider reported an error mid-stream."
    error = body.get("error") if isinstance(body, dict) else None
    kind = error.get("type") if isinstance(error, dict) else None
    status = ERROR_TYPE_STATUS.get(kind, UNKNOWN_ERROR_STATUS) if isinstance(kind, str) else UNKNOWN_ERROR_STATUS
    cls = ProviderRateLimitError if status == 429 else ProviderStatusError
    return cls(message, status_code=status, body=body)


class MessageAccumulator:
    """Folds stream events into one message dict."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        self._json: dict[int, str] = {}
        self._undecodable = 0

    def _block(self, event: dict[str, Any]) -> dict[str, Any]:
        content = self._current()["content"]
        index = event.get("index")
        if not isinstance(index, int) or not 0 <= index < len(content):
            raise _OutOfOrder(f"{event.get('type')} for block {index!r}, which was never started")
        block: dict[str, Any] = content[index]
        return block

    def _current(self) -> dict[str, Any]:
        if self.message is None:
            raise _OutOfOrder('got an event before "message_start"')
        return self.message

    def add(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            if self.message is not None:
                raise _OutOfOrder('got a second "message_start"')
            message = event.get("message")
            if not isinstance(message, dict):
                raise _OutOfOrder('"message_start" without a message')
            self.message = {**message, "content": list(message.get("content") or [])}
        elif kind == "content_block_start":
            block = event.get("content_block")
            if not isinstance(block, dict):
                raise _OutOfOrder('"content_block_start" without a block')
            self._current()["content"].append(dict(block))
        elif kind == "content_block_delta":
            self._apply_delta(event)
        elif kind == "content_block_stop":
            self._finish_block(event)
        elif kind == "message_delta":
            self._apply_message_delta(event)

    def _apply_delta(self, event: dict[str, Any]) -> None:
        block = self._block(event)
        delta = event.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta":
            block["text"] = (block.get("text") or "") + str(delta.get("text", ""))
        elif kind == "input_json_delta":
            self._json[event["index"]] = self._json.get(event["index"], "") + str(delta.get("partial_json", ""))
        elif kind == "thinking_delta":
            block["thinking"] = (block.get("thinking") or "") + str(delta.get("thinking", ""))
        elif kind == "signature_delta":
            block["signature"] = delta.get("signature")
        elif kind == "citations_delta":
            block["citations"] = [*(block.get("citations") or []), delta.get("citation")]

    def _finish_block(self, event: dict[str, Any]) -> None:
        block = self._block(event)
        raw = self._json.pop(event["index"], None)
        if raw is not None and block.get("type") in ("tool_use", "server_tool_use"):
            self._set_input(block, raw)

    def _set_input(self, block: dict[str, Any], raw: str) -> None:
        try:
            block["input"] = json.loads(raw) if raw.strip() else {}
        except ValueError:
            block["input"] = {}
            self._undecodable += 1

    def _apply_message_delta(self, event: dict[str, Any]) -> None:
        message = self._current()
        delta = event.get("delta") or {}
        for key in ("stop_reason", "stop_sequence", "stop_details"):
            if key in delta:
                message[key] = delta[key]
        usage = event.get("usage")
        if isinstance(usage, dict):
            merged = dict(message.get("usage") or {})
            if usage.get("output_tokens") is not None:
                merged["output_tokens"] = usage["output_tokens"]
            merged.update({key: usage[key] for key in _USAGE_UPDATES if usage.get(key) is not None})
            message["usage"] = merged

    def final(self) -> dict[str, Any]:
        """The message. Tool-call arguments that are not JSON are only expected of a reply cut at ``max_tokens``
        (read as ``{}``: a truncated structured reply is retried or refused whatever it holds)."""
        message = self._current()
        for index, raw in self._json.items():
            self._set_input(message["content"][index], raw)
        self._json.clear()
        if self._undecodable and message.get("stop_reason") != "max_tokens":
            raise _OutOfOrder("a tool call's arguments are not valid JSON")
        return message


async def _relay(listener: ReplyListener | None, event: dict[str, Any]) -> None:
    if listener is None:
        return
    kind = event.get("type")
    if kind == "message_start":
        await listener.reply_started()
    elif kind == "content_block_delta":
        delta = event.get("delta") or {}
        fragment = delta.get("text") if delta.get("type") == "text_delta" else None
        if delta.get("type") == "input_json_delta":
            fragment = delta.get("partial_json")
        if isinstance(fragment, str) and fragment:
            await listener.reply_text(fragment)


async def read_message(response: httpx.Response, listener: ReplyListener | None, model: str) -> dict[str, Any]:
    """Read the event stream of ``response`` (closed afterwards) into the final message dict."""
    accumulator = MessageAccumulator()
    try:
        async for sse in EventSource(response).aiter_sse():
            if sse.event in ("ping", "message") or not sse.data:
                continue
            if sse.event == "error":
                raise stream_error(sse.data)
            event = json.loads(sse.data)
            if not isinstance(event, dict):
                raise _OutOfOrder(f"an event that is not an object: {sse.data[:100]}")
            accumulator.add(event)
            await _relay(listener, event)
            if event.get("type") == "message_stop":
                break
        return accumulator.final()
    except SSEError as exc:
        raise UnusableOutputError(f"The provider's reply is not an event stream: {exc}", model) from exc
    except json.JSONDecodeError as exc:
        raise UnusableOutputError("The provider's event stream is not valid JSON.", model) from exc
    except _OutOfOrder as exc:
        raise UnusableOutputError(
            f"The provider's event stream is not an Anthropic Messages stream: {str(exc)[:200]}", model
        ) from exc
    except Exception as exc:
        if not is_transport_error(exc):
            raise
        raise transport_error(exc) from exc
    finally:
        await response.aclose()
