"""Rendering replies and faults in each provider's wire format (JSON bodies and SSE event streams).

The entry points choose the format the request used; the shapes themselves live in
:mod:`~tests.fakes.llm_render_anthropic` (Anthropic Messages) and :mod:`~tests.fakes.llm_render_openai` (OpenAI
Responses and Chat Completions). Faults cut, break or replace those shapes the way real providers fail.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tests.fakes.llm_outcome import (
    JSON_HEADERS,
    SSE_HEADERS,
    Outcome,
    Rendered,
    estimate_usage,
    json_rendered,
    new_id,
    outcome_for,
    sse_chunks,
)
from tests.fakes.llm_render_anthropic import anthropic_error, anthropic_events, anthropic_message
from tests.fakes.llm_render_openai import chat_completion, chat_events, openai_error, responses_events, responses_object
from tests.fakes.llm_reply import Reply

if TYPE_CHECKING:
    from tests.fakes.llm_reply import Fault
    from tests.fakes.llm_request import LLMRequest


def render_outcome(request: LLMRequest, out: Outcome, kind: str, chunk_delay: float = 0.0) -> Rendered:
    if request.stream:
        make_events = {"anthropic": anthropic_events, "responses": responses_events, "chat": chat_events}[request.api]
        chunks = sse_chunks(make_events(request, out), kind)
        return Rendered(200, list(SSE_HEADERS), chunks, kind, chunk_delay=chunk_delay)
    make_body = {"anthropic": anthropic_message, "responses": responses_object, "chat": chat_completion}[request.api]
    rendered = json_rendered(200, make_body(request, out), kind)
    if request.api == "anthropic":
        rendered.headers.append(("request-id", new_id("req_")))
    else:
        rendered.headers.append(("x-request-id", new_id("req_")))
    return rendered


def render_reply(request: LLMRequest, reply: Reply) -> Rendered:
    return render_outcome(request, outcome_for(request, reply), reply.kind, reply.chunk_delay)


def error_body(api: str, code: int, message: str | None = None) -> dict[str, Any]:
    return anthropic_error(code, message) if api == "anthropic" else openai_error(code, message)


def render_status(request: LLMRequest, fault: Fault) -> Rendered:
    headers: list[tuple[str, str]] = []
    if fault.retry_after is not None:
        value = fault.retry_after
        headers.append(("retry-after", str(int(value)) if float(value).is_integer() else str(value)))
    request_header = "request-id" if request.api == "anthropic" else "x-request-id"
    headers.append((request_header, new_id("req_")))
    body = error_body(request.api, fault.status_code, fault.message)
    return json_rendered(fault.status_code, body, f"fault:status:{fault.status_code}", headers)


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
            return json_rendered(200, body, kind)
        return Rendered(200, list(SSE_HEADERS), sse_chunks([(None, body)], kind), kind)
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
