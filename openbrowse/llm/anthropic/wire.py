"""browser-use messages → Anthropic Messages request parts, and the reply's usage (no SDK types: plain dicts).

The JSON is what browser-use's ``ChatAnthropic`` serialiser sent through the SDK, key for key, so the provider
(and its prompt cache) sees the same request:

* the system message goes to ``system``: a plain string, or text blocks when it is cache-marked or a list of
  parts (only the last part carries ``cache_control``);
* only the **last** cache-marked non-system message keeps its mark (Claude caches a prefix, so earlier marks
  only cost); a cache-marked message becomes text blocks, the last block carrying ``cache_control``;
* images: ``data:`` URLs become base64 sources (media type lowercased; anything but jpeg/png/gif/webp is sent
  as jpeg), other URLs become URL sources;
* an assistant message's tool calls become ``tool_use`` blocks (arguments that are not JSON are wrapped as
  ``{"arguments": <text>}``); an assistant message with nothing in it is an empty text block; a single
  uncached text block is sent as a plain string;
* text and tool-use blocks always carry a ``cache_control`` key (``null`` when unmarked), as the SDK sent them.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from browser_use.llm.messages import AssistantMessage, SystemMessage, UserMessage
from browser_use.llm.schema import SchemaOptimizer
from browser_use.llm.views import ChatInvokeUsage

if TYPE_CHECKING:
    from browser_use.llm.messages import BaseMessage, ContentPartImageParam, ToolCall
    from pydantic import BaseModel

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _cache(marked: bool) -> dict[str, str] | None:
    return dict(EPHEMERAL) if marked else None


def _text_block(text: str, marked: bool) -> dict[str, Any]:
    return {"text": text, "type": "text", "cache_control": _cache(marked)}


def _is_data_image(url: str) -> bool:
    scheme, sep, rest = url.partition(":")
    return (
        bool(sep) and scheme.lower() == "data" and rest.split(",", 1)[0].split(";", 1)[0].lower().startswith("image/")
    )


def _image_block(part: ContentPartImageParam) -> dict[str, Any]:
    url = part.image_url.url
    if not _is_data_image(url):
        return {"source": {"url": url, "type": "url"}, "type": "image"}
    header, data = url.partition(":")[2].split(",", 1)
    media_type = header.split(";", 1)[0].lower()
    if media_type not in _IMAGE_TYPES:
        media_type = "image/jpeg"
    return {"source": {"data": data, "media_type": media_type, "type": "base64"}, "type": "image"}


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return [_text_block(content, True)] if message.cache else content
    blocks: list[dict[str, Any]] = []
    for index, part in enumerate(content):
        if part.type == "text":
            blocks.append(_text_block(part.text, message.cache and index == len(content) - 1))
        elif part.type == "image_url":
            blocks.append(_image_block(part))
    return blocks


def _tool_use_blocks(tool_calls: list[ToolCall], marked: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for index, call in enumerate(tool_calls):
        try:
            arguments: Any = json.loads(call.function.arguments)
        except json.JSONDecodeError:
            arguments = {"arguments": call.function.arguments}
        last = index == len(tool_calls) - 1
        blocks.append(
            {
                "id": call.id,
                "input": arguments,
                "name": call.function.name,
                "type": "tool_use",
                "cache_control": _cache(marked and last),
            }
        )
    return blocks


def _assistant_content(message: AssistantMessage) -> str | list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    content = message.content
    if isinstance(content, str):
        blocks.append(_text_block(content, message.cache and not message.tool_calls))
    elif content is not None:
        for index, part in enumerate(content):
            if part.type == "text":
                last = index == len(content) - 1 and not message.tool_calls
                blocks.append(_text_block(part.text, message.cache and last))
    if message.tool_calls:
        blocks.extend(_tool_use_blocks(message.tool_calls, message.cache))
    if not blocks:
        blocks.append(_text_block("", message.cache))
    if message.cache or len(blocks) > 1:
        return blocks
    only = blocks[0]
    return only["text"] if only["type"] == "text" and not only.get("cache_control") else blocks


def _system(message: SystemMessage) -> str | list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return [_text_block(content, True)] if message.cache else content
    return [
        _text_block(part.text, message.cache and index == len(content) - 1)
        for index, part in enumerate(content)
        if part.type == "text"
    ]


def serialize_messages(messages: list[BaseMessage]) -> tuple[list[dict[str, Any]], str | list[dict[str, Any]] | None]:
    """``(messages, system)`` for a Messages request; ``system`` is ``None`` when there is no system message."""
    system: SystemMessage | None = None
    others: list[UserMessage | AssistantMessage] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            system = message
        elif isinstance(message, UserMessage | AssistantMessage):
            others.append(message)
        else:
            raise ValueError(f"Unknown message type: {type(message)}")
    last_cached = max((index for index, message in enumerate(others) if message.cache), default=-1)
    serialized: list[dict[str, Any]] = []
    for index, message in enumerate(others):
        if message.cache and index != last_cached:
            message = message.model_copy(update={"cache": False})
        if isinstance(message, UserMessage):
            serialized.append({"role": "user", "content": _user_content(message)})
        else:
            serialized.append({"role": "assistant", "content": _assistant_content(message)})
    return serialized, (_system(system) if system is not None else None)


def structured_tool(output_format: type[BaseModel]) -> dict[str, Any]:
    """The one tool a structured call asks for: named after the output model, its optimised schema as input."""
    name = output_format.__name__
    schema = SchemaOptimizer.create_optimized_json_schema(output_format)
    schema.pop("title", None)
    return {
        "name": name,
        "description": f"Extract information in the format of {name}",
        "input_schema": schema,
        "cache_control": dict(EPHEMERAL),
    }


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def reply_usage(usage: Any, pricing_multiplier: float | None = None) -> ChatInvokeUsage | None:
    """A reply's ``usage`` object → ``ChatInvokeUsage`` the way browser-use counts it for Claude:
    ``prompt_tokens = input_tokens + cache_read_input_tokens`` (cache writes reported separately)."""
    if not isinstance(usage, dict):
        return None
    input_tokens = _count(usage.get("input_tokens"))
    output_tokens = _count(usage.get("output_tokens"))
    if input_tokens is None or output_tokens is None:
        return None
    cache_read = _count(usage.get("cache_read_input_tokens"))
    creation = usage.get("cache_creation")
    creation = creation if isinstance(creation, dict) else {}
    return ChatInvokeUsage(
        prompt_tokens=input_tokens + (cache_read or 0),
        completion_tokens=output_tokens,
        total_tokens=input_tokens + output_tokens,
        prompt_cached_tokens=cache_read,
        prompt_cache_creation_tokens=_count(usage.get("cache_creation_input_tokens")),
        prompt_cache_creation_5m_tokens=_count(creation.get("ephemeral_5m_input_tokens")),
        prompt_cache_creation_1h_tokens=_count(creation.get("ephemeral_1h_input_tokens")),
        prompt_image_tokens=None,
        pricing_multiplier=pricing_multiplier,
    )
