"""What a model is sent hides the session's secrets (spec §25.3): the provider is a sink too.

browser-use already replaces each raw ``sensitiveData`` value in the agent's messages; a page can still show a
value URL-encoded or in base64 (a link, an ``Authorization`` header echoed back), and the judge and pre-flight
calls are not filtered at all. The session's redactor runs over the text of every message instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from browser_use.llm.messages import BaseMessage

Redact = Callable[[str], str]


def _part(part: Any, redact: Redact) -> Any:
    text = getattr(part, "text", None)
    if isinstance(text, str):
        hidden = redact(text)
        return part if hidden == text else part.model_copy(update={"text": hidden})
    return part


def redact_messages(messages: list[BaseMessage], redact: Redact) -> list[BaseMessage]:
    """``messages`` with every text redacted; a message that holds no secret is passed on as it is."""
    result: list[BaseMessage] = []
    for message in messages:
        content = getattr(message, "content", None)
        if isinstance(content, str):
            hidden = redact(content)
            message = message if hidden == content else message.model_copy(update={"content": hidden})
        elif isinstance(content, list):
            parts = [_part(part, redact) for part in content]
            if any(new is not old for new, old in zip(parts, content, strict=True)):
                message = message.model_copy(update={"content": parts})
        result.append(message)
    return result
