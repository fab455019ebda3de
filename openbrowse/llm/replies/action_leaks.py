"""An agent reply's ``action`` list written into a text instead of its place (spec §10.6), found in one order.

Models sometimes write a step's actions into a text: a field of the reply (``thinking``, ``memory`` …) or Claude's
extended-thinking block. Both repairs, the Anthropic content repair (``anthropic_repair``) and the shape
coercion every provider's agent replies go through (``agent.replies.shapes``), look for it here:

1. parameter markup, ``<parameter name="action">[…]</parameter>`` (the closing tag may be cut off), with any
   sibling parameters;
2. a whole serialised reply object carrying an ``action`` key, with its other fields;
3. an ``"action": […]`` fragment;
4. only when the caller knows the action vocabulary: a lone action object, or a bare list of action objects.

What counts as an action list is the caller's ``as_actions``: the Anthropic repair knows no action names and
takes any non-empty list of objects (so it leaves out step 4); the coercion knows the agent's actions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from openbrowse.llm.replies.parsing import balanced_spans, extract_json_object, first_balanced, markup_parameters

_ACTION_MARKUP = re.compile(r'<parameter name="action">(.*?)(?:</parameter>|$)', re.DOTALL)
_ACTION_KEY = re.compile(r'"?action"?\s*[:=]\s*(?=\[)')

AsActions = Callable[[Any], "list[Any] | None"]
"""The action list a value stands for (a list, a JSON string, one action object …), or ``None``."""


@dataclass(frozen=True, slots=True)
class Leak:
    actions: list[Any]
    before: str
    """The text before the leak, trimmed: what remains of the text once the leak is taken out."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Other reply fields found with the actions (sibling markup parameters, keys of a serialised reply)."""


def find_action_leak(text: str, as_actions: AsActions, *, knows_actions: bool = False) -> Leak | None:
    """The first leaked action list in ``text``, in the order of the module docstring, or ``None``."""
    return (
        _in_markup(text, as_actions)
        or _in_reply_object(text, as_actions)
        or _in_fragment(text, as_actions)
        or (_in_bare_shapes(text, as_actions) if knows_actions else None)
    )


def _in_markup(text: str, as_actions: AsActions) -> Leak | None:
    if "<parameter" not in text:
        return None
    parameters = markup_parameters(text)
    raw = parameters.pop("action", None)
    if raw is None:
        unclosed = _ACTION_MARKUP.search(text)
        raw = unclosed.group(1).strip() if unclosed is not None else None
    actions = as_actions(raw) if raw is not None else None
    if actions is None:
        return None
    return Leak(actions, text[: text.find("<")].strip(), parameters)


def _in_reply_object(text: str, as_actions: AsActions) -> Leak | None:
    whole = extract_json_object(text)
    if whole is None or "action" not in whole:
        return None
    actions = as_actions(whole["action"])
    if actions is None:
        return None
    return Leak(actions, text[: text.find("{")].strip(), {k: v for k, v in whole.items() if k != "action"})


def _in_fragment(text: str, as_actions: AsActions) -> Leak | None:
    match = _ACTION_KEY.search(text)
    span = first_balanced(text[match.end() :], "[") if match is not None else None
    actions = as_actions(span) if span else None
    if match is None or actions is None:
        return None
    return Leak(actions, text[: match.start()].rstrip().rstrip(",{").rstrip())


def _in_bare_shapes(text: str, as_actions: AsActions) -> Leak | None:
    whole = extract_json_object(text)
    actions = as_actions(whole) if whole is not None and "action" not in whole else None
    if actions is not None:
        return Leak(actions, text[: text.find("{")].strip())
    for span in balanced_spans(text, "["):
        actions = as_actions(span)
        if actions is not None:
            return Leak(actions, text[: text.find(span)].strip())
    return None
