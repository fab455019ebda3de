"""Reading JSON bodies by hand so a missing, null or malformed body gets the answer the spec asks for."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError

from openbrowse.errors import MalformedRequest

ModelT = TypeVar("ModelT", bound=BaseModel)

MAX_BODY_DEPTH = 64
"""Deepest nesting of arrays/objects a body may have: far beyond any real request (an ``outputSchema`` uses two
levels per schema level), and shallow enough that no validator or error renderer hits Python's recursion limit."""
_TOO_DEEP = "The request body is nested too deeply."


def _nested_deeper_than(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


async def read_json(request: Request) -> Any:
    """The parsed body; ``None`` when the body is empty. Malformed JSON is a 400 with one sentence."""
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        data = json.loads(raw)
    except RecursionError as exc:
        raise MalformedRequest(_TOO_DEEP) from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else "it is not UTF-8"
        raise MalformedRequest(f"The request body is not valid JSON ({reason}).") from exc
    if _nested_deeper_than(data, MAX_BODY_DEPTH):
        raise MalformedRequest(_TOO_DEEP)
    return data


async def parse_body(request: Request, model: type[ModelT]) -> ModelT:
    """Validate the body against ``model``; a missing or ``null`` body counts as ``{}``."""
    data = await read_json(request)
    if data is None:
        data = {}
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = [{**error, "loc": ("body", *error["loc"])} for error in exc.errors()]
        raise RequestValidationError(errors) from exc
