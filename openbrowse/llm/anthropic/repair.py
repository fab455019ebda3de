"""Repairs applied to an Anthropic structured-output reply before browser-use parses it (spec §10.6).

browser-use's ``ChatAnthropic`` asks for structured output as one call of a tool named after the output
model and reads the *first* ``tool_use`` block. Claude sometimes gets the shape wrong in ways that still
carry the whole answer; these pure functions rewrite the reply's content blocks (plain dicts, as the Messages
API sends them) so the answer survives:

* **split tool calls** — the answer arrives as several ``tool_use`` blocks (say, the narrative in one and the
  ``action`` list in another): the inputs are merged into one block (``action`` lists concatenated, other
  fields first-non-empty-wins) that takes the first block's place;
* **action leak** — the ``action`` list is missing (or is a JSON string) and was written into the ``thinking``
  string instead (found by ``action_leaks``: markup, a whole serialised call, an ``"action": […]`` fragment):
  the list is moved back into ``action`` and the leaked text removed from ``thinking``; failing that, the same
  is looked for in the extended-thinking block;
* **tool call rendered as text** — no ``tool_use`` block at all, but the text holds the call as JSON (maybe
  fenced, maybe wrapped as ``{"name": …, "input": {…}}``) or as parameter markup: a ``tool_use`` block is
  synthesised from it.

Anything that does not fit is left untouched, so browser-use's own recovery and errors still apply.
"""

from __future__ import annotations

import json
from typing import Any

from openbrowse.llm.replies.action_leaks import find_action_leak
from openbrowse.llm.replies.parsing import EMPTY_VALUES, extract_json_object, markup_parameters, merge_replies

RECOVERED_TOOL_USE_ID = "toolu_recovered_from_text"


def _is_tool_use(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_use"


def _blocks_of(content: list[Any], kind: str, field: str) -> list[str]:
    return [str(block.get(field) or "") for block in content if isinstance(block, dict) and block.get("type") == kind]


def merge_tool_calls(content: list[Any]) -> list[Any]:
    """Merge several ``tool_use`` blocks into one (at the first one's position)."""
    tool_blocks = [block for block in content if _is_tool_use(block)]
    if len(tool_blocks) < 2:
        return content
    inputs = [block["input"] for block in tool_blocks if isinstance(block.get("input"), dict)]
    merged = {**tool_blocks[0], "input": merge_replies(inputs)}
    result: list[Any] = []
    for block in content:
        if block is tool_blocks[0]:
            result.append(merged)
        elif not _is_tool_use(block):
            result.append(block)
    return result


def _action_list(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        return value
    return None


def _leak_from_thinking(thinking: str) -> tuple[dict[str, Any], str | None] | None:
    """``(recovered fields with the action list, thinking text that remains)`` if ``thinking`` hides one."""
    leak = find_action_leak(thinking, _action_list)
    if leak is None:
        return None
    remaining = leak.fields.get("thinking")
    return {**leak.fields, "action": leak.actions}, remaining if isinstance(remaining, str) else leak.before or None


def recover_leaked_action(data: dict[str, Any]) -> dict[str, Any]:
    """Put back an ``action`` list that leaked into ``thinking`` (or arrived as a JSON string)."""
    current = data.get("action")
    if isinstance(current, list) and current:
        return data
    decoded = _action_list(current) if isinstance(current, str) else None
    if decoded is not None:
        return {**data, "action": decoded}
    thinking = data.get("thinking")
    if not isinstance(thinking, str):
        return data
    leak = _leak_from_thinking(thinking)
    if leak is None:
        return data
    recovered, remaining = leak
    repaired = dict(data)
    for key, value in recovered.items():
        if key == "thinking":
            continue
        if key == "action":
            repaired["action"] = _action_list(value)
        elif repaired.get(key) in EMPTY_VALUES:
            repaired[key] = value
    repaired["thinking"] = remaining
    return repaired


def _unwrap_call(value: dict[str, Any], tool_name: str) -> dict[str, Any]:
    for key in ("input", "arguments", "parameters"):
        inner = value.get(key)
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                continue
        if isinstance(inner, dict) and (value.get("name") in (None, tool_name) or "type" in value):
            return inner
    return value


def tool_call_from_text(content: list[Any], tool_name: str) -> list[Any]:
    """Synthesise a ``tool_use`` block from a call the model wrote as text (no-op if a block exists)."""
    if any(_is_tool_use(block) for block in content):
        return content
    text = "".join(_blocks_of(content, "text", "text"))
    if not text.strip():
        return content
    data: dict[str, Any] | None = markup_parameters(text) or None
    if data is None:
        found = extract_json_object(text)
        data = _unwrap_call(found, tool_name) if found is not None else None
    if not data:
        return content
    return [*content, {"id": RECOVERED_TOOL_USE_ID, "name": tool_name, "input": data, "type": "tool_use"}]


def _thinking_text(content: list[Any]) -> str:
    return "\n".join(_blocks_of(content, "thinking", "thinking"))


def recover_from_thinking_block(data: dict[str, Any], thinking: str) -> dict[str, Any]:
    """Put back an ``action`` list that was written into the extended-thinking block instead of the call."""
    if _action_list(data.get("action")) is not None or not thinking.strip():
        return data
    leak = _leak_from_thinking(thinking)
    if leak is None:
        return data
    recovered, _ = leak
    repaired = dict(data)
    repaired["action"] = _action_list(recovered.get("action"))
    for key, value in recovered.items():
        if key not in ("action", "thinking") and repaired.get(key) in EMPTY_VALUES:
            repaired[key] = value
    return repaired


def repair_content(content: list[Any], tool_name: str, *, expects_action: bool) -> list[Any]:
    """All repairs, in order: text → tool call, merge split calls, recover a leaked action list (from the
    ``thinking`` field, then from the thinking block)."""
    repaired = merge_tool_calls(tool_call_from_text(content, tool_name))
    if not expects_action:
        return repaired
    thinking = _thinking_text(repaired)
    result: list[Any] = []
    for block in repaired:
        if _is_tool_use(block) and isinstance(block.get("input"), dict):
            fixed = recover_from_thinking_block(recover_leaked_action(block["input"]), thinking)
            if fixed is not block["input"]:
                block = {**block, "input": fixed}
        result.append(block)
    return result
