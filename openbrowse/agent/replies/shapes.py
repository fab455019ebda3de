"""Unambiguous shape slips in an agent reply, coerced before validation (spec §10.6).

Runs as a ``mode="before"`` validator of the card-carrying ``AgentOutput`` (``cards.with_cards``), so every
provider adapter benefits whatever way it parses. Only shapes with one possible meaning are rewritten:

* ``action`` sent as a JSON string, or as one action object instead of a list;
* an action item sent as a JSON string, as ``{"name": …, "arguments": {…}}``, or with its arguments as a
  JSON string;
* an argument the action declares as an array or object, sent as a JSON string of that type;
* ``action`` missing or empty while the actions sit elsewhere: as top-level keys named after actions, or
  serialised into a text field (``thinking``, ``memory``, ``next_goal`` …) as ``"action": […]``, a whole reply
  object, parameter markup or a bare list of action objects (found by ``llm.action_leaks``). The leaked text
  is removed from that field.

Anything else is left for validation to reject; :mod:`openbrowse.agent.replies.repair` then names the defect.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, RootModel

from openbrowse.llm.replies.action_leaks import find_action_leak
from openbrowse.llm.replies.parsing import strip_code_fences

TEXT_FIELDS = (
    "thinking",
    "memory",
    "next_goal",
    "evaluation_previous_goal",
    "what_i_see",
    "plan_to_goal",
    "next_move",
)
_CALL_KEYS = ("arguments", "params", "parameters", "input", "args")


# -- the action vocabulary of an AgentOutput type ------------------------------------------------------------------


def _variants(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, RootModel):
        return _variants(annotation.model_fields["root"].annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [model for arg in get_args(annotation) for model in _variants(arg)]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return []


_PARAMS_ATTRIBUTE = "_openbrowse_action_params"


def action_params(output_format: type[BaseModel]) -> Mapping[str, type[BaseModel] | None]:
    """``{action name: its parameter model}`` for an AgentOutput type (empty if it has no ``action`` list).

    Kept on the class itself: browser-use builds a new AgentOutput type per agent, and a process-wide cache
    keyed by it kept every finished session's tools, registry and models alive.
    """
    cached: Mapping[str, type[BaseModel] | None] | None = output_format.__dict__.get(_PARAMS_ATTRIBUTE)
    if cached is None:
        cached = _action_params(output_format)
        setattr(output_format, _PARAMS_ATTRIBUTE, cached)
    return cached


def _action_params(output_format: type[BaseModel]) -> Mapping[str, type[BaseModel] | None]:
    field = output_format.model_fields.get("action")
    if field is None:
        return {}
    args = get_args(field.annotation)
    if not args:
        return {}
    result: dict[str, type[BaseModel] | None] = {}
    for variant in _variants(args[0]):
        for name, info in variant.model_fields.items():
            params = info.annotation
            result[name] = params if isinstance(params, type) and issubclass(params, BaseModel) else None
    return result


def _container_type(annotation: Any) -> type | None:
    """``list`` or ``dict`` if a field is declared as an array or object (optional or not), else ``None``."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        kinds = {_container_type(arg) for arg in get_args(annotation) if arg is not type(None)}
        return kinds.pop() if len(kinds) == 1 else None
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        return list
    if origin is dict or annotation is dict:
        return dict
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return dict
    return None


# -- coercion ------------------------------------------------------------------------------------------------------


def _loads(text: str) -> Any:
    body = strip_code_fences(text)
    try:
        return json.loads(body, strict=False)
    except ValueError:
        return None


def _as_item(value: Any, names: Mapping[str, Any]) -> Any:
    """One action item in its canonical ``{name: {args}}`` shape, if it unambiguously is one."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        decoded = _loads(value)
        value = decoded if isinstance(decoded, dict) else value
    if not isinstance(value, dict):
        return value
    called = value.get("name")
    if isinstance(called, str) and called in names and len(value) <= 2:
        value = {called: next((value[key] for key in _CALL_KEYS if key in value), {})}
    if len(value) == 1:
        ((name, args),) = value.items()
        if isinstance(args, str) and args.lstrip().startswith("{"):
            decoded = _loads(args)
            args = decoded if isinstance(decoded, dict) else args
        params = names.get(name)
        if args is None and params is not None and not params.model_fields:
            args = {}
        if isinstance(args, dict) and params is not None:
            args = _coerce_args(args, params)
        value = {name: args}
    return value


def _coerce_args(args: dict[str, Any], params: type[BaseModel]) -> dict[str, Any]:
    fixed = dict(args)
    for key, value in args.items():
        info = params.model_fields.get(key)
        if info is None or not isinstance(value, str):
            continue
        expected = _container_type(info.annotation)
        if expected is None:
            continue
        decoded = _loads(value) if value.lstrip()[:1] in ("[", "{") else None
        if isinstance(decoded, expected):
            fixed[key] = decoded
    return fixed


def _looks_like_actions(value: Any, names: Mapping[str, Any]) -> bool:
    items = value if isinstance(value, list) else [value]
    return bool(items) and all(
        isinstance(item, dict) and (next(iter(item), None) in names or item.get("name") in names) for item in items
    )


def _as_list(value: Any, names: Mapping[str, Any]) -> list[Any] | None:
    """The action list ``value`` stands for, or ``None`` if it is not one."""
    if isinstance(value, str):
        value = _loads(value)
    if isinstance(value, dict):
        if "action" in value and not _looks_like_actions(value, names):
            value = value["action"]
            if isinstance(value, str):
                value = _loads(value)
        if isinstance(value, dict):
            value = [value]
    if not isinstance(value, list) or not value:
        return None
    items = [_as_item(item, names) for item in value]
    return items if _looks_like_actions(items, names) else None


def _recover_leak(data: dict[str, Any], names: Mapping[str, Any]) -> dict[str, Any]:
    top_level = [key for key in data if key in names and key != "action"]
    if top_level:
        repaired = {key: value for key, value in data.items() if key not in top_level}
        repaired["action"] = [_as_item({key: data[key]}, names) for key in top_level]
        return repaired
    for field in TEXT_FIELDS:
        text = data.get(field)
        if not isinstance(text, str) or "{" not in text:
            continue
        leak = find_action_leak(text, lambda value: _as_list(value, names), knows_actions=True)
        if leak is not None:
            return {**data, "action": leak.actions, field: leak.before or None}
    return data


def coerce_reply(data: Any, output_format: type[BaseModel]) -> Any:
    """``data`` with the unambiguous slips above fixed; anything that is not a dict is returned unchanged."""
    names = action_params(output_format)
    if not isinstance(data, dict) or not names:
        return data
    repaired = dict(data)
    if "action" in repaired and repaired["action"] not in (None, "", [], {}):
        actions = _as_list(repaired["action"], names)
        if actions is not None:
            repaired["action"] = actions
        elif isinstance(repaired["action"], list):
            repaired["action"] = [_as_item(item, names) for item in repaired["action"]]
        return repaired
    return _recover_leak(repaired, names)


# -- what validation saw, for the repair layer's diagnosis ---------------------------------------------------------

_seen: ContextVar[list[Any] | None] = ContextVar("openbrowse_reply_seen", default=None)


@contextmanager
def watch_replies() -> Iterator[list[Any]]:
    """Collect every (coerced) reply dict validated inside the block, in order."""
    seen: list[Any] = []
    token = _seen.set(seen)
    try:
        yield seen
    finally:
        _seen.reset(token)


def coerce_and_record(data: Any, output_format: type[BaseModel]) -> Any:
    """The validator body: coerce, and let :func:`watch_replies` see the result."""
    coerced = coerce_reply(data, output_format)
    holder = _seen.get()
    if holder is not None:
        holder.append(coerced)
    return coerced
