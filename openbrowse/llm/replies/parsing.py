"""Model replies as text → JSON, for every provider: the one place that finds JSON in what a model wrote.

The pieces (code fences, balanced ``{…}``/``[…]`` spans, parameter markup, double-serialised fields, replies split
over several objects) serve the Anthropic reply reader and repairs (``anthropic_reply``, ``anthropic_repair``),
the agent's shape coercion and outcome (``agent.replies.shapes``, ``agent.turns.outcome``) and the schema-in-prompt
structured output below; action lists that leaked out of place are found in ``action_leaks``.

Schema-in-prompt structured output is used by the OpenAI adapters (Responses and Chat Completions), which never
use provider-side structured output or tools (spec §10.6): the output schema rides in the system prompt and the
reply is parsed leniently:

1. strip Markdown code fences;
2. take the first *balanced* JSON object in the text that parses (strings and escapes respected), falling
   back to the whole text;
3. validate with the ``output_format`` model; if that fails, decode top-level fields the model
   double-serialised as JSON strings and validate again;
4. if the reply was split over several JSON objects (the narrative in one, the ``action`` list in the next),
   merge them (first non-empty value wins, ``action`` lists are concatenated) and validate that.

A reply that still does not validate raises :class:`UnusableOutputError` (a browser-use
``ModelProviderError``, so the agent's own error handling applies) chained to the validation error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from browser_use.llm.exceptions import ModelProviderError
from browser_use.llm.schema import SchemaOptimizer
from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```[ \t]*[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
_PARAMETER = re.compile(r'<parameter name="([^"]+)">(.*?)(?:</parameter>|</\1>)', re.DOTALL)


class UnusableOutputError(ModelProviderError):
    """The provider answered, but the reply cannot be used: not JSON, wrong shape, empty, or filtered.

    Status 400 (like browser-use's ``ModelOutputTruncatedError``) keeps it out of same-provider retry loops.
    ``failures.classify`` maps it to ``invalid_output``.
    """

    def __init__(self, message: str, model: str | None = None) -> None:
        super().__init__(message, status_code=400, model=model)


def schema_instruction(output_format: type[BaseModel]) -> str:
    """The block appended to the system prompt: reply with one JSON object matching this schema."""
    schema = SchemaOptimizer.create_optimized_json_schema(output_format)
    schema.pop("title", None)
    return (
        "\n\n# Reply format\n"
        "Reply with exactly one JSON object that conforms to the JSON schema below: no prose before or after it, "
        "no Markdown code fences, no tool calls. Every property listed under `required` must be present.\n"
        "<json_schema>\n"
        f"{json.dumps(schema, ensure_ascii=False, separators=(',', ':'))}\n"
        "</json_schema>"
    )


def strip_code_fences(text: str) -> str:
    """Return the body of the first fenced block if the text contains one, else the text unchanged."""
    match = _FENCE.search(text)
    return match.group(1).strip() if match else text.strip()


def balanced_spans(text: str, opener: str = "{") -> Iterator[str]:
    """Every balanced ``{…}`` (or ``[…]``) span in ``text``, left to right, honouring JSON strings and escapes."""
    closer = "}" if opener == "{" else "]"
    start = text.find(opener)
    while start != -1:
        depth = 0
        in_string = False
        escaped = False
        end = -1
        for index in range(start, len(text)):
            char = text[index]
            if in_string:
                if escaped:
                    escaped = False
                elif char == "\\":
                    escaped = True
                elif char == '"':
                    in_string = False
            elif char == '"':
                in_string = True
            elif char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth == 0:
                    end = index if char == closer else -1
                    break
        if end != -1:
            yield text[start : end + 1]
            start = text.find(opener, end + 1)
        else:
            start = text.find(opener, start + 1)


def first_balanced(text: str, opener: str = "{") -> str | None:
    """The first balanced ``{…}`` (or ``[…]``) span in ``text``, or ``None``."""
    return next(balanced_spans(text, opener), None)


def json_candidates(text: str) -> list[str]:
    """Candidate JSON texts in order of preference: balanced objects of the fence body, then of the whole text,
    then the bodies themselves."""
    bodies = list(dict.fromkeys((strip_code_fences(text), text.strip())))
    candidates = [span for body in bodies for span in balanced_spans(body)]
    return list(dict.fromkeys(c for c in [*candidates, *bodies] if c))


def extract_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object that can be recovered from a model reply, or ``None``."""
    for candidate in json_candidates(text):
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def first_json_value(text: str) -> Any:
    """The first JSON value recoverable from a text (fenced or not; any value, the whole text preferred to a
    ``{…}`` span, then a ``[…]`` span), else None."""
    body = strip_code_fences(text)
    for candidate in (body, text.strip(), first_balanced(body, "{"), first_balanced(body, "[")):
        if not candidate:
            continue
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def decode_serialized_fields(values: dict[str, Any]) -> dict[str, Any]:
    """Decode top-level string fields that hold JSON arrays/objects (a common double-serialisation slip).

    Raw control characters inside their strings are accepted (a model's literal newline in a value)."""
    repaired = dict(values)
    for key, value in values.items():
        if isinstance(value, str) and value.lstrip().startswith(("[", "{")):
            try:
                repaired[key] = json.loads(value, strict=False)
            except ValueError:
                continue
    return repaired


def markup_parameters(text: str) -> dict[str, Any]:
    """The ``<parameter name="…">…</parameter>`` values in ``text`` (a call written as markup), JSON decoded."""
    values = {name: value.strip() for name, value in _PARAMETER.findall(text)}
    return decode_serialized_fields(values) if values else {}


EMPTY_VALUES: tuple[object, ...] = (None, "", [], {})


def merge_replies(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Parts of one reply merged: ``action`` lists concatenated, every other field first-non-empty-wins."""
    merged: dict[str, Any] = {}
    for value in objects:
        for key, item in value.items():
            if key == "action" and isinstance(item, list) and isinstance(merged.get("action"), list):
                merged["action"] = [*merged["action"], *item]
            elif merged.get(key) in EMPTY_VALUES:
                merged[key] = item
    return merged


def merged_objects(text: str) -> dict[str, Any] | None:
    """All top-level JSON objects of a split reply merged into one, or ``None`` if there are fewer than two."""
    objects: list[dict[str, Any]] = []
    for span in balanced_spans(strip_code_fences(text)):
        try:
            value = json.loads(span)
        except ValueError:
            continue
        if isinstance(value, dict):
            objects.append(value)
    return merge_replies(objects) if len(objects) >= 2 else None


def parse_structured(text: str, output_format: type[T], *, model: str | None = None) -> T:
    """Tolerantly parse ``text`` into ``output_format``; :class:`UnusableOutputError` if impossible."""
    if not text.strip():
        raise UnusableOutputError("The model returned an empty reply where a JSON object was required.", model)
    value = extract_json_object(text)
    if value is None:
        preview = text.strip()[:200]
        raise UnusableOutputError(f"The model reply contains no JSON object: {preview!r}", model)
    try:
        return output_format.model_validate(value)
    except ValidationError as first_error:
        merged = merged_objects(text)
        for repaired in (decode_serialized_fields(value), merged):
            if repaired is None or repaired == value:
                continue
            try:
                return output_format.model_validate(repaired)
            except ValidationError:
                pass
        raise UnusableOutputError(
            f"The model reply does not match {output_format.__name__}: {first_error}", model
        ) from first_error
