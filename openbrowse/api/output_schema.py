"""Request-time check of an ``outputSchema``: refuse an invalid JSON Schema before a run is paid for.

The run validates answers with ``Draft202012Validator`` (``agent/turns/outcome.py``), so the schema is checked
against the 2020-12 metaschema, formats included (an invalid ``pattern`` regex is refused), and every
``$ref``/``$dynamicRef`` must point inside the schema itself and resolve there. Nothing is ever fetched: a
remote reference is refused without a network call. A *valid* schema that the answer store cannot convert
is not refused here; the run handles it in prose mode (spec §13.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

__all__ = ["output_schema_problem"]

_BASE_URI = "urn:openbrowse:output-schema"
_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef")
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_MAX_MESSAGE = 200
_META = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _location(path: Any) -> str:
    return "/" + "/".join(str(part) for part in path) if path else "the top level"


def _references(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, tuple[str, ...]]]:
    """Every ``$ref``/``$dynamicRef`` string in schema positions (not inside ``enum``, ``const``, … data)."""
    if isinstance(node, dict):
        for keyword in _REFERENCE_KEYWORDS:
            value = node.get(keyword)
            if isinstance(value, str):
                yield value, (*path, keyword)
        for key, child in node.items():
            if key not in _DATA_KEYWORDS:
                yield from _references(child, (*path, str(key)))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _references(child, (*path, str(index)))


def _reference_problem(schema: dict[str, Any]) -> str | None:
    resolver = Registry().with_resource(_BASE_URI, DRAFT202012.create_resource(schema)).resolver(_BASE_URI)
    for reference, path in _references(schema):
        where = _location(path)
        if not reference.startswith("#"):
            return _clip(f"outputSchema refers to {reference!r} at {where}; only references inside the schema work")
        try:
            resolver.lookup(reference)
        except Unresolvable:
            return _clip(f"outputSchema has a reference {reference!r} at {where} that does not resolve")
    return None


def output_schema_problem(schema: dict[str, Any]) -> str | None:
    """One sentence saying why ``schema`` is not a usable JSON Schema, or None when it is."""
    try:
        error = best_match(_META.iter_errors(schema))
        if error is not None:
            return _clip(
                f"outputSchema is not a valid JSON Schema at {_location(error.absolute_path)}: {error.message}"
            )
        return _reference_problem(schema)
    except RecursionError:
        return "outputSchema is nested too deeply"
