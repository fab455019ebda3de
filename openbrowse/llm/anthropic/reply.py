"""A Claude reply (a Messages dict, already repaired) → browser-use's ``ChatInvokeCompletion``.

The reading is browser-use's ``ChatAnthropic``'s, kept so the agent sees the same completions:

* plain text: the text blocks joined (else the first block as text), thinking blocks joined, redacted thinking;
* structured: the first ``tool_use`` block's input validated against the output model; failing that, its
  double-serialised fields decoded and validated again; failing that, a whole call written into its
  ``thinking`` field (parameter markup or JSON) is tried; with ``tool_choice`` auto (thinking on), a reply
  with no tool call whose text holds the JSON is parsed too; otherwise ``ValueError('Expected tool use in
  response but none found')``, which browser-use's callers treat as unusable output.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

from browser_use.llm.views import ChatInvokeCompletion, ChatInvokeUsage
from pydantic import BaseModel

from openbrowse.llm.replies.parsing import decode_serialized_fields, json_candidates, markup_parameters

T = TypeVar("T", bound=BaseModel)


def stop_details(message: dict[str, Any]) -> dict[str, Any] | None:
    details = message.get("stop_details")
    return details if isinstance(details, dict) else None


def content_texts(message: dict[str, Any]) -> tuple[str, str | None, str | None]:
    """``(text, thinking, redacted thinking)`` of a reply."""
    texts: list[str] = []
    thoughts: list[str] = []
    redacted: list[str] = []
    content = message.get("content") or []
    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and block.get("text"):
            texts.append(str(block["text"]))
        elif kind == "thinking" and block.get("thinking"):
            thoughts.append(str(block["thinking"]))
        elif kind == "redacted_thinking" and (block.get("data") or block.get("redacted_thinking")):
            redacted.append(str(block.get("data") or block.get("redacted_thinking")))
    completion = "".join(texts) if texts else (str(content[0]) if content else "")
    return completion, "\n".join(thoughts) or None, "\n".join(redacted) or None


def text_completion(message: dict[str, Any], usage: ChatInvokeUsage | None) -> ChatInvokeCompletion[str]:
    completion, thinking, redacted = content_texts(message)
    return ChatInvokeCompletion(
        completion=completion,
        thinking=thinking,
        redacted_thinking=redacted,
        usage=usage,
        stop_reason=message.get("stop_reason"),
        stop_details=stop_details(message),
    )


def _completion(
    value: T, message: dict[str, Any], usage: ChatInvokeUsage | None, **extra: Any
) -> ChatInvokeCompletion[T]:
    return ChatInvokeCompletion(
        completion=value,
        usage=usage,
        stop_reason=message.get("stop_reason"),
        stop_details=stop_details(message),
        **extra,
    )


def _from_serialized_call(
    tool_input: Any, output_format: type[T], usage: ChatInvokeUsage | None, message: dict[str, Any]
) -> ChatInvokeCompletion[T] | None:
    """The whole call written into the ``thinking`` argument (markup or JSON), parsed back out."""
    thinking = tool_input.get("thinking") if isinstance(tool_input, dict) else None
    if not isinstance(thinking, str):
        return None
    candidates: list[Any] = []
    markup = markup_parameters(thinking)
    if markup:
        candidates.append(markup)
    for text in json_candidates(thinking):
        try:
            candidate = json.loads(text)
        except (json.JSONDecodeError, TypeError):
            continue
        candidates.append(decode_serialized_fields(candidate) if isinstance(candidate, dict) else candidate)
    for candidate in candidates:
        try:
            return _completion(output_format.model_validate(candidate), message, usage)
        except Exception:
            continue
    return None


def _from_tool_input(
    tool_input: Any, output_format: type[T], usage: ChatInvokeUsage | None, message: dict[str, Any]
) -> ChatInvokeCompletion[T]:
    try:
        return _completion(output_format.model_validate(tool_input), message, usage)
    except Exception:
        if isinstance(tool_input, str):
            tool_input = json.loads(tool_input)
        elif isinstance(tool_input, dict):
            tool_input = decode_serialized_fields(tool_input)
        else:
            raise
        try:
            return _completion(output_format.model_validate(tool_input), message, usage)
        except Exception:
            recovered = _from_serialized_call(tool_input, output_format, usage, message)
            if recovered is None:
                raise
            return recovered


def _from_text(
    message: dict[str, Any], output_format: type[T], usage: ChatInvokeUsage | None
) -> ChatInvokeCompletion[T] | None:
    text, thinking, redacted = content_texts(message)
    for candidate in json_candidates(text):
        try:
            value = output_format.model_validate_json(candidate)
        except Exception:
            try:
                value = output_format.model_validate(json.loads(candidate))
            except Exception:
                continue
        return _completion(value, message, usage, thinking=thinking, redacted_thinking=redacted)
    return None


def structured_completion(
    message: dict[str, Any], output_format: type[T], usage: ChatInvokeUsage | None, *, auto_tool_choice: bool
) -> ChatInvokeCompletion[T]:
    """The structured output of a (not truncated) reply; raises as browser-use's reader does."""
    for block in message.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            return _from_tool_input(block.get("input"), output_format, usage, message)
    if auto_tool_choice:
        recovered = _from_text(message, output_format, usage)
        if recovered is not None:
            return recovered
    raise ValueError("Expected tool use in response but none found")
