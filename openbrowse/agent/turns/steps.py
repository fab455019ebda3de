"""Turning one finished agent step into its feed row (spec §5.2 "Step data")."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from openbrowse.agent.replies.cards import cards_of
from openbrowse.domain.feed import FeedEntry, MessageType

SNIPPET_LIMIT = 600
ERROR_LIMIT = 6000
ERROR_SUMMARY_LIMIT = 140

CATEGORIES: dict[str, frozenset[str]] = {
    "schema": frozenset(
        {
            "add_item",
            "update_item",
            "update_items",
            "set_field",
            "mark_absent",
            "remove_items",
            "read_output",
            "search_output",
            "add_items_from_file",
            "update_items_from_file",
        }
    ),
    "read": frozenset(
        {
            "read_pages",
            "find_links",
            "find_elements",
            "find_text",
            "extract",
            "search_page",
            "get_html",
            "screenshot",
            "save_as_pdf",
        }
    ),
    "navigation": frozenset(
        {"navigate", "search", "go_back", "switch", "close", "open_tabs", "goto_tab", "open_in_new_tab", "close_tab"}
    ),
    "interaction": frozenset(
        {
            "click",
            "input",
            "scroll",
            "send_keys",
            "select_dropdown",
            "dropdown_options",
            "upload_file",
            "solve_captcha",
        }
    ),
    "code": frozenset({"evaluate", "run_code_file"}),
    "network": frozenset({"http_fetch"}),
    "wait": frozenset({"wait"}),
    "done": frozenset({"done"}),
}
CONTENT_CATEGORIES = frozenset({"schema", "read", "code", "network", "done"})
_KEY_PARAMS = ("url", "query", "text", "index", "tab_id", "key", "keys", "name", "seconds")
_SENTENCE = re.compile(r"(?<=[.!?])\s")


def category_of(action: str) -> str:
    for category, names in CATEGORIES.items():
        if action in names:
            return category
    return "action"


def _action_name_and_params(action: Any) -> tuple[str, dict[str, Any]]:
    dumped = action.model_dump(exclude_unset=True) if hasattr(action, "model_dump") else dict(action)
    for name, params in dumped.items():
        if params is not None:
            return name, params if isinstance(params, dict) else {"value": params}
    return "unknown", {}


def _fingerprint(params: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(params, sort_keys=True, default=str).encode("utf-8")).hexdigest()


def first_sentence(text: str, limit: int = ERROR_SUMMARY_LIMIT) -> str:
    sentence = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    return sentence if len(sentence) <= limit else sentence[: limit - 1] + "…"


def _key_param(params: dict[str, Any]) -> str | None:
    for key in _KEY_PARAMS:
        value = params.get(key)
        if value not in (None, ""):
            return str(value)
    return None


def step_entry(
    *,
    step: int,
    duration: float,
    model_output: Any,
    results: list[Any],
) -> FeedEntry:
    """The feed row for one step: ``browser_action``, ``result`` or ``browser_action_error``."""
    planned = [_action_name_and_params(action) for action in (getattr(model_output, "action", None) or [])]
    executed = planned[: len(results)] if results else []
    primary_name, primary_params = (executed or planned or [("unknown", {})])[0]
    category = category_of(primary_name)
    cards = cards_of(model_output)
    data: dict[str, Any] = {
        "step": step,
        "durationSeconds": round(duration, 2),
        "category": category,
        "action": primary_name,
        "actions": [name for name, _ in executed],
        "argsFingerprint": [_fingerprint(params) for _, params in executed],
        "isCode": category == "code",
        **cards,
    }
    thinking = getattr(model_output, "thinking", None)
    if thinking:
        data["thinking"] = str(thinking)[:ERROR_LIMIT]
    content = next((r.extracted_content for r in results if getattr(r, "extracted_content", None)), None)
    if content:
        data["resultSnippet"] = str(content)[:SNIPPET_LIMIT]
    failed = next(((i, r) for i, r in enumerate(results) if getattr(r, "error", None)), None)
    if failed is not None:
        index, result = failed
        error = str(result.error)
        data["errorAction"] = executed[index][0] if index < len(executed) else primary_name
        data["errorFull"] = error[:ERROR_LIMIT]
        return FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Error: {first_sentence(error)}", data)
    summary = (
        cards.get("next")
        or (getattr(model_output, "next_goal", None) or "").strip()
        or _key_param(primary_params)
        or primary_name
    )
    kind = MessageType.RESULT if content and category in CONTENT_CATEGORIES else MessageType.BROWSER_ACTION
    return FeedEntry(kind, summary, data)


def failed_step_entry(step: int, duration: float, error: str) -> FeedEntry:
    """A step that produced no model output (the LLM call failed, or the step was cancelled or timed out)."""
    data = {
        "step": step,
        "durationSeconds": round(duration, 2),
        "category": "action",
        "action": "step",
        "actions": [],
        "argsFingerprint": [],
        "isCode": False,
        "errorAction": "step",
        "errorFull": error[:ERROR_LIMIT],
    }
    return FeedEntry(MessageType.BROWSER_ACTION_ERROR, f"Error: {first_sentence(error)}", data)
