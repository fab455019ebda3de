"""The session clipboard (spec §11.5): ``remember(key, value)`` and ``recall(key)``."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from browser_use.agent.views import ActionResult
from pydantic import BaseModel, Field

from openbrowse.upstream.registered_actions import register_action

if TYPE_CHECKING:
    from browser_use import Tools

_URL = re.compile(r"https?://[^\s<>\"']+")
_TRAILING = ".,;)"
VALUE_LIMIT = 4000


def start_url_of(task: str) -> str | None:
    """The first http(s) URL in the task, trailing ``.,;)`` stripped."""
    match = _URL.search(task)
    return match.group(0).rstrip(_TRAILING) if match else None


def capture_start_url(clipboard: Clipboard, url: str | None) -> bool:
    """Seed ``startUrl`` from the first non-``about:`` http(s) page when the task named none."""
    if clipboard.get("startUrl") is not None or not url or not url.startswith(("http://", "https://")):
        return False
    clipboard.seed("startUrl", url)
    return True


class Clipboard:
    """Per-session key/value store. Keys starting with ``_`` or ``found_links`` are internal and read-only."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    def seed(self, key: str, value: str) -> None:
        self._values[key] = value

    def get(self, key: str) -> str | None:
        return self._values.get(key)

    def keys(self) -> list[str]:
        return sorted(self._values)

    @staticmethod
    def is_internal(key: str) -> bool:
        return key.startswith(("_", "found_links"))

    def remember(self, key: str, value: str) -> str:
        if self.is_internal(key):
            return f"'{key}' is an internal key and cannot be overwritten."
        self._values[key] = value[:VALUE_LIMIT]
        return f"Remembered {key}."

    def recall(self, key: str) -> str:
        if key in self._values:
            return self._values[key]
        known = ", ".join(self.keys()) or "none yet"
        return f"Nothing is stored under '{key}'. Known keys: {known}."


class RememberParams(BaseModel):
    key: str = Field(description="A short name for the value.")
    value: str = Field(description="The value to keep for later steps.")


class RecallParams(BaseModel):
    key: str = Field(description="The name the value was remembered under.")


def register_clipboard(tools: Tools[Any], clipboard: Clipboard) -> None:
    @register_action(
        tools, "Store a small value under a key for later steps (the session clipboard).", param_model=RememberParams
    )
    async def remember(params: RememberParams) -> ActionResult:
        message = clipboard.remember(params.key, params.value)
        return ActionResult(extracted_content=message, long_term_memory=f"remember {params.key}")

    @register_action(tools, "Read a value from the session clipboard by key.", param_model=RecallParams)
    async def recall(params: RecallParams) -> ActionResult:
        return ActionResult(extracted_content=clipboard.recall(params.key), include_extracted_content_only_once=True)
