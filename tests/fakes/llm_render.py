"""Rendering replies and faults in each provider's wire format (JSON bodies and SSE event streams).

Shapes follow the installed SDKs (anthropic 1.17.0, openai 3.57.0): Anthropic Messages, OpenAI Responses and
OpenAI Chat Completions, streaming and not, always with token usage.
"""

from __future__ import annotations

import base64
import json
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.llm_script import Fault, Reply, Usage

if TYPE_CHECKING:
    from tests.fakes.llm_request import LLMRequest

JSON_HEADERS = (("content-type", "application/json"),)
SSE_HEADERS = (("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache"))


@dataclass
class Rendered:
    """Bytes to send: a status, headers and body chunks (one chunk unless streaming)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    kind: str
    abort_after: int | None = None  # abort the connection after sending this many chunks
    chunk_delay: float = 0.0


@dataclass
class Outcome:
    """A provider-neutral successful (or truncated) answer."""

    content: dict[str, Any] | str
    usage: Usage
    thinking: str | None = None
    tool: str | None = None
    truncated: bool = False
    ids: dict[str, str] = field(default_factory=dict)
    parts: tuple[dict[str, Any], ...] = ()
    chunk_chars: int | None = None

    @property
    def text(self) -> str:
        if self.parts:
            return "\n".join(json.dumps(part, ensure_ascii=False) for part in self.parts)
        return self.content if isinstance(self.content, str) else json.dumps(self.content, ensure_ascii=False)


def new_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def _cut(value: str) -> str:
    return value[: max(1, len(value) // 2)]


def _cut_dict(value: dict[str, Any]) -> dict[str, Any]:
    keys = list(value)
    return {k: value[k] for k in keys[: len(keys) // 2]}


def _pieces(value: str, chars: int | None = None) -> list[str]:
    size = chars or max(16, len(value) // 32 + 1)
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def estimate_usage(request: LLMRequest, reply: Reply | None, content: dict[str, Any] | str) -> Usage:
    if reply is not None and reply.usage is not None:
        return reply.usage
    out_text = content if isinstance(content, str) else json.dumps(content)
    thinking = reply.thinking if reply is not None else None
    reasoning = len(thinking) // 4 if thinking else 0
    return Usage(
        input=max(1, len(request.raw_body) // 4), output=max(1, len(out_text) // 4) + reasoning, reasoning=reasoning
    )


def outcome_for(request: LLMRequest, reply: Reply) -> Outcome:
    tool = reply.tool or (request.schema_name if request.schema_name in request.tool_names else None)
    usage = estimate_usage(request, reply, reply.content)
    return Outcome(
        content=reply.content,
        usage=usage,
        thinking=reply.thinking,
        tool=tool if reply.kind == "structured" else None,
        parts=reply.parts,
        chunk_chars=reply.chunk_chars,
    )


def _json(status: int, body: Any, kind: str, extra: list[tuple[str, str]] | None = None) -> Rendered:
    data = json.dumps(body, ensure_ascii=False).encode()
    return Rendered(status, [*JSON_HEADERS, *(extra or [])], [data], kind)


def _sse(events: list[tuple[str | None, Any]], kind: str) -> list[bytes]:
    chunks: list[bytes] = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        prefix = f"event: {name}\n" if name else ""
        chunks.append(f"{prefix}data: {payload}\n\n".encode())
    return chunks


# --------------------------------------------------------------------------------------------------------------
# Anthropic Messages


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
        tool_input = _cut_dict(out.content) if out.truncated else out.content
        blocks.append({"type": "tool_use", "id": new_id("toolu_"), "name": out.tool, "input": tool_input})
        stop = "max_tokens" if out.truncated else "tool_use"
    else:
        blocks.append({"type": "text", "text": _cut(out.text) if out.truncated else out.text, "citations": None})
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
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif block["type"] == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            raw = json.dumps(block["input"] if out.parts else out.content, ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(_cut(raw) if out.truncated else raw, out.chunk_chars)
            ]
        else:
            head = {"type": "text", "text": "", "citations": None}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], out.chunk_chars)]
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


# --------------------------------------------------------------------------------------------------------------
# OpenAI Responses


def _responses_usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cache_read, "cache_write_tokens": usage.cache_write},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    }


def _responses_items(request: LLMRequest, out: Outcome, *, final: bool = True) -> list[dict[str, Any]]:
    body = request.body or {}
    items: list[dict[str, Any]] = []
    if request.reasoning is not None or out.thinking is not None:
        reasoning: dict[str, Any] = {"id": out.ids.setdefault("rs", new_id("rs_")), "type": "reasoning", "summary": []}
        if final and out.thinking:
            reasoning["summary"] = [{"type": "summary_text", "text": out.thinking}]
        if "reasoning.encrypted_content" in (body.get("include") or []):
            reasoning["encrypted_content"] = base64.b64encode(os.urandom(32)).decode()
        items.append(reasoning)
    text = _cut(out.text) if out.truncated else out.text
    part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    items.append(
        {
            "id": out.ids.setdefault("msg", new_id("msg_")),
            "type": "message",
            "status": "incomplete" if out.truncated else "completed",
            "role": "assistant",
            "phase": "final_answer",
            "content": [part] if final else [],
        }
    )
    return items


def responses_object(request: LLMRequest, out: Outcome, *, final: bool = True) -> dict[str, Any]:
    body = request.body or {}
    out.ids.setdefault("resp", new_id("resp_"))
    status = ("incomplete" if out.truncated else "completed") if final else "in_progress"
    reasoning = body.get("reasoning") or {"effort": None, "summary": None}
    return {
        "id": out.ids["resp"],
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": False,
        "completed_at": int(time.time()) if final and not out.truncated else None,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if final and out.truncated else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "metadata": body.get("metadata") or {},
        "model": request.model or "gpt-fake",
        "output": _responses_items(request, out) if final else [],
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": reasoning,
        "service_tier": "default",
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": _responses_usage(out.usage) if final else None,
        "user": None,
    }


def responses_events(request: LLMRequest, out: Outcome) -> list[tuple[str | None, Any]]:
    raw: list[dict[str, Any]] = []
    raw.append({"type": "response.created", "response": responses_object(request, out, final=False)})
    raw.append({"type": "response.in_progress", "response": responses_object(request, out, final=False)})
    for index, item in enumerate(_responses_items(request, out)):
        added = _responses_items(request, out, final=False)[index]
        if added["type"] == "message":
            added["status"] = "in_progress"
        raw.append({"type": "response.output_item.added", "output_index": index, "item": added})
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            for s_index, summary in enumerate(item["summary"]):
                at = {**where, "summary_index": s_index}
                raw.append(
                    {
                        "type": "response.reasoning_summary_part.added",
                        **at,
                        "part": {"type": "summary_text", "text": ""},
                    }
                )
                raw += [
                    {"type": "response.reasoning_summary_text.delta", **at, "delta": p}
                    for p in _pieces(summary["text"])
                ]
                raw.append({"type": "response.reasoning_summary_text.done", **at, "text": summary["text"]})
                raw.append({"type": "response.reasoning_summary_part.done", **at, "part": summary})
        else:
            part = item["content"][0]
            at = {**where, "content_index": 0}
            raw.append({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
            raw += [
                {"type": "response.output_text.delta", **at, "delta": p, "logprobs": []}
                for p in _pieces(part["text"], out.chunk_chars)
            ]
            raw.append({"type": "response.output_text.done", **at, "text": part["text"], "logprobs": []})
            raw.append({"type": "response.content_part.done", **at, "part": part})
        raw.append({"type": "response.output_item.done", "output_index": index, "item": item})
    final = responses_object(request, out)
    raw.append({"type": "response.incomplete" if out.truncated else "response.completed", "response": final})
    for number, event in enumerate(raw):
        event["sequence_number"] = number
    return [(event["type"], event) for event in raw]


# --------------------------------------------------------------------------------------------------------------
# OpenAI Chat Completions


def _chat_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {
            "cached_tokens": usage.cache_read,
            "cache_write_tokens": usage.cache_write,
            "audio_tokens": 0,
        },
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_base(request: LLMRequest, obj: str) -> dict[str, Any]:
    return {
        "id": new_id("chatcmpl-"),
        "object": obj,
        "created": int(time.time()),
        "model": request.model or "gpt-fake",
        "service_tier": "default",
        "system_fingerprint": "fp_fake",
    }


def chat_completion(request: LLMRequest, out: Outcome) -> dict[str, Any]:
    content = _cut(out.text) if out.truncated else out.text
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length" if out.truncated else "stop"}
    return {**_chat_base(request, "chat.completion"), "choices": [choice], "usage": _chat_usage(out.usage)}


def chat_events(request: LLMRequest, out: Outcome) -> list[tuple[str | None, Any]]:
    base = _chat_base(request, "chat.completion.chunk")
    include_usage = bool(((request.body or {}).get("stream_options") or {}).get("include_usage"))
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}

    content = _cut(out.text) if out.truncated else out.text
    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": "", "refusal": None}))]
    events += [(None, chunk({"content": p})) for p in _pieces(content, out.chunk_chars)]
    events.append((None, chunk({}, "length" if out.truncated else "stop")))
    if include_usage:
        events.append((None, {**base, "choices": [], "usage": _chat_usage(out.usage)}))
    events.append((None, "[DONE]"))
    return events


# --------------------------------------------------------------------------------------------------------------
# Entry points


def render_outcome(request: LLMRequest, out: Outcome, kind: str, chunk_delay: float = 0.0) -> Rendered:
    if request.stream:
        make_events = {"anthropic": anthropic_events, "responses": responses_events, "chat": chat_events}[request.api]
        chunks = _sse(make_events(request, out), kind)
        return Rendered(200, list(SSE_HEADERS), chunks, kind, chunk_delay=chunk_delay)
    make_body = {"anthropic": anthropic_message, "responses": responses_object, "chat": chat_completion}[request.api]
    rendered = _json(200, make_body(request, out), kind)
    if request.api == "anthropic":
        rendered.headers.append(("request-id", new_id("req_")))
    else:
        rendered.headers.append(("x-request-id", new_id("req_")))
    return rendered


def render_reply(request: LLMRequest, reply: Reply) -> Rendered:
    return render_outcome(request, outcome_for(request, reply), reply.kind, reply.chunk_delay)


_ANTHROPIC_ERRORS = {
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
_OPENAI_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (fake provider)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-fake****. (fake provider)"),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden (fake provider)."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests (fake provider). Please try again."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
}


def error_body(api: str, code: int, message: str | None = None) -> dict[str, Any]:
    if api == "anthropic":
        kind, default = _ANTHROPIC_ERRORS.get(code) or (
            ("api_error", "Internal server error") if code >= 500 else ("invalid_request_error", "Invalid request.")
        )
        return {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": new_id("req_")}
    kind2, err_code, default2 = _OPENAI_ERRORS.get(code) or (
        ("server_error", "service_unavailable", "The server is overloaded or not ready yet.")
        if code >= 500
        else ("invalid_request_error", None, "Invalid request.")
    )
    return {"error": {"message": message or default2, "type": kind2, "param": None, "code": err_code}}


def render_status(request: LLMRequest, fault: Fault) -> Rendered:
    headers: list[tuple[str, str]] = []
    if fault.retry_after is not None:
        value = fault.retry_after
        headers.append(("retry-after", str(int(value)) if float(value).is_integer() else str(value)))
    request_header = "request-id" if request.api == "anthropic" else "x-request-id"
    headers.append((request_header, new_id("req_")))
    body = error_body(request.api, fault.status_code, fault.message)
    return _json(fault.status_code, body, f"fault:status:{fault.status_code}", headers)


def render_malformed(request: LLMRequest, fault: Fault) -> Rendered:
    kind = f"fault:malformed:{fault.mode}"
    if fault.mode == "schema":
        content: dict[str, Any] | str = (
            {"unexpected_field": "not what the schema asked for", "action": "not-a-list"}
            if request.structured or request.is_agent_step
            else ""
        )
        out = Outcome(content=content, usage=estimate_usage(request, None, content))
        out.tool = request.schema_name if request.schema_name in request.tool_names else None
        return render_outcome(request, out, kind)
    if fault.mode == "envelope":
        body = {"unexpected": "shape", "detail": "fake provider: valid JSON, not a provider response"}
        if not request.stream:
            return _json(200, body, kind)
        return Rendered(200, list(SSE_HEADERS), _sse([(None, body)], kind), kind)
    if not request.stream:
        return Rendered(200, list(JSON_HEADERS), [b'{"id": "broken", "content": [<html>not json'], kind)
    good = render_reply(request, Reply(content="x")).chunks[:1]
    broken = b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, <not json\n\n'
    if request.api != "anthropic":
        broken = b"data: {not json at all\n\n"
    return Rendered(200, list(SSE_HEADERS), [*good, broken], kind)


def render_fault_with_content(request: LLMRequest, fault: Fault, content: dict[str, Any] | str) -> Rendered:
    """``truncated`` and ``stream_cut`` faults, which cut real content."""
    tool = request.schema_name if request.schema_name in request.tool_names and isinstance(content, dict) else None
    usage = fault.usage or estimate_usage(request, None, content)
    if fault.kind == "truncated":
        if fault.usage is None and request.max_tokens:
            usage = usage._replace(output=request.max_tokens)
        return render_outcome(
            request, Outcome(content=content, usage=usage, tool=tool, truncated=True), "fault:truncated"
        )
    rendered = render_outcome(request, Outcome(content=content, usage=usage, tool=tool), "fault:stream_cut")
    if request.stream:
        rendered.abort_after = max(1, len(rendered.chunks) // 2)
    else:
        body = rendered.chunks[0]
        rendered.headers.append(("content-length", str(len(body))))
        rendered.chunks = [body[: len(body) // 2], body[len(body) // 2 :]]
        rendered.abort_after = 1
    return rendered
