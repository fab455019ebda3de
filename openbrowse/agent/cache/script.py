"""A cached script's content (spec §27.3), built from the steps of a successful agent run. Pure: no browser.

The format is ours, JSON in the workspace's ``scripts/``: the template, the browser steps that worked (``navigate``
with its URL, ``click``, ``type`` and ``select`` with the element's XPath), and the output as the first run gave it
with each text that came from the final page replaced by a slot naming that element (``{{e3}}``) and each parameter
value replaced by its placeholder (``{{0}}``). A replay fills the parameters into the steps, does them, reads the
slots' elements and fills them into the output: the first run's shape with the new page's values.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SCRIPT_VERSION", "CachedScript", "Step", "fill", "render_output", "template_output", "with_placeholders"]

SCRIPT_VERSION = 1
_SLOT = re.compile(r"\{\{(e?)(\d+)\}\}")
MIN_SLOT_TEXT = 2


@dataclass(frozen=True, slots=True)
class Step:
    kind: str  # navigate | click | type | select
    url: str = ""
    xpath: str = ""
    text: str = ""
    label: str = ""
    """What the step acts on, in words (a failure names it)."""
    navigates: bool = False
    """In the first run, the page changed after this step: a replay waits for the new page."""

    def describe(self, number: int) -> str:
        what = self.url if self.kind == "navigate" else self.label or self.xpath
        return f"step {number} ({self.kind} {what})"


def _fields(step: Step) -> dict[str, Any]:
    names = ("kind", "url", "xpath", "text", "label", "navigates")
    return {name: getattr(step, name) for name in names if getattr(step, name)}


@dataclass(frozen=True, slots=True)
class CachedScript:
    template: str
    steps: tuple[Step, ...]
    output: Any
    """The output with slots: ``{{eN}}`` for ``elements[N]``'s text, ``{{N}}`` for parameter N."""
    elements: tuple[str, ...] = ()
    """XPaths of the elements whose texts fill the output's slots."""
    created_at: str = ""
    heals: int = 0

    def to_json(self) -> str:
        body = {
            "version": SCRIPT_VERSION,
            "template": self.template,
            "steps": [_fields(step) for step in self.steps],
            "output": self.output,
            "elements": list(self.elements),
            "createdAt": self.created_at,
            "heals": self.heals,
        }
        return json.dumps(body, ensure_ascii=False, indent=1)

    @classmethod
    def from_json(cls, text: str) -> CachedScript | None:
        """The script, or None for anything that is not a script of this version (then it is made again)."""
        try:
            body = json.loads(text)
            if body.get("version") != SCRIPT_VERSION:
                return None
            steps = tuple(Step(**{k: v for k, v in raw.items() if k in Step.__slots__}) for raw in body["steps"])
            return cls(
                template=str(body["template"]),
                steps=steps,
                output=body["output"],
                elements=tuple(str(x) for x in body.get("elements", [])),
                created_at=str(body.get("createdAt", "")),
                heals=int(body.get("heals", 0)),
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


def with_placeholders(text: str, values: Sequence[str]) -> str:
    """``text`` with each parameter value (longest first) replaced by its ``{{n}}``."""
    for index in sorted(range(len(values)), key=lambda i: -len(values[i])):
        if values[index]:
            text = text.replace(values[index], f"{{{{{index}}}}}")
    return text


def fill(text: str, values: Sequence[str], element_texts: Sequence[str] = ()) -> str:
    def one(match: re.Match[str]) -> str:
        index = int(match.group(2))
        source = element_texts if match.group(1) else values
        return source[index] if index < len(source) else match.group(0)

    return _SLOT.sub(one, text)


def _template_text(text: str, page: Sequence[tuple[str, str]], used: dict[str, int], values: Sequence[str]) -> str:
    for xpath, seen in page:
        if seen == text:
            return f"{{{{e{used.setdefault(xpath, len(used))}}}}}"
    candidates = sorted(
        ((xpath, seen) for xpath, seen in page if len(seen) >= MIN_SLOT_TEXT and seen in text),
        key=lambda pair: -len(pair[1]),
    )
    for xpath, seen in candidates:
        if seen in text:
            text = text.replace(seen, f"{{{{e{used.setdefault(xpath, len(used))}}}}}", 1)
    return with_placeholders(text, values)


def template_output(output: Any, page: Sequence[tuple[str, str]], values: Sequence[str]) -> tuple[Any, list[str]]:
    """``output`` with the final page's texts as element slots (``page``: ``(xpath, text)`` in document order) and
    the parameter values as placeholders; and the slots' XPaths."""
    used: dict[str, int] = {}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return _template_text(value, page, used, values)
        if isinstance(value, bool) or value is None:
            return value
        if isinstance(value, int | float):
            return {"$number": _template_text(str(value), page, used, values)}
        if isinstance(value, list):
            return [walk(item) for item in value]
        if isinstance(value, dict):
            return {key: walk(item) for key, item in value.items()}
        return value

    templated = walk(output)
    return templated, [xpath for xpath, _ in sorted(used.items(), key=lambda pair: pair[1])]


def render_output(output: Any, values: Sequence[str], element_texts: Sequence[str]) -> Any:
    """The templated output filled with this run's parameters and element texts."""
    if isinstance(output, str):
        return fill(output, values, element_texts)
    if isinstance(output, list):
        return [render_output(item, values, element_texts) for item in output]
    if isinstance(output, dict):
        if set(output) == {"$number"}:
            text = fill(str(output["$number"]), values, element_texts)
            number = _number(text)
            return number if number is not None else text
        return {key: render_output(item, values, element_texts) for key, item in output.items()}
    return output


def _number(text: str) -> int | float | None:
    cleaned = re.sub(r"[^0-9.\-]", "", text)
    try:
        return int(cleaned) if re.fullmatch(r"-?\d+", cleaned) else float(cleaned)
    except ValueError:
        return None
