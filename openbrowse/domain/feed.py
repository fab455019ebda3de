"""The feed: what a session's messages are made of, and the sink everything writes them through."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from openbrowse.domain.ids import MessageId, SessionId


class MessageType(StrEnum):
    USER_MESSAGE = "user_message"
    PLANNING = "planning"
    BROWSER_ACTION = "browser_action"
    RESULT = "result"
    BROWSER_ACTION_ERROR = "browser_action_error"
    EVENT = "event"
    COMPLETION = "completion"


class EventCategory(StrEnum):
    GOAL = "goal"
    REASONING = "reasoning"
    MEMORY = "memory"
    READ = "read"
    CODE = "code"
    SCHEMA = "schema"
    JUDGE = "judge"
    CAPTCHA = "captcha"
    SYSTEM = "system"
    NETWORK = "network"
    CONTROL = "control"
    CACHE = "cache"


EVENT_SUMMARY_LIMIT = 200
USER_MESSAGE_LIMIT = 2000


def clip(text: str, limit: int) -> str:
    """Cut ``text`` to ``limit`` characters, marking the cut with an ellipsis."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """A message about to be written. ``data`` is serialised to a JSON string (``""`` for user messages)."""

    type: MessageType
    summary: str
    data: dict[str, Any] | None = None
    hidden: bool = False

    @property
    def role(self) -> str:
        return "user" if self.type is MessageType.USER_MESSAGE else "ai"

    def data_text(self) -> str:
        if self.type is MessageType.USER_MESSAGE:
            return ""
        return json.dumps(self.data or {}, ensure_ascii=False, default=str)

    @classmethod
    def user_message(cls, task: str) -> FeedEntry:
        return cls(MessageType.USER_MESSAGE, clip(task, USER_MESSAGE_LIMIT))

    @classmethod
    def event(cls, category: EventCategory, action: str, summary: str, **data: Any) -> FeedEntry:
        payload: dict[str, Any] = {"category": category.value, "action": action, **data}
        return cls(MessageType.EVENT, clip(summary, EVENT_SUMMARY_LIMIT), payload)

    @classmethod
    def system(cls, action: str, summary: str, **data: Any) -> FeedEntry:
        return cls.event(EventCategory.SYSTEM, action, summary, **data)


@dataclass(frozen=True, slots=True)
class Message:
    """A stored feed row as the API returns it."""

    id: MessageId
    session_id: SessionId
    seq: int
    role: str
    type: str
    summary: str
    data: str
    hidden: bool
    created_at: datetime


class FeedSink(Protocol):
    """Where runs write their story. Implemented by the store; fakes are never needed because SQLite is cheap."""

    async def append(self, session_id: SessionId, entry: FeedEntry) -> Message: ...
