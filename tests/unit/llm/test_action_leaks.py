"""One finder of action lists leaked into a text, shared by the Anthropic repair and the agent's shape coercion."""

from __future__ import annotations

import json
from typing import Any

from openbrowse.llm.replies.action_leaks import find_action_leak

CLICK = [{"click": {"index": 12}}]


def any_objects(value: Any) -> list[Any] | None:
    """The Anthropic repair's notion: a non-empty list of objects (or its JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, list) and value and all(isinstance(i, dict) for i in value) else None


def test_markup_with_sibling_parameters_and_an_unclosed_action_tag() -> None:
    closed = find_action_leak(
        f'Plan.<parameter name="memory">m</parameter><parameter name="action">{json.dumps(CLICK)}</parameter>',
        any_objects,
    )
    assert closed is not None and (closed.actions, closed.before, closed.fields) == (CLICK, "Plan.", {"memory": "m"})
    unclosed = find_action_leak(f'Plan.<parameter name="action">{json.dumps(CLICK)}', any_objects)
    assert unclosed is not None and (unclosed.actions, unclosed.before) == (CLICK, "Plan.")


def test_a_serialised_reply_wins_over_its_own_action_fragment() -> None:
    text = f'Going. {{"memory": "m", "action": {json.dumps(CLICK)}}}'
    leak = find_action_leak(text, any_objects)
    assert leak is not None and (leak.actions, leak.before, leak.fields) == (CLICK, "Going.", {"memory": "m"})


def test_fragment_then_bare_shapes_only_for_callers_that_know_the_actions() -> None:
    fragment = find_action_leak(f'So: "action": {json.dumps(CLICK)}', any_objects)
    assert fragment is not None and (fragment.actions, fragment.before) == (CLICK, "So:")
    bare = f"Do {json.dumps(CLICK)}"
    assert find_action_leak(bare, any_objects) is None
    leak = find_action_leak(bare, any_objects, knows_actions=True)
    assert leak is not None and (leak.actions, leak.before) == (CLICK, "Do")
    assert find_action_leak("nothing here {not json}", any_objects, knows_actions=True) is None
