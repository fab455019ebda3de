"""browser-use agent replies for scripts: well-formed steps, and the malformed shapes real models produce."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tests.fakes.llm_reply import Reply
from tests.fakes.llm_request import LLMRequest, find_index

DEFAULT_DONE_TEXT = "Task completed (fake provider default reply)."


def agent_step(
    actions: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
    *,
    see: str = "The page as described in the browser state.",
    plan: str = "Follow the task step by step.",
    next: str = "Carry out the planned action.",
    thinking: str | None = None,
    evaluation: str = "Success - the previous action worked.",
    memory: str = "Working on the task.",
    next_goal: str | None = None,
    cards: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """A browser-use AgentOutput dict: ``agent_step([{"click": {"index": 5}}], see=..., plan=..., next=...)``.

    ``cards=False`` leaves out the project's what_i_see / plan_to_goal / next_move fields (stock AgentOutput
    forbids extra keys). ``extra`` adds or overrides top-level fields (e.g. ``current_plan_item=0``).
    """
    if actions is None:
        action_list: list[dict[str, Any]] = []
    elif isinstance(actions, Mapping):
        action_list = [dict(actions)]
    else:
        action_list = [dict(a) for a in actions]
    step: dict[str, Any] = {
        "thinking": thinking,
        "evaluation_previous_goal": evaluation,
        "memory": memory,
        "next_goal": next_goal or next,
        "action": action_list,
    }
    if cards:
        step.update(what_i_see=see, plan_to_goal=plan, next_move=next)
    step.update(extra)
    return step


def done(
    answer: str = DEFAULT_DONE_TEXT, *, success: bool = True, data: Any = None, **step_options: Any
) -> dict[str, Any]:
    """An agent step whose only action is ``done`` (with ``data=`` for an output-model ``done``)."""
    params: dict[str, Any] = {"success": success}
    if data is not None:
        params["data"] = data
    else:
        params["text"] = answer
    step_options.setdefault("next", "Finish the task.")
    return agent_step({"done": params}, **step_options)


def run_code(name: str, code: str | None = None, **step_options: Any) -> dict[str, Any]:
    """An agent step whose only action is ``run_code_file(name, code)``."""
    params: dict[str, Any] = {"name": name}
    if code is not None:
        params["code"] = code
    step_options.setdefault("next", f"Run the script {name}.")
    return agent_step({"run_code_file": params}, **step_options)


def click_on(needle: str, **step_options: Any) -> Callable[[LLMRequest], dict[str, Any]]:
    """A reply callable: click the element whose text contains ``needle`` in the current page state."""

    def choose(request: LLMRequest) -> dict[str, Any]:
        step_options.setdefault("next", f"Click {needle!r}.")
        return agent_step({"click": {"index": find_index(request, needle)}}, **step_options)

    return choose


def type_into(needle: str, value: str, **step_options: Any) -> Callable[[LLMRequest], dict[str, Any]]:
    """A reply callable: type ``value`` into the element whose line or text contains ``needle``."""

    def choose(request: LLMRequest) -> dict[str, Any]:
        step_options.setdefault("next", f"Type into {needle!r}.")
        return agent_step({"input": {"index": find_index(request, needle), "text": value}}, **step_options)

    return choose


def navigate(url: str, **step_options: Any) -> dict[str, Any]:
    step_options.setdefault("next", f"Open {url}.")
    return agent_step({"navigate": {"url": url, "new_tab": False}}, **step_options)


# --------------------------------------------------------------------------------------------------------------
# Malformed agent replies: the shapes real models get wrong (take an ``agent_step`` dict, return a reply-like)


def _without_action(step: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in step.items() if key != "action"}


def action_as_json_string(step: Mapping[str, Any]) -> dict[str, Any]:
    """``"action": "[{\"navigate\": {...}}]"`` — the list serialised into a string."""
    return {**step, "action": json.dumps(step["action"])}


def single_action_object(step: Mapping[str, Any]) -> dict[str, Any]:
    """``"action": {"navigate": {...}}`` — the first action object instead of a list."""
    return {**step, "action": step["action"][0]}


def action_leaked(step: Mapping[str, Any], into: str = "memory") -> dict[str, Any]:
    """No ``action``; the list is written into the text of another field as ``"action": [...]``."""
    leaked = f'{step.get(into) or "Next I act."} {{"action": {json.dumps(step["action"])}}}'
    return {**_without_action(step), into: leaked}


def action_as_top_level_keys(step: Mapping[str, Any]) -> dict[str, Any]:
    """No ``action``; each action object's key sits at the top level of the reply."""
    result = _without_action(step)
    for item in step["action"]:
        result.update(item)
    return result


def missing_action(step: Mapping[str, Any]) -> dict[str, Any]:
    """The narrative without any ``action``."""
    return _without_action(step)


def blank_cards(step: Mapping[str, Any]) -> dict[str, Any]:
    """Every narrative field empty, the actions intact."""
    narrative = ("what_i_see", "plan_to_goal", "next_move", "evaluation_previous_goal", "memory", "next_goal")
    return {**step, **dict.fromkeys((key for key in narrative if key in step), "")}


def list_argument_as_string(step: Mapping[str, Any]) -> dict[str, Any]:
    """Every list-valued action argument sent as a JSON string (``"files_to_display": "[]"``)."""
    actions = [
        {name: {k: json.dumps(v) if isinstance(v, list) else v for k, v in (params or {}).items()}}
        for item in step["action"]
        for name, params in item.items()
    ]
    return {**step, "action": actions}


def split_tool_calls(step: Mapping[str, Any]) -> Reply:
    """The reply split in two: the narrative, then the actions (Anthropic: two parallel ``tool_use`` blocks)."""
    narrative = _without_action(step)
    return Reply(content=dict(step), parts=(narrative, {"action": list(step["action"])}))


def action_in_thinking_block(step: Mapping[str, Any]) -> Reply:
    """No ``action``; the list written into the extended-thinking block (Anthropic) / reasoning summary."""
    return Reply(content=_without_action(step), thinking=f'I will act now. "action": {json.dumps(step["action"])}')


def verdict(passed: bool = True, reason: str = "", *, reasoning: str | None = None) -> dict[str, Any]:
    """A reviewer (judge) reply: ``verdict(False, "add the salaries")`` asks for changes."""
    said = reasoning if reasoning is not None else ("The result matches the task." if passed else reason)
    return {"verdict": passed, "reasoning": said, "failureReason": "" if passed else reason}


def is_review(request: LLMRequest) -> bool:
    """Predicate for ``script(when=...)``: the reviewer's judge call."""
    return request.is_review
