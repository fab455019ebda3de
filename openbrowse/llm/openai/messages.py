"""browser-use messages → OpenAI wire messages (Responses input items, Chat Completions messages).

Both adapters put the output-schema instruction into the system prompt, so both converters take an
``extra_system`` text that is appended to the (first) system prompt, or becomes the system prompt if the
conversation has none.

Responses API: leading system messages become ``instructions``; a system message later in the conversation
becomes a ``developer`` input item; user text/images become ``input_text``/``input_image`` parts; assistant
turns are plain text (tool calls, which only appear in browser-use's examples, are rendered as text).
"""

from __future__ import annotations

from typing import Any

from browser_use.llm.messages import (
    AssistantMessage,
    BaseMessage,
    ContentPartImageParam,
    ContentPartTextParam,
    SystemMessage,
    UserMessage,
)


def _assistant_text(message: AssistantMessage) -> str:
    text = message.text
    if message.tool_calls:
        calls = "\n".join(
            f"[Tool call: {call.function.name}({call.function.arguments})]" for call in message.tool_calls
        )
        text = f"{text}\n{calls}" if text else calls
    return text


def _responses_user_content(content: str | list[ContentPartTextParam | ContentPartImageParam]) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, ContentPartTextParam):
            parts.append({"type": "input_text", "text": part.text})
        else:
            parts.append({"type": "input_image", "image_url": part.image_url.url, "detail": part.image_url.detail})
    return parts


def to_responses_input(messages: list[BaseMessage], extra_system: str = "") -> tuple[str, list[dict[str, Any]]]:
    """Return ``(instructions, input_items)`` for ``client.responses.create``."""
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            if items:
                items.append({"role": "developer", "content": message.text})
            else:
                instructions.append(message.text)
        elif isinstance(message, UserMessage):
            items.append({"role": "user", "content": _responses_user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            items.append({"role": "assistant", "content": _assistant_text(message)})
    text = "\n\n".join(part for part in instructions if part) + extra_system
    return text.strip(), items


def _chat_user_content(content: str | list[ContentPartTextParam | ContentPartImageParam]) -> Any:
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, ContentPartTextParam):
            parts.append({"type": "text", "text": part.text})
        else:
            parts.append(
                {"type": "image_url", "image_url": {"url": part.image_url.url, "detail": part.image_url.detail}}
            )
    return parts


def to_chat_messages(messages: list[BaseMessage], extra_system: str = "") -> list[dict[str, Any]]:
    """Return Chat Completions ``messages``; ``extra_system`` is appended to the first system message."""
    result: list[dict[str, Any]] = []
    appended = not extra_system
    for message in messages:
        if isinstance(message, SystemMessage):
            text = message.text
            if not appended:
                text, appended = text + extra_system, True
            result.append({"role": "system", "content": text})
        elif isinstance(message, UserMessage):
            result.append({"role": "user", "content": _chat_user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            result.append({"role": "assistant", "content": _assistant_text(message)})
    if not appended:
        result.insert(0, {"role": "system", "content": extra_system.strip()})
    return result
