"""Reading JSON bodies by hand so a missing, null or malformed body gets the answer the spec asks for."""

from __future__ import annotations

import json
import math
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

MAX_SAFE_INTEGER = 2**53
"""Integers a JSON number holds exactly everywhere (RFC 8259 §6: an IEEE double); beyond ±2^53 is refused."""
MAX_NUMBER_CHARS = 32
"""Longest number literal taken: far more than a double's 17 significant digits, and short enough that no
conversion does quadratic work (Python refuses ``int`` of more than 4,300 digits with a ValueError, a 500)."""
_BAD_NUMBER = "The request body holds a number JSON cannot carry exactly ({reason}): {literal}."


def _show(literal: str) -> str:
    return literal if len(literal) <= MAX_NUMBER_CHARS else f"{literal[:12]}… ({len(literal)} characters)"


def _refuse_number(literal: str, reason: str) -> MalformedRequest:
    return MalformedRequest(_BAD_NUMBER.format(reason=reason, literal=_show(literal)))


def _parse_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_NUMBER_CHARS:
        raise _refuse_number(literal, "too many digits")
    value = int(literal)
    if abs(value) > MAX_SAFE_INTEGER:
        raise _refuse_number(literal, "integers must lie within ±2^53")
    return value


def _parse_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise _refuse_number(literal, "too many digits")
    value = float(literal)
    if math.isinf(value):
        raise _refuse_number(literal, "it is too large")
    mantissa = literal.lower().split("e", 1)[0]
    if value == 0.0 and any(digit in mantissa for digit in "123456789"):
        raise _refuse_number(literal, "it is too small")
    return value


def _parse_constant(literal: str) -> float:
    raise MalformedRequest(f"The request body is not valid JSON ({literal} is not a JSON number).")


def loads(raw: bytes | str) -> Any:
    """``json.loads`` under this service's number rule: a number JSON cannot carry exactly is a 400."""
    return json.loads(raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)


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
        data = loads(raw)
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
