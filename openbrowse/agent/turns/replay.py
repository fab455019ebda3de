"""Replaying a keep-alive conversation into a fresh browser (spec §8.3)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from openbrowse.domain.feed import Message, MessageType

REQUEST_LIMIT = 600
ANSWER_LIMIT = 1200
TOTAL_LIMIT = 4000

PREAMBLE = (
    "This conversation continues in a FRESH browser: nothing from earlier turns is open, and no login, cookie "
    "choice or form state survived. Here is what was asked and answered so far (most recent last):"
)


@dataclass(frozen=True, slots=True)
class Exchange:
    request: str
    answer: str


def exchanges(messages: Sequence[Message]) -> list[Exchange]:
    """Pairs of user request and the answer recorded by the completion row that followed it."""
    pairs: list[Exchange] = []
    pending: str | None = None
    for message in messages:
        if message.type == MessageType.USER_MESSAGE:
            if pending is not None:
                pairs.append(Exchange(pending, ""))
            pending = message.summary
        elif message.type == MessageType.COMPLETION and pending is not None:
            pairs.append(Exchange(pending, _completion_output(message)))
            pending = None
    if pending is not None:
        pairs.append(Exchange(pending, ""))
    return pairs


def _completion_output(message: Message) -> str:
    try:
        data = json.loads(message.data) if message.data else {}
    except json.JSONDecodeError:
        return ""
    output = data.get("output") if isinstance(data, dict) else None
    return output if isinstance(output, str) else json.dumps(output) if output is not None else ""


def replay_preamble(messages: Sequence[Message], current_request: str) -> str | None:
    """The preamble for a cold follow-up, or None when there is nothing earlier to replay.

    The current request (the last user message) is excluded; newest exchanges are kept first within the
    4000-char budget, then printed oldest first.
    """
    pairs = exchanges(messages)
    if pairs and pairs[-1].request == current_request[:2000] and not pairs[-1].answer:
        pairs = pairs[:-1]
    kept: list[str] = []
    used = 0
    for pair in reversed(pairs):
        block = f"- They asked: {pair.request[:REQUEST_LIMIT]}\n  Answer: {pair.answer[:ANSWER_LIMIT] or '(none)'}"
        if used + len(block) > TOTAL_LIMIT:
            break
        kept.append(block)
        used += len(block)
    if not kept:
        return None
    return PREAMBLE + "\n" + "\n".join(reversed(kept)) + f"\n\nFOLLOW-UP REQUEST: {current_request}"
