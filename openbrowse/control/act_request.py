"""What ``POST /act`` accepts: the kinds, their fields, and the checks made before anything runs (spec §20.2, §20.4).

Pure functions on the JSON body. A refusal here is a 400 (``ACT_KIND_REQUIRED``, ``ACT_INVALID_REQUEST``,
``ACT_SELECTOR_UNSUPPORTED``) or a 403 (``ACT_EVALUATE_DISABLED``); a batch is checked whole, nested actions
included, so a bad entry fails the batch before its first action runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

from openbrowse.control.errors import ControlError, act_invalid
from openbrowse.control.refs import normalize_ref

__all__ = [
    "BATCH_MAX_ACTIONS",
    "BATCH_MAX_DEPTH",
    "KINDS",
    "evaluate_source",
    "iter_actions",
    "refs_of",
    "validate_action",
]

KINDS = frozenset(
    {
        "click",
        "clickCoords",
        "type",
        "insertText",
        "press",
        "hover",
        "scrollIntoView",
        "drag",
        "select",
        "fill",
        "resize",
        "wait",
        "evaluate",
        "close",
        "batch",
    }
)
BATCH_MAX_ACTIONS = 100
BATCH_MAX_DEPTH = 5
BUTTONS = frozenset({"left", "right", "middle"})
MODIFIERS = frozenset({"Alt", "Control", "ControlOrMeta", "Meta", "Shift"})
LOAD_STATES = frozenset({"load", "domcontentloaded", "networkidle"})


def _kind_required(message: str) -> ControlError:
    return ControlError(400, message, "ACT_KIND_REQUIRED")


def evaluate_disabled() -> ControlError:
    return ControlError(403, "evaluate is disabled for this browser (CONTROL_EVALUATE=0)", "ACT_EVALUATE_DISABLED")


def validate_action(action: object, *, evaluate_enabled: bool = True, depth: int = 0) -> dict[str, Any]:
    """``action`` checked field by field (nested batches too); returns it as a dict."""
    if not isinstance(action, dict):
        raise act_invalid("Each action must be an object")
    kind = action.get("kind")
    if kind is None or kind == "":
        raise _kind_required("kind is required")
    if not isinstance(kind, str) or kind not in KINDS:
        raise _kind_required(f"Unknown act kind: {kind}")
    if action.get("selector") not in (None, "") and kind != "wait":
        raise ControlError(
            400, f"selector is not supported for {kind}; use a ref from a snapshot", "ACT_SELECTOR_UNSUPPORTED"
        )
    _check_timeout(action)
    _CHECKS[kind](action, evaluate_enabled, depth)
    return action


def _check_timeout(action: dict[str, Any]) -> None:
    if action.get("timeoutMs") is not None:
        _number(action, "timeoutMs", minimum=0)


def _ref(action: dict[str, Any], name: str = "ref") -> None:
    if not normalize_ref(action.get(name)):
        raise act_invalid(f"{name} is required")


def _text(action: dict[str, Any], name: str, *, required: bool = True, allow_empty: bool = False) -> None:
    value = action.get(name)
    if value is None:
        if required:
            raise act_invalid(f"{name} is required")
        return
    if not isinstance(value, str):
        raise act_invalid(f"{name} must be a string")
    if required and not value and not allow_empty:
        raise act_invalid(f"{name} is required")


def _number(action: dict[str, Any], name: str, *, minimum: float | None = None, required: bool = True) -> None:
    value = action.get(name)
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise act_invalid(f"{name} must be a number")
    if minimum is not None and value < minimum:
        raise act_invalid(f"{name} must be at least {minimum:g}")


def _flag(action: dict[str, Any], name: str) -> None:
    if action.get(name) is not None and not isinstance(action[name], bool):
        raise act_invalid(f"{name} must be true or false")


def _click(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _ref(action)
    _flag(action, "double")
    button = action.get("button")
    if button is not None and button not in BUTTONS:
        raise act_invalid("button must be left, right or middle")
    modifiers = action.get("modifiers")
    if modifiers is not None and (not isinstance(modifiers, list) or not set(modifiers) <= MODIFIERS):
        raise act_invalid(f"modifiers must be a list of {', '.join(sorted(MODIFIERS))}")


def _click_coords(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _number(action, "x")
    _number(action, "y")


def _type(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _ref(action)
    _text(action, "text", allow_empty=True)
    _flag(action, "submit")
    _flag(action, "slowly")


def _insert_text(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _text(action, "text", allow_empty=True)


def _press(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _text(action, "key")


def _ref_only(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _ref(action)


def _drag(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _ref(action, "startRef")
    _ref(action, "endRef")


def _select(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    _ref(action)
    values = action.get("values")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise act_invalid("values must be a non-empty list of strings")


def _fill(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    fields = action.get("fields")
    if not isinstance(fields, list) or not fields:
        raise act_invalid("fields must be a non-empty list")
    for field in fields:
        if not isinstance(field, dict):
            raise act_invalid("Each field must be an object with ref and value")
        _ref(field)
        if field.get("type") is not None and not isinstance(field["type"], str):
            raise act_invalid("field type must be a string")
        if not isinstance(field.get("value"), str | bool | int | float):
            raise act_invalid("field value must be a string, number or boolean")


def _resize(action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    for name in ("width", "height"):
        _number(action, name, minimum=1)


def _wait(action: dict[str, Any], evaluate: bool, _depth: int) -> None:
    conditions = ("timeMs", "text", "textGone", "selector", "url", "loadState", "fn")
    if all(action.get(name) in (None, "") for name in conditions):
        raise act_invalid("wait needs timeMs, text, textGone, selector, url, loadState or fn")
    _number(action, "timeMs", minimum=0, required=False)
    for name in ("text", "textGone", "selector", "url", "fn"):
        _text(action, name, required=False)
    if action.get("loadState") is not None and action["loadState"] not in LOAD_STATES:
        raise act_invalid("loadState must be load, domcontentloaded or networkidle")
    if action.get("fn") and not evaluate:
        raise evaluate_disabled()


def _evaluate(action: dict[str, Any], evaluate: bool, _depth: int) -> None:
    if not evaluate:
        raise evaluate_disabled()
    _text(action, "fn")
    if action.get("ref") not in (None, ""):
        _ref(action)


def _close(_action: dict[str, Any], _evaluate: bool, _depth: int) -> None:
    return None


def _batch(action: dict[str, Any], evaluate: bool, depth: int) -> None:
    if depth >= BATCH_MAX_DEPTH:
        raise act_invalid(f"Batch nesting depth exceeds maximum of {BATCH_MAX_DEPTH}")
    actions = action.get("actions")
    if not isinstance(actions, list) or not actions:
        raise act_invalid("actions must be a non-empty list")
    if len(actions) > BATCH_MAX_ACTIONS:
        raise act_invalid(f"Batch exceeds maximum of {BATCH_MAX_ACTIONS} actions")
    _flag(action, "stopOnError")
    for nested in actions:
        validate_action(nested, evaluate_enabled=evaluate, depth=depth + 1)


_CHECKS = {
    "click": _click,
    "clickCoords": _click_coords,
    "type": _type,
    "insertText": _insert_text,
    "press": _press,
    "hover": _ref_only,
    "scrollIntoView": _ref_only,
    "drag": _drag,
    "select": _select,
    "fill": _fill,
    "resize": _resize,
    "wait": _wait,
    "evaluate": _evaluate,
    "close": _close,
    "batch": _batch,
}


def iter_actions(action: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``action`` and, for a batch, every nested action (depth first)."""
    yield action
    if action.get("kind") == "batch":
        for nested in action.get("actions") or []:
            yield from iter_actions(nested)


def refs_of(action: dict[str, Any]) -> list[str]:
    """Every ref ``action`` names (nested actions and fill fields included), in order."""
    found: list[str] = []
    for each in iter_actions(action):
        for name in ("ref", "startRef", "endRef"):
            if each.get(name) not in (None, ""):
                found.append(normalize_ref(each[name]))
        for field in each.get("fields") or [] if each.get("kind") == "fill" else []:
            found.append(normalize_ref(field.get("ref")))
    return found


_FUNCTION = re.compile(r"^\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|[A-Za-z_$][\w$]*\s*=>)", re.S)
_STATEMENT = re.compile(r"(?:^|[;{}\n])\s*(?:return|const|let|var|if|for|while|try|throw|await)\b|;", re.S)


def evaluate_source(fn: str, *, with_element: bool) -> str:
    """``fn`` as a function Playwright can call: a function as is, a statement body wrapped in an async function
    (its ``return`` is the result), an expression wrapped as the function's value."""
    if _FUNCTION.match(fn):
        return fn
    parameter = "el" if with_element else ""
    if _STATEMENT.search(fn):
        return f"async ({parameter}) => {{\n{fn}\n}}"
    return f"({parameter}) => (\n{fn}\n)"
