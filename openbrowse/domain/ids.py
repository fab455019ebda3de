"""Typed ids and their generators."""

from __future__ import annotations

import uuid
from typing import NewType

SessionId = NewType("SessionId", str)
MessageId = NewType("MessageId", str)
ProfileId = NewType("ProfileId", str)
BrowserId = NewType("BrowserId", str)


def new_session_id() -> SessionId:
    return SessionId(str(uuid.uuid4()))


def new_message_id() -> MessageId:
    return MessageId(str(uuid.uuid4()))


def new_browser_id() -> BrowserId:
    return BrowserId(str(uuid.uuid4()))


def is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except (ValueError, AttributeError, TypeError):
        return False
    return True
