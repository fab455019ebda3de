"""Prose mode (spec §13.1, §13.6): the done text validated once, with a single LLM reformat pass if needed."""

from __future__ import annotations

import json
import logging
from typing import Any

from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage

from openbrowse.agent.turns.outcome import parse_structured

logger = logging.getLogger(__name__)

REFORMAT_MARKER = "OPENBROWSE-REFORMAT"
REFORMAT_INSTRUCTIONS = (
    f"[{REFORMAT_MARKER}] Rewrite the answer below as one JSON value that matches the JSON Schema. Keep every "
    "fact of the answer, invent nothing, use null where the answer has no value. Reply with the JSON only."
)


async def reformat_once(llm: BaseChatModel, text: str, schema: dict[str, Any]) -> tuple[Any, bool]:
    """One reformat call; the parsed value and whether it now matches ``schema``."""
    messages: list[BaseMessage] = [
        SystemMessage(content=REFORMAT_INSTRUCTIONS),
        UserMessage(content=f"JSON Schema:\n{json.dumps(schema)}\n\nANSWER:\n{text}"),
    ]
    try:
        reply = await llm.ainvoke(messages)
    except Exception as exc:
        logger.warning("The prose-mode reformat call failed (%s)", type(exc).__name__)
        return None, False
    completion = reply.completion if isinstance(reply.completion, str) else ""
    return parse_structured(completion, schema)
