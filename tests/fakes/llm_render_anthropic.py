"""Anthropic Messages in the fake LLM provider: message bodies, SSE events and error bodies.

Shapes follow the installed SDK (anthropic 1.17.0), streaming and not, always with token usage.
"""

from __future__ import annotations

import base64
import json
import os
from typing import TYPE_CHECKING, Any

from tests.fakes.llm_outcome import Outcome, cut_dict, cut_text, new_id, pieces

if TYPE_CHECKING:
    from tests.fakes.llm_reply import Usage
    from tests.fakes.llm_request import LLMRequest


def _anthropic_usage(usage: Usage, *, streaming_start: bool = False) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 1 if streaming_start else usage.output,
        "service_tier": "standard",
    }


def _anthropic_blocks(out: Outcome) -> tuple[list[dict[str, Any]], str]:
    blocks: list[dict[str, Any]] = []
    if out.thinking is not None:
        signature = base64.b64encode(os.urandom(48)).decode()
        blocks.append({"type": "thinking", "thinking": out.thinking, "signature": signature})
    if out.tool is not None and out.parts and not out.truncated:
        for part in out.parts:
            blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": out.tool, "input": part})
        stop = "tool_use"
    elif out.tool is not None and isinstance(out.content, dict):
        tool_input = cut_dict(out.content) if out.truncated else out.content
        blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": out.tool, "input": tool_input})
        stop = "max_tokens" if out.truncated else "tool_use"
    else:
        blocks.append({"type": "text", "text": cut_text(out.text) if out.truncated else out.text, "citations": None})
        stop = "max_tokens" if out.truncated else "end_turn"
    return blocks, stop


def anthropic_message(request: LLMRequest, out: Outcome) -> dict[str, Any]:
    blocks, stop = _anthropic_blocks(out)
    return {
        "id": new_id("msg_"),
        "type": "message",
        "role": "assistant",
        "model": request.model or "claude-fake",
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _anthropic_usage(out.usage),
    }


def anthropic_events(request: LLMRequest, out: Outcome) -> list[tuple[str | None, Any]]:
    message = anthropic_message(request, out)
    blocks = message.pop("content")
    start = {**message, "content": [], "stop_reason": None, "usage": _anthropic_usage(out.usage, streaming_start=True)}
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(blocks):
        head: dict[str, Any]
        deltas: list[dict[str, Any]]
        if block["type"] == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"] if out.parts else out.content, ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in pieces(cut_text(raw) if out.truncated else raw, out.chunk_chars)
            ]
        else:
            head = {"type": "text", "text": "", "citations": None}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"], out.chunk_chars)]
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": head}))
        events += [("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    usage = _anthropic_usage(out.usage)
    usage.pop("cache_creation")
    usage.pop("service_tier")
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


_ERRORS = {
    400: ("invalid_request_error", "Invalid request (fake provider)."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found (fake provider)."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "This request would exceed the rate limit for your organization (fake provider)."),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}


def anthropic_error(code: int, message: str | None = None) -> dict[str, Any]:
    kind, default = _ERRORS.get(code) or (
        ("api_error", "Internal server error") if code >= 500 else ("invalid_request_error", "Invalid request.")
    )
    return {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": new_id("req_")}
