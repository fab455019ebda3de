"""OpenAI Responses and Chat Completions in the fake LLM provider: response bodies, SSE events and error bodies.

Shapes follow the installed SDK (openai 3.57.0), streaming and not, always with token usage.
"""

from __future__ import annotations

import base64
import os
import time
from typing import TYPE_CHECKING, Any

from tests.fakes.llm_outcome import Outcome, cut_text, new_id, pieces

if TYPE_CHECKING:
    from tests.fakes.llm_reply import Usage
    from tests.fakes.llm_request import LLMRequest

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
    text = cut_text(out.text) if out.truncated else out.text
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
                    {"type": "response.reasoning_summary_text.delta", **at, "delta": p} for p in pieces(summary["text"])
                ]
                raw.append({"type": "response.reasoning_summary_text.done", **at, "text": summary["text"]})
                raw.append({"type": "response.reasoning_summary_part.done", **at, "part": summary})
        else:
            part = item["content"][0]
            at = {**where, "content_index": 0}
            raw.append({"type": "response.content_part.added", **at, "part": {**part, "text": ""}})
            raw += [
                {"type": "response.output_text.delta", **at, "delta": p, "logprobs": []}
                for p in pieces(part["text"], out.chunk_chars)
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
    content = cut_text(out.text) if out.truncated else out.text
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": []}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "length" if out.truncated else "stop"}
    return {**_chat_base(request, "chat.completion"), "choices": [choice], "usage": _chat_usage(out.usage)}


def chat_events(request: LLMRequest, out: Outcome) -> list[tuple[str | None, Any]]:
    base = _chat_base(request, "chat.completion.chunk")
    include_usage = bool(((request.body or {}).get("stream_options") or {}).get("include_usage"))
    extra = {"usage": None} if include_usage else {}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **extra}

    content = cut_text(out.text) if out.truncated else out.text
    events: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": "", "refusal": None}))]
    events += [(None, chunk({"content": p})) for p in pieces(content, out.chunk_chars)]
    events.append((None, chunk({}, "length" if out.truncated else "stop")))
    if include_usage:
        events.append((None, {**base, "choices": [], "usage": _chat_usage(out.usage)}))
    events.append((None, "[DONE]"))
    return events


_ERRORS = {
    400: ("invalid_request_error", None, "Invalid request (fake provider)."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-fake****. (fake provider)"),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden (fake provider)."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests (fake provider). Please try again."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
}


def openai_error(code: int, message: str | None = None) -> dict[str, Any]:
    kind, err_code, default = _ERRORS.get(code) or (
        ("server_error", "service_unavailable", "The server is overloaded or not ready yet.")
        if code >= 500
        else ("invalid_request_error", None, "Invalid request.")
    )
    return {"error": {"message": message or default, "type": kind, "param": None, "code": err_code}}
