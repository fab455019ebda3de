"""The goal pre-flight (spec §10.2): one cheap call that states what a complete, correct result looks like."""

from __future__ import annotations

import logging
import re

from browser_use.llm.base import BaseChatModel
from browser_use.llm.messages import BaseMessage, SystemMessage, UserMessage

logger = logging.getLogger(__name__)

GOAL_LIMIT = 400
PREFLIGHT_INSTRUCTIONS = (
    "You turn a browser task into its goal. Reply with exactly one sentence that states what a complete and "
    "correct result of the task looks like, in the task's own words. Start with the substance (what must be "
    "found, done or delivered), name the purpose, and do not list fields or steps. No preamble, no quotes."
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WHITESPACE = re.compile(r"\s+")


def collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def first_sentence(task: str) -> str:
    """The task's first sentence: split at ``.``, ``!`` or ``?`` followed by whitespace, at most 400 chars."""
    text = collapse(task)
    return _SENTENCE_END.split(text, maxsplit=1)[0][:GOAL_LIMIT]


def follow_up_prompt(previous_task: str, follow_up: str) -> str:
    return f"Earlier in this session they asked: {previous_task}\nNow they ask: {follow_up}"


async def goal_sentence(llm: BaseChatModel, task: str, prompt: str | None = None) -> str:
    """Ask the model for the goal of ``prompt`` (default: the task); fall back to the task's first sentence."""
    messages: list[BaseMessage] = [SystemMessage(content=PREFLIGHT_INSTRUCTIONS), UserMessage(content=prompt or task)]
    try:
        reply = await llm.ainvoke(messages)
    except Exception as exc:
        logger.warning("Goal pre-flight failed (%s); using the task's first sentence", type(exc).__name__)
        return first_sentence(task)
    text = collapse(reply.completion if isinstance(reply.completion, str) else "")
    return text[:GOAL_LIMIT] if text else first_sentence(task)
